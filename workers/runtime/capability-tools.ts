import { z } from 'zod';
import { authorizeWithGrants } from '../auth/actor';
import type { Actor } from '../auth/actor';
import type { Capability, CapabilityContext } from '../capabilities/capability';
import type { Db, Env } from '../env';
import type { AgentTool } from './agent-loop';
import { failed } from './tool-errors';

/** Argument schemas already converted, by zod schema: every run offers the same few tools. */
const argumentSchemas = new WeakMap<z.ZodObject, Record<string, unknown>>();

/** JSON Schema of a tool's arguments, for the model (without `$schema`, which some providers refuse); built once per isolate. */
function argumentSchema(args: z.ZodObject): Record<string, unknown> {
  let schema = argumentSchemas.get(args);
  if (!schema) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(args, { io: 'input' });
    schema = rest;
    argumentSchemas.set(args, schema);
  }
  return schema;
}

/** What a capability runs with inside a run (an agent's turn or a workflow step): the run's actor, and no request; in a turn, the tool call's key. */
export const runContext = (db: Db, env: Env, actor: Actor, requestId: string, source: string, toolCallKey?: string): CapabilityContext => ({
  db,
  env,
  toolCallKey,
  // Read when a tool asks: a turn recorded before runs carried their actor has none.
  get actor() {
    return actor;
  },
  requestId,
  clientInterface: source,
  get requestOrigin() {
    return actor.origin;
  },
  // A run answers no request: none of its tools hands out a link to the service.
  get baseUrl(): string {
    throw new Error('A run has no request origin to link to');
  },
});

/**
 * The agent-run view of a capability: the tool a model calls during a run, checked against the
 * capability's access for the run's actor (a run does nothing its launcher could not), its
 * arguments validated, and a refusal or failure answered as the model's tool error.
 */
export function capabilityAgentTool(capability: Capability, contextOf: (call?: { id: string }) => Promise<CapabilityContext>): AgentTool {
  const view = capability.agentTool!;
  const args = view.args ?? capability.input;
  return {
    spec: { name: view.name, description: view.description, inputSchema: argumentSchema(args) },
    displayName: view.displayName,
    label: view.label,
    run: async (raw, call) => {
      const parsed = args.safeParse(raw);
      if (!parsed.success) return { content: `Invalid input: ${z.prettifyError(parsed.error)}`, isError: true };
      try {
        const ctx = await contextOf(call);
        await authorizeWithGrants(ctx.db, capability.access, ctx.actor, undefined);
        const input = view.input ? view.input(parsed.data) : parsed.data;
        return { content: view.answer(await capability.run(ctx, input)) };
      } catch (error) {
        return failed(error);
      }
    },
  };
}
