import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { executions, skillVersions, threads } from '../../schema';
import { runActor, type Actor } from '../auth/actor';
import type { Principal } from '../auth/principal';
import { hasScope } from '../auth/scopes';
import type { Env, ShardDb } from '../env';
import { AppError, conflict } from '../errors';
import { now } from '../lib/clock';
import { globalDbOf } from '../lib/db';
import { formatId, parseId } from '../lib/ids';
import { giveBackRateLimit, hitRateLimit, type RateDecision } from '../lib/rate-limit';
import { costInHundredths } from '../runtime/pricing';
import { recordChangeAfter } from './audit';
import { sealedByokKey } from './byok';
import { runConnectorFrom, runConnectorRow } from './connectors';
import { publish } from './control-plane';
import { availableBalance, holdAnswered, holdStatements, insufficientCredits, LOW_BALANCE, MIN_RUN_BALANCE, RUN_BUDGET, settledCharge } from './credits';
import { closeTurn, storeArtifact, turnClosed, type StoredArtifact } from './execution-runs';
import {
  CLAIM_GRACE_MS,
  claimOf,
  currentExecution,
  reconcileStale,
  release,
  sessionOf,
  statusOf,
  type ExecutionStatus,
  type Holder,
} from './execution-reconciler';
import { sealedRunSecrets } from './skill-secrets';
import { allowanceSql, spendRefusal } from './spend-limits';
import { traceRunStarted } from './traces';
import { emitWebhookEvent, outboxInsert, sendWebhookEvents, webhookEvent, type PendingWebhookEvent } from './webhook-events';
import {
  statusAfterRun,
  stopReasonOf,
  type ExecutionEvent,
  type RunStopReason,
  type NewExecutionEvent,
  type SealedTurnKeys,
  type StartTurnAnswer,
  type TurnBudgetLimit,
  type TurnEnding,
  type TurnInput,
  type TurnOutcome,
} from './execution-events';

/**
 * The run lifecycle, in one place: claim → hold → start, then the execution's object runs the
 * turn and asks this module to settle it, or the claim is released (execution-reconciler.ts).
 *
 * 1. **Claim**: one conditional UPDATE moves the execution to `working` under the workspace's
 *    MAX_ACTIVE_EXECUTIONS and writes the turn's key and the claim time.
 * 2. **Hold**: credits reserved under that key on the global ledger, once the claim (on the
 *    workspace's shard, with the turn's context read) took; the user's model key read with it.
 * 3. **Start**: the object takes the turn under that key (and refuses a key it has seen).
 * 4. **Settle**: once the turn's agent loop has ended, its output stored once, the charge
 *    settled against the hold on the ledger (once per hold), then the execution's record and the
 *    trace finished in one shard request that changes nothing once the execution has left the
 *    turn, both sent again if the object was cut off; then the log's closing events, and the
 *    workflow run whose step started the execution is told.
 *
 * After a crash at any point the stored state tells what happened: the object either holds the
 * turn (it runs, resumes or settles there) or has never seen its key. A step that fails is
 * compensated at once (the object is asked to withdraw the turn, the hold released, the
 * execution `idle` again); a claim left behind by a crash is settled by the reconciler once it
 * is older than CLAIM_GRACE_MS.
 */

type ExecutionRow = typeof executions.$inferSelect;

/** Run starts per minute per user (the number is ours; the spec asks for a limit). */
export const RUNS_PER_MINUTE = 20;
/**
 * Starts a turn of an idle execution with the user's `text` (and `system`, else the prompt of
 * the skill version it was created with); answers the turn's opening events. A run out of
 * budget, or a workspace at its spend limit, is answered 402. When the workspace's slots are
 * taken, stale claims are settled first and the start tried once more.
 */
