import type { byokKeys, secrets, SkillSecretBindingRow } from '../../schema';
import type { Actor } from '../auth/actor';
import type { RunConnector } from '../connectors/registry';

/**
 * The vocabulary of an execution: its events and what a turn needs to run. The execution's
 * object, the run tools and the services all speak it, so it depends on none of them.
 */

/** Spec 6.1: the event types of an execution stream. */
export const EXECUTION_EVENT_TYPES = [
  'session.status_running',
  'session.status_idle',
  'agent.message',
  'agent.tool_use',
  'agent.thinking',
  'agent.info',
  'execution.result',
  'span.model_request_end',
  'user.message',
  'user.interrupt',
] as const;
export type ExecutionEventType = (typeof EXECUTION_EVENT_TYPES)[number];

/**
 * Event payloads are JSON objects. Values are typed one level deep on purpose: RPC's
 * serializability check rejects `unknown` and cannot expand a recursive JSON type.
 */
export type JsonObject = { [key: string]: string | number | boolean | null | object };

export interface NewExecutionEvent {
  type: ExecutionEventType;
  payload: JsonObject;
}

export interface ExecutionEvent extends NewExecutionEvent {
  seq: number;
  at: number;
}

/**
 * What sized a turn's allowance, named when the turn stops at it (`limit_reached`): the run's
 * budget, the workspace's spend limits, the user's available balance, or the per-turn maximum.
 */
export type TurnBudgetLimit = 'budget' | 'spend_limit' | 'balance' | 'turn';

/** What a turn may spend (hundredths of a Ds), what sized it, and the run's whole budget when it has one. */
export interface TurnBudget {
  amount: number;
  limit: TurnBudgetLimit;
  run?: number;
}

/** The stop reason `session.status_idle` carries; at a budget or limit it says which, and how much the turn had (in Ds). */
export function stopReasonOf(type: RunStopReason, budget: TurnBudget) {
  if (type !== 'limit_reached') return { type };
  return { type, limit: budget.limit, allowance: budget.amount / 100, ...(budget.run === undefined ? {} : { budget: budget.run / 100 }) };
}

/** What a turn needs from D1, resolved by the route before the run starts. */
export interface TurnInput {
  executionId: number;
  /**
   * Who started the run, acting in it: the launching credential (its user, workspace, role and
   * scopes, and the request that started the run, for the audit trail of what the run changes).
   * The run's tools act as it, with its scopes and no more.
   */
  actor: Actor;
  /** The credit hold of this turn: its key, and the amount it may spend (hundredths of a Ds) with what sized it. */
  turnKey: string;
  budget: TurnBudget;
  skillName: string;
  /** The skill whose bound secrets the run's tools may use (looked up when the turn runs). */
  skillSlug: string;
  /** The channel the execution came through (`api`, `mcp`, `chat`, `workflow`). */
  source?: string;
  /** The run's connector (spec 4.3): the repository its tools read; the token is loaded from D1 when a tool runs. */
  connector?: RunConnector;
  /** The workflow run whose step started this execution: told when the turn ends, so the step need not wait for its next poll. */
  workflowRunId?: string;
  /** The chat thread this turn answers, set only when its caller may launch workflows (the turn then offers start_workflow). */
  threadId?: string;
  /** The prompt of the skill version the execution was created with. */
  system: string;
  text: string;
  /** The model to run instead of the provider's configured one (an eval's choice). */
  model?: string;
  /** The skill eval this run belongs to (`eval_<id>`): told when the turn ends, like a workflow run. */
  evalId?: string;
}

/**
 * The turn's model key and bound secrets as D1 holds them (encrypted), read by the route with
 * the rest of the turn's context so the object's first model request waits for no read of its
 * own. The object opens them for the run and never stores them; a resumed turn reads them again.
 */
export interface SealedTurnKeys {
  byok: typeof byokKeys.$inferSelect | null;
  secrets: (Pick<SkillSecretBindingRow, 'envVar' | 'origins'> & { secret: typeof secrets.$inferSelect })[];
}

/** Spec 6.1: why a run stopped. */
export type RunStopReason = 'end_turn' | 'interrupt' | 'limit_reached' | 'error';

/** How a turn's agent loop ended: what its object records and the lifecycle settles. */
export interface TurnEnding {
  stopReason: RunStopReason;
  /** The run's final answer, its secrets masked. */
  text: string;
  model: string;
  /** Whether the user's own key (BYOK) paid for the run instead of credits. */
  ownKey: boolean;
}

/** An execution's status, and its trace's, after a run: end_turn → completed, error → failed, interrupt and limit_reached → idle again (spec 3.8). */
export const statusAfterRun = (reason: RunStopReason) => (reason === 'end_turn' ? 'completed' : reason === 'error' ? 'failed' : 'idle');

/** The object's answer to `startTurn`: refused when it has seen the turn's key before or holds another turn. */
export type StartTurnAnswer = { accepted: true; events: ExecutionEvent[] } | { accepted: false };

/**
 * What the execution's object knows of a claimed turn: `live` (it holds the turn, which runs,
 * resumes or finishes there), `finished` (it ran and ended there) or `abandoned` (it never
 * started and never will: a late start is refused); `events` are what the answer appended.
 */
export type TurnOutcome = { state: 'live' | 'abandoned'; events: ExecutionEvent[] } | { state: 'finished' };

/**
 * The log without the text a resumed turn streamed again: a resume notice (`agent.info` with
 * `resumesAfter`) supersedes the `agent.message` events between that seq and itself, which the
 * cut-off model request had streamed before the restart. What a run answered is read from this.
 */
export function withoutSupersededText<Event extends Omit<ExecutionEvent, 'at'>>(events: Event[]): Event[] {
  const cut = events.flatMap((e) => (e.type === 'agent.info' && typeof e.payload.resumesAfter === 'number' ? [[e.payload.resumesAfter, e.seq] as const] : []));
  return cut.length === 0 ? events : events.filter((e) => e.type !== 'agent.message' || !cut.some(([after, at]) => e.seq > after && e.seq < at));
}

/** The answer of the last turn: the agent's message text after the last `session.status_running`. */
export function lastTurnText(events: ExecutionEvent[]): string {
  const start = events.map((e) => e.type).lastIndexOf('session.status_running');
  return withoutSupersededText(events.slice(start + 1))
    .filter((e) => e.type === 'agent.message')
    .flatMap((e) => (e.payload.content as { type: string; text?: string }[]).map((c) => c.text ?? ''))
    .join('');
}
