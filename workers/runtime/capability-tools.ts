import type { z } from 'zod';
import { authorizeWithGrants } from '../auth/actor';
import type { Actor } from '../auth/actor';
import { CAPABILITIES } from '../capabilities';
import type { AgentToolViewFor, Capability, CapabilityContext, RunBindings, RunOffer } from '../capabilities/capability';
import type { Env, ShardDb } from '../env';
import { globalDbOf } from '../lib/db';
import type { TurnInput } from '../services/execution-events';
import { toolCallKey } from '../services/run-tool-calls';
import type { AgentTool } from './agent-loop';
import { argumentSchema, checkArguments } from './tool-arguments';
import { failed } from './tool-errors';

/** What a capability runs with inside a run (an agent's turn or a workflow step): the run's actor, and no request; in a turn, the tool call's key. */
export const runContext = (db: ShardDb, env: Env, actor: Actor, requestId: string, source: string, toolCallKey?: string): CapabilityContext => ({
  db,
  globalDb: globalDbOf(env),
  env,
  toolCallKey,
  actor,
  requestId,
  clientInterface: source,
  requestOrigin: actor.origin,
  // A run answers no request: none of its tools hands out a link to the service.
  get baseUrl(): string {
    throw new Error('A run has no request origin to link to');
  },
});

/** What a turn binds for the tools offered to each kind of run, or undefined when the turn is not of that kind. */
const BINDINGS: { [Offer in RunOffer]: (turn: TurnInput) => RunBindings[Offer] | undefined } = {
  all: () => ({}),
  thread: (turn) => (turn.threadId === undefined ? undefined : { threadId: turn.threadId }),
  repository: (turn) => (turn.connector?.type === 'github' ? { repo: turn.connector.repo } : undefined),
};

/**
 * The agent-run view of a capability: the tool a model calls during a run, checked against the
 * capability's access for the run's actor (a run does nothing its launcher could not), its
 * arguments validated, and a refusal or failure answered as the model's tool error.
 */
function capabilityAgentTool(capability: Capability, run: RunBindings[RunOffer], contextOf: (call?: { id: string }) => Promise<CapabilityContext>): AgentTool {
  // The binding was made for the view's own kind of run (BINDINGS[view.offeredTo]).
  const view = capability.agentTool as AgentToolViewFor<z.output<z.ZodObject>, unknown, RunOffer>;
  const args = view.args ?? capability.input;
  return {
    spec: {
      name: view.name,
      description: typeof view.description === 'string' ? view.description : view.description(run),
      inputSchema: argumentSchema(args),
    },
    displayName: view.displayName,
    label: (raw) => view.label(raw, run),
    run: async (raw, call) => {
      const checked = checkArguments(args, raw, view.invalid);
      if (!checked.ok) return checked.refusal;
      try {
        const ctx = await contextOf(call);
        await authorizeWithGrants(ctx.globalDb, capability.access, ctx.actor, undefined);
        const input = view.input ? view.input(checked.args, run) : checked.args;
        return { content: view.answer(await capability.run(ctx, input)) };
      } catch (error) {
        return failed(error);
      }
    },
  };
}

/**
 * The capabilities' agent-run views offered to a kind of run (`offer`), for this turn: none when
 * the turn is not of that kind. Each acts as the turn's actor, in a context keyed by the tool call.
 */
export function capabilityRunTools(db: ShardDb, env: Env, turn: TurnInput, offer: RunOffer): AgentTool[] {
  const run = BINDINGS[offer](turn);
  if (!run) return [];
  const contextOf = async (call?: { id: string }) =>
    runContext(db, env, turn.actor, turn.actor.origin.requestId, turn.source ?? 'api', await toolCallKey(turn.turnKey, call));
  return CAPABILITIES.filter((capability) => capability.agentTool?.offeredTo === offer).map((capability) => capabilityAgentTool(capability, run, contextOf));
}