export async function startTurn(db: ShardDb, env: Env, principal: Principal, execution: ExecutionRow, turn: TurnRequest): Promise<ExecutionEvent[]> {
  if (execution.status === 'working')
    throw new AppError('EXECUTION_RUNNING', 409, 'The execution is already running', { executionId: formatId('exec', execution.id) });
  if (execution.status !== 'idle') throw conflict(`The execution is ${execution.status}: rerun it instead`);
  const started = await startIfClaimed(db, env, principal, execution.id, turn);
  if (started) return started.events;
  const refusal = await spendRefusal(db, execution, turn.budget);
  if (refusal) {
    await announceLimitReached(db, env, principal, refusal);
    throw refusal;
  }
  const retried = (await reconcileStale(db, env, principal.workspaceId)) > 0 ? await startIfClaimed(db, env, principal, execution.id, turn) : null;
  if (retried) return retried.events;
  throw await slotsTaken(db, principal.workspaceId, execution.id);
}

/** `credits.limit_reached` for a start a workspace limit refused: once per limit and period (a run's own budget is not the workspace's). */
async function announceLimitReached(db: ShardDb, env: Env, principal: Principal, refusal: AppError) {
  const details = refusal.details as { limit?: string; limitAmount?: number; used?: number; resetsAt?: string } | undefined;
  if (details?.limit !== 'monthly' && details?.limit !== 'daily') return;
  await emitWebhookEvent(
    db,
    env,
    { workspaceId: principal.workspaceId, shard: principal.shard },
    `credits.limit_reached:${principal.workspaceId}:${details.limit}:${details.resetsAt}`,
    'credits.limit_reached',
    { limit: details.limit, limitAmount: details.limitAmount ?? null, used: details.used ?? null, resetsAt: details.resetsAt ?? null },
  );
}

/**
 * A `user.message` to an execution named by its public id. The start is tried at once, its
 * claim taking the row by id with nothing read first; when the claim does not take (the
 * execution is not the caller's, not idle, or the workspace's slots are taken) the ordinary
 * read and start answer why.
 */
export async function startTurnById(db: ShardDb, env: Env, principal: Principal, rawId: string, turn: TurnRequest) {
  const id = parseId('exec', rawId);
  const started = id === null ? null : await startIfClaimed(db, env, principal, id, turn);
  if (started) return started;
  const execution = await currentExecution(db, env, principal, rawId);
  return { execution, events: await startTurn(db, env, principal, execution, turn) };
}

const newTurnKey = (executionId: number) => `${formatId('exec', executionId)}:${crypto.randomUUID()}`;

/**
 * What a turn starts with: the user's text, a system prompt to use instead of the skill's, and
 * a new budget for the run (hundredths), replacing the one it has.
 */
export interface TurnRequest {
  text: string;
  system?: string;
  budget?: number;
  /** The model to run instead of the provider's configured one. */
  model?: string;
  /**
   * A run a skill eval starts (startEvalRun): the eval is the user's one request, its runs paced
   * by the workspace's concurrency, the job's budget and the user's credits, so they do not take
   * the user's RUNS_PER_MINUTE.
   */
  uncounted?: true;
}

const runsOf = (principal: Principal) => `runs:user:${principal.userId}`;

/** 429 RATE_LIMITED: the user started RUNS_PER_MINUTE runs in this minute. */
const tooManyRuns = (decision: RateDecision) =>
  new AppError('RATE_LIMITED', 429, `At most ${RUNS_PER_MINUTE} runs may start per minute per user`, {
    retryAfterSeconds: Math.ceil(decision.resetMs / 1000),
  });

/** Takes back a counted start that did not happen; a failure to is logged (the user's count stays one higher this minute). */
const giveBackRun = (env: Env, principal: Principal, count: RateDecision) =>
  giveBackRateLimit(env, runsOf(principal), count).catch((error: unknown) =>
    console.error(JSON.stringify({ level: 'error', message: 'a run count could not be given back', error: String(error) })),
  );

