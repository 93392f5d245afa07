import { z } from 'zod';
import { authorizeWithGrants } from '../auth/actor';
import type { Capability, CapabilityContext } from '../capabilities/capability';
import type { AgentTool } from './agent-loop';
import { failed } from './tool-errors';

/** JSON Schema of a tool's arguments, for the model (without `$schema`, which some providers refuse). */
function argumentSchema(args: z.ZodObject): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(args, { io: 'input' });
  return schema;
}

/**
 * The agent-run view of a capability: the tool a model calls during a run, checked against the
 * capability's access for the run's actor (a run does nothing its launcher could not), its
 * arguments validated, and a refusal or failure answered as the model's tool error.
 */
export function capabilityAgentTool(capability: Capability, ctx: CapabilityContext): AgentTool {
  const view = capability.agentTool!;
  const args = view.args ?? capability.input;
  return {
    spec: { name: view.name, description: view.description, inputSchema: argumentSchema(args) },
    displayName: view.displayName,
    label: view.label,
    run: async (raw) => {
      const parsed = args.safeParse(raw);
      if (!parsed.success) return { content: `Invalid input: ${z.prettifyError(parsed.error)}`, isError: true };
      try {
        await authorizeWithGrants(ctx.db, capability.access, ctx.actor, undefined);
        const input = view.input ? view.input(parsed.data) : parsed.data;
        return { content: view.answer(await capability.run(ctx, input)) };
      } catch (error) {
        return failed(error);
      }
    },
  };
}
