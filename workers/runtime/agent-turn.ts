import type { ShardDb, Env } from '../env';
import { now } from '../lib/clock';
import { openByokKey } from '../services/byok';
import type { NewExecutionEvent, SealedTurnKeys, TurnEnding, TurnInput } from '../services/execution-events';
import { sealedTurnKeys } from '../services/execution-lifecycle';
import { openRunSecrets, type RunSecret } from '../services/skill-secrets';
import { runAgentLoop, type TokenUsage, type ToolRound } from './agent-loop';
import { connectorRunTools } from './connector-tools';
import { actingForLauncher } from './launcher-tools';
import { costInHundredths, priceOf } from './pricing';
import type { ModelMessage, ModelProvider } from './provider';
import { LOCAL_PROVIDER_NOTICE, selectProvider } from './providers/index';
import { eventRedactor, redactSecrets, secretsNotice } from './run-secrets';
import { runTools } from './tools';
import { threadRunTools } from './workflow-tools';

/** Spec 3.1: executions run up to 65 minutes; past that the run ends with stop reason `error`. */
const MAX_RUN_MS = 65 * 60_000;
const MAX_MODEL_REQUESTS = 8;
const MAX_OUTPUT_TOKENS = 4096;

/** Where a turn stands after a model request and its tool calls, `usage` being the turn's total: what a turn cut off later goes on from. */
export interface TurnProgress {
  messages: ModelMessage[];
  usage: TokenUsage;
  /** A round of tool calls under way: a resumed turn makes the calls it has no result for, then asks the model. */
  round?: ToolRound;
}

/** A turn to run: new, or resumed from its last progress after an eviction. */
export interface AgentTurn {
  input: TurnInput;
  startedAt: number;
  /** The conversation of the execution's earlier turns. */
  history: ModelMessage[];
  /** The turn's keys as its start read them (opened here, never stored); read again when absent. */
  sealed?: SealedTurnKeys;
  resumed?: TurnProgress;
}

/** What the turn asks of the object that runs it and keeps its log. */
export interface TurnHooks {
  /** Appends events to the turn's log now. */
  append(events: NewExecutionEvent[]): void;
  /** The model's events as they stream (text deltas may be held briefly to share a write). */
  emit(events: NewExecutionEvent[]): void;
  /** Stores the turn's progress, durably, before it goes on. */
  checkpoint(progress: TurnProgress): void;
  /** Whether the user has interrupted the turn (asked between model events). */
  interrupted(): boolean;
  /** The turn's first model request is under way. */
  underway(): void;
}

/** How a turn ended, its conversation and total usage; `completed` when its loop ran to an end (its conversation is then kept for later turns). */
export interface TurnResult {
  ended: TurnEnding;
  messages: ModelMessage[];
  usage: TokenUsage;
  completed: boolean;
}

/**
 * Runs one turn of the agent: the model provider (the user's own key, BYOK, when they stored
 * one) and the skill's bound secrets, the run's tools (each call made for the launcher as it is
 * then), and the agent loop until the model ends its turn or something stops it: the user's
 * interrupt, the launcher revoked, the 65-minute cap or the turn's budget. Never throws: a
 * configuration error or a failed loop ends the turn with stop reason `error`.
 */
export async function runAgentTurn(db: ShardDb, env: Env, turn: AgentTurn, hooks: TurnHooks): Promise<TurnResult> {
  const { input, startedAt, resumed } = turn;
  const { provider, ownKey, secrets } = await equip(db, env, turn, hooks);
  const model = provider?.model ?? 'none';
  // Priced once: the budget check asks at every model event.
  const price = priceOf(model);
  const before = resumed?.usage ?? { inputTokens: 0, outputTokens: 0 };
  const total = (spent: TokenUsage): TokenUsage => ({
    inputTokens: before.inputTokens + spent.inputTokens,
    outputTokens: before.outputTokens + spent.outputTokens,
  });
  const costOf = (spent: TokenUsage) => (ownKey ? 0 : costInHundredths(price, spent.inputTokens, spent.outputTokens));
  const redactor = eventRedactor<NewExecutionEvent>(secrets);
  // Each tool call acts for the launcher as it is then; one revoked since the turn began ends the turn.
  const acting = actingForLauncher(env, input, (current) => [
    ...runTools(db, env, current, secrets),
    ...connectorRunTools(db, env, current),
    ...threadRunTools(db, env, current),
  ]);
  const loop = provider
    ? runAgentLoop({
        provider,
        system: input.system + secretsNotice(secrets),
        messages: resumed?.messages ?? [...turn.history, { role: 'user', content: [{ type: 'text', text: input.text }] }],
        tools: acting.tools,
        maxTokens: MAX_OUTPUT_TOKENS,
        maxTurns: MAX_MODEL_REQUESTS,
        emit: (events) => hooks.emit(redactor.push(events)),
        round: resumed?.round,
        checkpoint: ({ messages, usage, round }) => hooks.checkpoint({ messages, usage: total(usage), round }),
        shouldStop: (spent) =>
          hooks.interrupted()
            ? 'interrupt'
            : acting.refusal() !== undefined || now() - startedAt > MAX_RUN_MS
              ? 'error'
              : costOf(total(spent)) > input.budget.amount
                ? 'limit_reached'
                : null,
      })
    : Promise.reject(new Error('no model provider'));
  // The loop runs to its first await at once: the first model request is under way.
  hooks.underway();
  let result: TurnResult = { ended: { stopReason: 'error', text: '', model, ownKey }, messages: resumed?.messages ?? [], usage: before, completed: false };
  try {
    const ran = await loop;
    result = {
      ended: { stopReason: ran.stopReason, text: redactSecrets(ran.text, secrets), model, ownKey },
      messages: ran.messages,
      usage: total(ran.usage),
      completed: true,
    };
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', executionId: input.executionId, error: String(error) }));
  }
  hooks.append(redactor.flush());
  const refused = acting.refusal();
  if (refused !== undefined) hooks.append([{ type: 'agent.info', payload: { message: refused } }]);
  return result;
}

/**
 * The turn's provider and bound secrets, announced in `agent.info`. A configuration error is
 * announced instead and leaves no provider, so the turn ends visibly (stop reason error)
 * instead of staying working.
 */
async function equip(
  db: ShardDb,
  env: Env,
  turn: AgentTurn,
  hooks: TurnHooks,
): Promise<{ provider: ModelProvider | null; ownKey: boolean; secrets: RunSecret[] }> {
  try {
    const keys = turn.sealed ?? (await sealedTurnKeys(db, env, turn.input.actor, turn.input.skillSlug));
    const [byok, secrets] = await Promise.all([openByokKey(env.ENCRYPTION_KEY, keys.byok), openRunSecrets(env.ENCRYPTION_KEY, keys.secrets)]);
    const provider = selectProvider(env, byok, turn.input.model);
    const ownKey = byok !== null;
    const about = { provider: provider.name, model: provider.model, ...(ownKey ? { byok: true } : {}) };
    hooks.append([{ type: 'agent.info', payload: provider.name === 'local' ? { ...about, message: LOCAL_PROVIDER_NOTICE } : about }]);
    return { provider, ownKey, secrets };
  } catch (error) {
    hooks.append([{ type: 'agent.info', payload: { message: error instanceof Error ? error.message : 'No model provider is configured' } }]);
    return { provider: null, ownKey: false, secrets: [] };
  }
}