/**
 * Steps 1 to 3 and the audit trail of the start. The claim (with the turn's context) and then
 * the hold (with the user's model key) are sent while the run is counted against the user's
 * RUNS_PER_MINUTE (unless the turn is `uncounted`). Answers the claimed row and the turn's
 * opening events, or null when the claim did not take (its count given back). A refused count is
 * answered 429, once the claim and the hold (if they took) are given back.
 */
async function startIfClaimed(db: ShardDb, env: Env, principal: Principal, executionId: number, turn: TurnRequest) {
  const turnKey = newTurnKey(executionId);
  const holder = { id: executionId, userId: principal.userId };
  // Both land before anything is undone, so a release never runs ahead of a claim still being written.
  const [counted, batch] = await Promise.allSettled([
    turn.uncounted ? null : hitRateLimit(env, runsOf(principal), RUNS_PER_MINUTE, 60_000),
    claimHoldAndRead(db, env, principal, executionId, turnKey, turn.budget),
  ]);
  // null: not counted; undefined: the count failed.
  const count = counted.status === 'fulfilled' ? counted.value : undefined;
  const claim = batch.status === 'fulfilled' ? batch.value : undefined;
  if (claim === null) {
    if (count && !count.allowed) throw tooManyRuns(count);
    if (count) await giveBackRun(env, principal, count);
    return null;
  }
  if (!claim || count === undefined) {
    // The count or a D1 request failed (a batch is all or nothing, but whether it ran is unknown): undo whatever took.
    if (count?.allowed) await giveBackRun(env, principal, count);
    throw startUnavailable(
      await giveBackFailedStart(db, env, holder, turnKey, batch.status === 'rejected' ? batch.reason : counted.status === 'rejected' && counted.reason),
    );
  }
  if (count && !count.allowed) throw await refuse(db, env, holder, turnKey, () => tooManyRuns(count));
  const { execution, hold, context, keys } = claim;
  if (!hold.reserved) throw await refuse(db, env, holder, turnKey, () => insufficientCredits(globalDbOf(env), principal.userId));
  const budget = { amount: hold.amount, limit: allowanceLimit(execution, hold.amount), ...(execution.budget === null ? {} : { run: execution.budget }) };
  const events = await startAtObject(db, env, holder, turnKey, turnInput(principal, execution, context, { ...turn, turnKey, budget }), keys);
  await announceStart(db, principal, execution);
  return { execution, events };
}

/**
 * Step 1: one conditional UPDATE claims an idle execution of the caller's workspace, under the
 * workspace's MAX_ACTIVE_EXECUTIONS and with some allowance left under the run's budget (a new
 * `budget` replaces it) and the workspace's spend limits, for `turnKey`; answers the claimed
 * row, its turn allowance written, or none.
 */
const claimStatement = (db: ShardDb, env: Env, principal: Principal, executionId: number, turnKey: string, budget: number | undefined) => {
  const allowance = allowanceSql(principal.workspaceId, budget);
  return db
    .update(executions)
    .set({ status: 'working', turnKey, claimedAt: now(), turnAllowance: allowance, ...(budget === undefined ? {} : { budget }) })
    .where(
      and(
        eq(executions.id, executionId),
        eq(executions.workspaceId, principal.workspaceId),
        eq(executions.status, 'idle'),
        sql`(SELECT COUNT(*) FROM ${executions} WHERE ${executions.workspaceId} = ${principal.workspaceId} AND ${executions.status} = 'working') < ${Number(env.MAX_ACTIVE_EXECUTIONS) || 1}`,
        sql`${allowance} > 0`,
      ),
    )
    .returning();
};

/**
 * Steps 1 and 2: the claim with the turn's context and the skill's sealed secrets, in one shard
 * request (the context read only if this claim took); then, if it took, the hold (RUN_BUDGET, or
 * nothing on the user's own key, which pays for the run instead) with that key, in one request
 * to the global ledger. Answers null when the claim did not take. A hold that fails leaves the
 * claim to the caller's compensation (or, after a crash, to the reconciler).
 */
async function claimHoldAndRead(db: ShardDb, env: Env, principal: Principal, executionId: number, turnKey: string, budget: number | undefined) {
  const claimTook = and(eq(executions.id, executionId), eq(executions.turnKey, turnKey));
  /** A column of the claimed row (of one that also meets `also`), as a subquery: it reads nothing unless this claim took. */
  const claimed = <T extends SQLiteColumn>(column: T, also?: SQL) => db.select({ value: column }).from(executions).where(and(claimTook, also));
  const [[execution], version, connector, thread, secrets] = await db.batch([
    claimStatement(db, env, principal, executionId, turnKey, budget),
    db
      .select({ prompt: skillVersions.prompt })
      .from(skillVersions)
      .where(inArray(skillVersions.id, claimed(executions.skillVersionId)))
      .limit(1),
    runConnectorRow(db, executionId),
    // The thread a chat run answers, read only when the turn may launch workflows (`workflow:run`, the launch route's scope).
    db
      .select({ id: threads.id })
      .from(threads)
      .where(
        hasScope(principal.scopes, 'workflow:run')
          ? and(eq(threads.workspaceId, principal.workspaceId), inArray(threads.traceKey, claimed(executions.traceKey, eq(executions.source, 'chat'))))
          : sql`0`,
      )
      .limit(1),
    sealedRunSecrets(db, principal.workspaceId, claimed(executions.skillSlug)),
  ]);
  if (!execution) return null;
  const ledger = globalDbOf(env);
  const request = {
    userId: principal.userId,
    executionId: formatId('exec', executionId),
    turnKey,
    amount: execution.turnAllowance,
    minimum: MIN_RUN_BALANCE,
    waivedByOwnKey: true,
    workspaceId: principal.workspaceId,
  };
  const hold = await holdAnswered(ledger, request, await ledger.batch(holdStatements(ledger, request)));
  return {
    execution,
    hold,
    context: { prompt: version[0]?.prompt, connector: runConnectorFrom(connector[0]), threadId: thread[0]?.id },
    keys: { byok: (hold.reserved && hold.ownKey) || null, secrets },
  };
}

/**
 * What sized a turn's allowance of `amount` (hundredths): the run's budget left, the
 * workspace's spend limits, the user's available balance (the hold took less than the claim
 * allowed), or the per-turn RUN_BUDGET. Named by `session.status_idle` when the turn stops there.
 */
function allowanceLimit(execution: ExecutionRow, amount: number): TurnBudgetLimit {
  if (amount < execution.turnAllowance) return 'balance';
  if (execution.budget !== null && execution.budget - execution.cost === amount) return 'budget';
  return amount < RUN_BUDGET ? 'spend_limit' : 'turn';
}

/** 409 EXECUTION_RUNNING naming the execution that holds the slot, with when to try again (also as Retry-After). */
async function slotsTaken(db: ShardDb, workspaceId: string, executionId: number): Promise<AppError> {
  const [holder] = await db
    .select({ id: executions.id, claimedAt: executions.claimedAt })
    .from(executions)
    .where(and(eq(executions.workspaceId, workspaceId), eq(executions.status, 'working')))
    .orderBy(asc(executions.claimedAt))
    .limit(1);
  // A young claim may yet prove lost (the reconciler settles it after the grace period); an older one is a live run.
  const graceLeft = holder?.claimedAt == null ? 0 : holder.claimedAt + CLAIM_GRACE_MS - now();
  const retryAfterSeconds = Math.max(1, Math.ceil((graceLeft > 0 ? graceLeft : 5_000) / 1000));
  if (holder?.id === executionId)
    return new AppError('EXECUTION_RUNNING', 409, 'The execution is already running', { executionId: formatId('exec', executionId), retryAfterSeconds });
  const held = holder ? formatId('exec', holder.id) : null;
  return new AppError(
    'EXECUTION_RUNNING',
    409,
    held ? `${held} is running in this workspace; try again when it ends` : 'Another execution is running in this workspace',
    {
      ...(held ? { executionId: held } : {}),
      retryAfterSeconds,
    },
  );
}

/**
 * Step 3: the object takes the turn. A start that failed or went unanswered asks the object to
 * withdraw the turn; if the object had taken it after all, the run goes on and its opening
 * events are answered.
 */
async function startAtObject(db: ShardDb, env: Env, holder: Holder, turnKey: string, input: TurnInput, keys: SealedTurnKeys) {
  let answer: StartTurnAnswer;
  try {
    answer = await sessionOf(env, holder.id).startTurn(input, keys);
  } catch (error) {
    const taken = await compensate(db, env, holder, turnKey, error);
    if (taken) return taken;
    throw startUnavailable(taken);
  }
  if (answer.accepted) return answer.events;
  // The object refused the key: a cancel or the reconciler abandoned this turn before it arrived.
  throw await refuse(db, env, holder, turnKey, () => conflict('The run was stopped before it started'));
}

/**
 * Gives back the claim and hold of a start that was refused and answers the `refusal` (the run
 * limit, too few credits, a stopped turn); if they cannot be given back yet, or the refusal
 * cannot be worked out, the 503 of a failed start.
 */
async function refuse(db: ShardDb, env: Env, holder: Holder, turnKey: string, refusal: () => AppError | Promise<AppError>): Promise<AppError> {
  try {
    await release(db, env, holder, turnKey, 'idle');
    return await refusal();
  } catch (error) {
    return startUnavailable(await giveBackFailedStart(db, env, holder, turnKey, error));
  }
}

/**
 * Undoes a claim whose start reached the object and failed there or went unanswered: the object
 * withdraws the turn, then the claim is given back. Answers the turn's opening events if the
 * object had taken it after all, else as `giveBackFailedStart`.
 */
async function compensate(db: ShardDb, env: Env, holder: Holder, turnKey: string, cause: unknown): Promise<ExecutionEvent[] | null | undefined> {
  try {
    const outcome = await sessionOf(env, holder.id).withdraw(turnKey);
    if (outcome.state === 'live') return outcome.events;
  } catch (error) {
    logStartFailure(holder.id, cause);
    return notUndoneYet(holder.id, error);
  }
  return giveBackFailedStart(db, env, holder, turnKey, cause);
}

/**
 * Gives back the claim and hold of a start that failed (`cause`): null once undone, undefined
 * when that failed too (the reconciler finishes it after the grace period).
 */
async function giveBackFailedStart(db: ShardDb, env: Env, holder: Holder, turnKey: string, cause: unknown): Promise<null | undefined> {
  logStartFailure(holder.id, cause);
  try {
    await release(db, env, holder, turnKey, 'idle');
    return null;
  } catch (error) {
    return notUndoneYet(holder.id, error);
  }
}

const logStartFailure = (executionId: number, cause: unknown) =>
  console.error(JSON.stringify({ level: 'error', message: 'a run could not start', executionId, error: String(cause) }));

/** Logs why a failed start could not be undone yet (the reconciler finishes it) and answers undefined, as `giveBackFailedStart` does then. */
const notUndoneYet = (executionId: number, error: unknown): undefined => {
  console.error(JSON.stringify({ level: 'error', message: 'a failed run start could not be undone yet', executionId, error: String(error) }));
  return undefined;
};

/** 503 for a start that failed: undone (`null`), or not yet (the reconciler settles it after the grace period). */
const startUnavailable = (undone: null | undefined) =>
  new AppError(
    'SERVICE_UNAVAILABLE',
    503,
    undone === null
      ? 'The run could not start; nothing was charged. Try again.'
      : `The run could not be confirmed; if it did not start, its slot and credits are released within ${CLAIM_GRACE_MS / 1000} seconds.`,
  );

/** The turn's model key (the actor's own) and the skill's bound secrets, encrypted as stored: read at its start (and again by a resumed turn). */
export async function sealedTurnKeys(db: ShardDb, env: Env, actor: Actor, skillSlug: string): Promise<SealedTurnKeys> {
  const [byok, secrets] = await Promise.all([sealedByokKey(globalDbOf(env), actor.userId), sealedRunSecrets(db, actor.workspaceId, skillSlug)]);
  return { byok: byok[0] ?? null, secrets };
}

function turnInput(
  principal: Actor,
  execution: ExecutionRow,
  context: NonNullable<Awaited<ReturnType<typeof claimHoldAndRead>>>['context'],
  turn: { turnKey: string; budget: TurnInput['budget']; text: string; system?: string; model?: string },
): TurnInput {
  return {
    executionId: execution.id,
    actor: runActor(principal, { kind: 'execution', id: formatId('exec', execution.id) }),
    turnKey: turn.turnKey,
    budget: turn.budget,
    skillName: execution.skillName,
    skillSlug: execution.skillSlug,
    source: execution.source,
    ...(principal.run?.kind === 'workflow' ? { workflowRunId: principal.run.id } : {}),
    connector: context.connector,
    threadId: context.threadId,
    system: turn.system ?? context.prompt ?? '',
    text: turn.text,
    ...(turn.model === undefined ? {} : { model: turn.model }),
    ...(execution.evalId === null ? {} : { evalId: formatId('eval', execution.evalId) }),
  };
}

/** Records a run starting or being interrupted, once the object has taken it (the claim and the object are not one batch). */
const recordRun = (db: ShardDb, principal: Principal, execution: ExecutionRow, action: 'execution.started' | 'execution.interrupted') =>
  recordChangeAfter(db, principal, {
    action,
    resourceType: 'execution',
    resourceId: formatId('exec', execution.id),
    metadata: { skill: execution.skillSlug },
    activity: `A run of ${execution.skillName || execution.skillSlug} ${action === 'execution.started' ? 'started' : 'was interrupted'}`,
  });

/** Logs a failure of a started run's bookkeeping: the run is under way whatever happens to it. */
const logBookkeeping = (executionId: number) => (error: unknown) =>
  console.error(JSON.stringify({ level: 'error', message: 'bookkeeping of a started run failed', executionId, error: String(error) }));

/**
 * The audit trail of a start that the object took, before the start is answered, so a later
 * interrupt is recorded after it. A failure is logged, never answered as the run's failure
 * (which would make the caller undo a run that goes on). The trace and the control plane are
 * told by the object itself once its first model request is under way (`announceRunStarted`).
 */
const announceStart = (db: ShardDb, principal: Principal, execution: ExecutionRow) =>
  recordRun(db, principal, execution, 'execution.started').catch(logBookkeeping(execution.id));

/**
 * The rest of a start's bookkeeping, which the first model request need not wait for: the
 * trace's status and the control plane's `execution-started` (`seq`: the turn's
 * `session.status_running`), from which the control plane relays the run's own stream.
 */
export async function announceRunStarted(db: ShardDb, env: Env, turn: TurnInput, seq: number) {
  await Promise.all([
    traceRunStarted(db, turn.executionId).catch(logBookkeeping(turn.executionId)),
    publish(env, turn.actor.workspaceId, [{ type: 'execution-started', executionId: formatId('exec', turn.executionId), source: turn.source ?? 'api', seq }]),
  ]);
}

/** How long cancel waits for a live turn to stop, so its answer can say how the run ended. */
export const CANCEL_WAIT_MS = 5_000;

/**
 * The user's interrupt of a working execution. A live turn is told to stop (and, with
 * `waitMs`, waited for); a claimed turn the object never took is abandoned at once, its hold
 * released and the execution `idle` again. Answers what the object found and the status after.
 */
export async function interruptTurn(
  db: ShardDb,
  env: Env,
  principal: Principal | null,
  execution: ExecutionRow,
  waitMs = 0,
): Promise<{ outcome: TurnOutcome; status: ExecutionStatus }> {
  const { turnKey } = claimOf(execution);
  const outcome = await sessionOf(env, execution.id).interrupt(turnKey, waitMs);
  if (outcome.state === 'abandoned') await release(db, env, { id: execution.id }, turnKey, 'idle');
  if (principal && outcome.state !== 'finished') await recordRun(db, principal, execution, 'execution.interrupted');
  return { outcome, status: await statusOf(db, execution.id) };
}

/**
 * A turn whose agent loop has ended, as its object recorded it: how it ended, the tokens it
 * used, when it started and, once its closing batch may have been sent, the output that batch
 * carries.
 */
export interface EndedTurn {
  ended: TurnEnding;
  usage: { inputTokens: number; outputTokens: number };
  startedAt: number;
  closing?: { output: StoredArtifact | null };
}

/** What settling asks of the turn's object. */
export interface SettleHooks {
  /** Records, durably before the closing batch leaves, that it may land and the output it carries. */
  closing(output: StoredArtifact | null): void;
  /** Ends the turn's log with its closing events (`execution.result`, then `session.status_idle`). */
  close(events: NewExecutionEvent[]): void;
  /** Keeps work that follows the turn's end going after settling answers. */
  waitUntil(work: Promise<unknown>): void;
}

/**
 * Step 4: settles an ended turn. The closing batch (`closeOnce`) lands before the idle event: a
 * client that acts on `session.status_idle` must find the execution idle and its output listed.
 * The result shows what was charged; a workflow step that started the execution goes on now
 * rather than at its next poll (which stays the fallback).
 */
export async function settleTurn(db: ShardDb, env: Env, turn: TurnInput, end: EndedTurn, hooks: SettleHooks): Promise<void> {
  const { charged, available } = await closeOnce(db, env, turn, end, hooks);
  const { ended, usage } = end;
  const announced = await recordTurnEvents(db, env, turn, ended.stopReason, charged, available);
  hooks.close([
    {
      type: 'execution.result',
      payload: {
        summary: ended.text.slice(0, 500),
        cost: charged / 100,
        tokenUsage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      },
    },
    { type: 'session.status_idle', payload: { stop_reason: stopReasonOf(ended.stopReason, turn.budget) } },
  ]);
  if (turn.workflowRunId) hooks.waitUntil(tellWorkflowRun(env, turn.workflowRunId, turn.executionId));
  if (turn.evalId) hooks.waitUntil(tellSkillEval(env, turn.evalId, turn.executionId));
  hooks.waitUntil(sendWebhookEvents(db, env, turn.actor.shard, announced));
}

/** The webhook event of each way a turn ends (an interrupt has none: the caller asked for it). */
const TURN_EVENTS = { end_turn: 'execution.completed', error: 'execution.failed', limit_reached: 'execution.limit_reached' } as const;

/**
 * The webhook events of a settled turn, written to the outbox before the turn is closed (a
 * settlement cut off before then is made again, and writes them again): how it ended, and
 * `credits.low` when this charge took the launcher's available balance under LOW_BALANCE. Keyed
 * by the turn, so a settlement made twice announces nothing twice. A failed write is logged,
 * never the turn's failure; the events are still sent.
 */
async function recordTurnEvents(
  db: ShardDb,
  env: Env,
  turn: TurnInput,
  reason: RunStopReason,
  charged: number,
  availableAfter: number | undefined,
): Promise<PendingWebhookEvent[]> {
  const workspaceId = turn.actor.workspaceId;
  const executionId = formatId('exec', turn.executionId);
  const events: PendingWebhookEvent[] = [];
  if (reason !== 'interrupt') {
    events.push(
      await webhookEvent(workspaceId, `execution:${executionId}:${turn.turnKey}`, TURN_EVENTS[reason], {
        executionId,
        status: statusAfterRun(reason),
        stopReason: reason,
        cost: charged / 100,
        workflowRunId: turn.workflowRunId ?? null,
      }),
    );
  }
  if (charged > 0) {
    try {
      // The settlement answers the balance it left; a closing made before (a replay) reads it.
      const available = availableAfter ?? (await availableBalance(globalDbOf(env), turn.actor.userId));
      if (available < LOW_BALANCE && available + charged >= LOW_BALANCE) {
        events.push(
          await webhookEvent(workspaceId, `credits.low:${turn.turnKey}`, 'credits.low', {
            userId: turn.actor.userId,
            availableBalance: available / 100,
            threshold: LOW_BALANCE / 100,
            executionId,
          }),
        );
      }
    } catch (error) {
      console.error(JSON.stringify({ level: 'warn', message: 'credits.low not checked', executionId, error: String(error) }));
    }
  }
  const [first, ...rest] = events.map((event) => outboxInsert(db, event));
  try {
    if (first) await db.batch([first, ...rest]);
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', message: 'webhook events not recorded', executionId, error: String(error) }));
  }
  return events;
}

/**
 * output.md to R2, then its row, the settlement, the execution's record and the trace in one D1
 * request, sent once. A turn cut off while its batch was under way asks whether it landed (it
 * lands whole or not at all), and if not sends it again with the same output. Answers what was
 * charged (the cost capped at the balance) and, when this closing settled it, what the user has
 * available after.
 */
async function closeOnce(
  db: ShardDb,
  env: Env,
  turn: TurnInput,
  { ended, usage, startedAt, closing }: EndedTurn,
  hooks: SettleHooks,
): Promise<{ charged: number; available: number | undefined }> {
  const { stopReason, text, model, ownKey } = ended;
  const settlement = {
    userId: turn.actor.userId,
    turnKey: turn.turnKey,
    executionId: formatId('exec', turn.executionId),
    cost: ownKey ? 0 : costInHundredths(model, usage.inputTokens, usage.outputTokens),
    description: `${turn.skillName}: ${usage.inputTokens} input and ${usage.outputTokens} output tokens (${model}${ownKey ? ', on your own key' : ''})`,
  };
  const ledger = globalDbOf(env);
  // A closing that may have been sent before a cut-off: if its shard record landed, only what was charged is left to learn.
  if (closing && (await turnClosed(db, turn.executionId, turn.turnKey)))
    return { charged: (await settledCharge(ledger, settlement)) ?? 0, available: undefined };
  const output = closing ? closing.output : stopReason === 'end_turn' ? await storeArtifact(env.BUCKET, turn, 'output.md', text) : null;
  // Recorded before the batch leaves: the object's output gate holds the D1 request until then.
  hooks.closing(output);
  return closeTurn(db, ledger, {
    executionId: turn.executionId,
    turnKey: turn.turnKey,
    reason: stopReason,
    settlement,
    totals: { ...usage, elapsedMs: now() - startedAt },
    output,
  });
}

/** The eval job goes on with its next run now rather than at its next poll (which stays the fallback). */
async function tellSkillEval(env: Env, evalId: string, executionId: number) {
  try {
    await env.SKILL_EVAL.getByName(evalId).executionEnded(formatId('exec', executionId));
  } catch (error) {
    console.error(JSON.stringify({ level: 'warn', message: 'the skill eval was not told its run ended', evalId, executionId, error: String(error) }));
  }
}

async function tellWorkflowRun(env: Env, runId: string, executionId: number) {
  try {
    await env.WORKFLOW_RUN.getByName(runId).executionEnded(formatId('exec', executionId));
  } catch (error) {
    console.error(JSON.stringify({ level: 'warn', message: 'the workflow run was not told its step ended', runId, executionId, error: String(error) }));
  }
}
