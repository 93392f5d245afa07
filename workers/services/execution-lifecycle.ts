import { and, asc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { BatchResponse } from 'drizzle-orm/batch';
import { executions, skillVersions, threads } from '../../schema';
import { runActor, type Actor } from '../auth/actor';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import { hasScope } from '../auth/scopes';
import type { Db, Env } from '../env';
import { AppError, conflict } from '../errors';
import { now } from '../lib/clock';
import { formatId, parseId } from '../lib/ids';
import { hitRateLimit } from '../lib/rate-limit';
import { recordChangeAfter } from './audit';
import { byokKeyExists, sealedByokKey } from './byok';
import { runConnectorFrom, runConnectorRow } from './connectors';
import { publish } from './control-plane';
import { insufficientCredits, MIN_RUN_BALANCE, releaseReservation, reserveCreditsWith, RUN_BUDGET } from './credits';
import { sealedRunSecrets } from './skill-secrets';
import { requireOwned } from './tenant';
import { traceRunFinished, traceRunStarted } from './traces';
import type { ExecutionEvent, SealedTurnKeys, TurnInput, TurnOutcome } from './execution-events';

/**
 * The run lifecycle, in one place: claim → hold → start, then the execution's object runs the
 * turn and settles it (output, charge, D1 record), or the claim is released.
 *
 * 1. **Claim**: one conditional UPDATE moves the execution to `working` under the workspace's
 *    MAX_ACTIVE_EXECUTIONS and writes the turn's key and the claim time.
 * 2. **Hold**: credits reserved under that key.
 * 3. **Start**: the object takes the turn under that key (and refuses a key it has seen).
 *
 * After a crash at any point the stored state tells what happened: the object either holds the
 * turn (it runs, resumes or finishes there) or has never seen its key. A step that fails is
 * compensated at once (the object is asked to withdraw the turn, the hold released, the
 * execution `idle` again); a claim left behind by a crash is settled by the reconciler once it
 * is older than CLAIM_GRACE_MS: on the hourly sweep, on any read of the execution (status,
 * stream URL, cancel) and when a run finds the workspace's slots taken. A lost turn ends
 * `failed`, its hold released, with `session.status_idle` (error) in its log so streams end.
 */

type ExecutionRow = typeof executions.$inferSelect;
type ExecutionStatus = ExecutionRow['status'];

/** Run starts per minute per user (the number is ours; the spec asks for a limit). */
export const RUNS_PER_MINUTE = 20;
/**
 * How long a claim may wait for its turn to reach the object before the reconciler may decide
 * it never will: far longer than claim → hold → start takes, short enough that a workspace a
 * crash left locked runs again soon.
 */
export const CLAIM_GRACE_MS = 15_000;
/** How long cancel waits for a live turn to stop, so its answer can say how the run ended. */
export const CANCEL_WAIT_MS = 5_000;
/** Executions one sweep settles at most, per batch and in all. */
const SWEEP_BATCH = 50;
const SWEEP_MAX = 500;

const LOST_NOTICE =
  'The run was lost before it started (the service restarted, or the run could not reach its session). Nothing was charged and its credits were released; start it again.';

const sessionOf = (env: Env, executionId: number) => env.EXECUTION_SESSION.getByName(formatId('exec', executionId));

/**
 * Starts a turn of an idle execution with the user's `text` (and `system`, else the prompt of
 * the skill version it was created with); answers the turn's opening events.
 */
export async function startTurn(db: Db, env: Env, principal: Principal, execution: ExecutionRow, text: string, system?: string): Promise<ExecutionEvent[]> {
  if (execution.status === 'working')
    throw new AppError('EXECUTION_RUNNING', 409, 'The execution is already running', { executionId: formatId('exec', execution.id) });
  if (execution.status !== 'idle') throw conflict(`The execution is ${execution.status}: rerun it instead`);
  await countRunStart(env, principal);
  const turnKey = newTurnKey(execution.id);
  await claim(db, env, principal, execution.id, turnKey);
  return startClaimed(db, env, principal, { ...execution, status: 'working', turnKey }, { text, system, count: false });
}

/**
 * A `user.message` to an execution named by its public id. The claim comes first and reads the
 * row as it takes it (one D1 request where a read and then a claim were two); the run is
 * counted against the per-user limit after it, while the credits are held and the turn's input
 * read, and a refused one gives the claim and the hold back. When the claim does not take (the
 * execution is not the caller's, not idle, or the workspace's slots are taken) the ordinary
 * read and start answer why.
 */
export async function startTurnById(db: Db, env: Env, principal: Principal, rawId: string, text: string) {
  const id = parseId('exec', rawId);
  if (id !== null) {
    const turnKey = newTurnKey(id);
    const [claimed] = await claimAttempt(db, env, principal, id, turnKey);
    if (claimed) return { execution: claimed, events: await startClaimed(db, env, principal, { ...claimed, turnKey }, { text, count: true }) };
  }
  const execution = await currentExecution(db, env, principal, rawId);
  return { execution, events: await startTurn(db, env, principal, execution, text) };
}

const newTurnKey = (executionId: number) => `${formatId('exec', executionId)}:${crypto.randomUUID()}`;

/** Counts a run start against the user's RUNS_PER_MINUTE; 429 RATE_LIMITED past it. */
async function countRunStart(env: Env, principal: Principal) {
  const decision = await hitRateLimit(env, `runs:user:${principal.userId}`, RUNS_PER_MINUTE, 60_000);
  if (decision.allowed) return;
  const retryAfterSeconds = Math.ceil(decision.resetMs / 1000);
  throw new AppError('RATE_LIMITED', 429, `At most ${RUNS_PER_MINUTE} runs may start per minute per user`, { retryAfterSeconds });
}

/** What a claimed turn starts with: the user's text, a system prompt to use instead of the skill's, and whether the run is still to be counted. */
interface TurnRequest {
  text: string;
  system?: string;
  count: boolean;
}

/** Steps 2 and 3 of a claimed turn, and the audit trail of its start. */
async function startClaimed(db: Db, env: Env, principal: Principal, claimed: ExecutionRow & { turnKey: string }, turn: TurnRequest) {
  const events = await holdAndStart(db, env, principal, claimed, turn);
  await announceStart(db, principal, claimed);
  return events;
}

/**
 * One claim of an idle execution of the caller's workspace, under the workspace's
 * MAX_ACTIVE_EXECUTIONS: the claimed row, or none.
 */
const claimAttempt = (db: Db, env: Env, principal: Principal, executionId: number, turnKey: string) =>
  db
    .update(executions)
    .set({ status: 'working', turnKey, claimedAt: now() })
    .where(
      and(
        eq(executions.id, executionId),
        eq(executions.workspaceId, principal.workspaceId),
        eq(executions.status, 'idle'),
        sql`(SELECT COUNT(*) FROM ${executions} WHERE ${executions.workspaceId} = ${principal.workspaceId} AND ${executions.status} = 'working') < ${Number(env.MAX_ACTIVE_EXECUTIONS) || 1}`,
      ),
    )
    .returning();

/** Step 1: the claim; when the workspace's slots are taken, stale claims are settled first and the claim tried once more. */
async function claim(db: Db, env: Env, principal: Principal, executionId: number, turnKey: string) {
  const attempt = () => claimAttempt(db, env, principal, executionId, turnKey);
  if ((await attempt()).length > 0) return;
  if ((await reconcileStale(db, env, principal.workspaceId)) > 0 && (await attempt()).length > 0) return;
  throw await slotsTaken(db, principal.workspaceId, executionId);
}

/** 409 EXECUTION_RUNNING naming the execution that holds the slot, with when to try again (also as Retry-After). */
async function slotsTaken(db: Db, workspaceId: string, executionId: number): Promise<AppError> {
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
 * Steps 2 and 3, each compensated if it fails: the hold, the turn's input, and the object's
 * start (with the run's count, when `turn.count` says it is still to be made). A start that
 * failed or went unanswered asks the object to withdraw the turn; if the object had taken it
 * after all, the run goes on and its opening events are answered. If even that question fails,
 * the claim is left to the reconciler (which settles it after the grace period) and the caller
 * is told so.
 */
async function holdAndStart(db: Db, env: Env, principal: Principal, execution: ExecutionRow & { turnKey: string }, turn: TurnRequest) {
  const { turnKey } = execution;
  let reachedObject = false;
  try {
    // The count and the hold (with the turn's D1 context, one D1 request) go at once. Both land
    // before anything is undone, so a release never runs ahead of a hold still being written.
    const steps = [turn.count ? countRunStart(env, principal) : undefined, holdAndRead(db, principal, execution)] as const;
    await Promise.allSettled(steps);
    const [, { hold, context, keys }] = await Promise.all(steps).catch(async (error: unknown) => {
      // A refusal (the run limit first) is answered as it is, once the claim and any hold are given back; any other failure is compensated below.
      if (error instanceof AppError) await release(db, execution, turnKey, 'idle');
      throw error;
    });
    if (!hold.reserved) {
      await release(db, execution, turnKey, 'idle');
      throw await insufficientCredits(db, principal.userId);
    }
    const input = turnInput(principal, execution, context, { turnKey, budget: hold.amount, text: turn.text, system: turn.system });
    reachedObject = true;
    const answer = await sessionOf(env, execution.id).startTurn(input, keys);
    if (answer.accepted) return answer.events;
    // The object refused the key: a cancel or the reconciler abandoned this turn before it arrived.
    await release(db, execution, turnKey, 'idle');
    throw conflict('The run was stopped before it started');
  } catch (error) {
    if (error instanceof AppError) throw error;
    console.error(JSON.stringify({ level: 'error', message: 'a run could not start', executionId: execution.id, error: String(error) }));
    const taken = await compensate(db, env, execution, turnKey, reachedObject);
    if (taken) return taken;
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      503,
      taken === null
        ? 'The run could not start; nothing was charged. Try again.'
        : `The run could not be confirmed; if it did not start, its slot and credits are released within ${CLAIM_GRACE_MS / 1000} seconds.`,
    );
  }
}

/**
 * Undoes a claim whose start failed: the object withdraws the turn (if the start may have
 * reached it), the hold is released and the execution is `idle` again. Answers the turn's
 * opening events if the object had taken it after all, null once undone, undefined when the
 * compensation itself failed (the reconciler finishes it).
 */
async function compensate(db: Db, env: Env, execution: ExecutionRow, turnKey: string, reachedObject: boolean): Promise<ExecutionEvent[] | null | undefined> {
  try {
    if (reachedObject) {
      const outcome = await sessionOf(env, execution.id).withdraw(turnKey);
      if (outcome.state === 'live') return outcome.events;
    }
    await release(db, execution, turnKey, 'idle');
    return null;
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', message: 'a failed run start could not be undone yet', executionId: execution.id, error: String(error) }));
    return undefined;
  }
}

/**
 * Gives back a claim whose turn never ran: its hold first (a crash after that leaves only the
 * claim, which the reconciler settles), then the execution, only while it is still this claim's.
 */
async function release(db: Db, execution: ExecutionRow, turnKey: string | null, to: 'idle' | 'failed'): Promise<boolean> {
  if (turnKey !== null) await releaseReservation(db, { userId: execution.userId, executionId: formatId('exec', execution.id), turnKey });
  const released = await db
    .update(executions)
    .set({ status: to, completedAt: to === 'failed' ? now() : null })
    .where(
      and(eq(executions.id, execution.id), eq(executions.status, 'working'), turnKey === null ? isNull(executions.turnKey) : eq(executions.turnKey, turnKey)),
    )
    .returning({ id: executions.id });
  if (released.length > 0 && to === 'failed') await traceRunFinished(db, execution.id, 'error', 0);
  return released.length > 0;
}

/**
 * Step 2: the turn holds credits up to RUN_BUDGET and stops with limit_reached when its cost
 * passes the hold. A run on the user's own key (BYOK) costs nothing, so it holds nothing and
 * needs no credits. The turn's context and keys are read in the same D1 request.
 */
async function holdAndRead(db: Db, principal: Principal, execution: ExecutionRow & { turnKey: string }) {
  const turn = { userId: principal.userId, workspaceId: principal.workspaceId, skillSlug: execution.skillSlug };
  const { hold, reads } = await reserveCreditsWith(
    db,
    {
      userId: principal.userId,
      executionId: formatId('exec', execution.id),
      turnKey: execution.turnKey,
      amount: RUN_BUDGET,
      minimum: MIN_RUN_BALANCE,
      waivedWhen: byokKeyExists(db, principal.userId),
    },
    [...turnContextReads(db, principal, execution), ...sealedTurnKeyReads(db, turn)],
  );
  const [version, connector, thread, byok, secrets] = reads;
  const context = { prompt: version[0]?.prompt, connector: runConnectorFrom(connector[0]), threadId: thread[0]?.id };
  return { hold, context, keys: sealedTurnKeysFrom([byok, secrets]) };
}

/** The turn's model key and bound secrets, encrypted as stored: read at its start (and again by a resumed turn). */
const sealedTurnKeyReads = (db: Db, turn: Pick<TurnInput, 'userId' | 'workspaceId' | 'skillSlug'>) =>
  [sealedByokKey(db, turn.userId), sealedRunSecrets(db, turn.workspaceId, turn.skillSlug)] as const;

const sealedTurnKeysFrom = ([[byok], secrets]: BatchResponse<ReturnType<typeof sealedTurnKeyReads>>): SealedTurnKeys => ({ byok: byok ?? null, secrets });

export const sealedTurnKeys = async (db: Db, turn: Pick<TurnInput, 'userId' | 'workspaceId' | 'skillSlug'>) =>
  sealedTurnKeysFrom(await db.batch(sealedTurnKeyReads(db, turn)));

/**
 * What the turn needs from D1: the prompt of its skill version, its connector, and the thread a
 * chat run answers when the turn may launch workflows (otherwise a statement that reads nothing,
 * so the batch keeps its shape).
 */
const turnContextReads = (db: Db, principal: Principal, execution: ExecutionRow) =>
  [
    db
      .select({ prompt: skillVersions.prompt })
      .from(skillVersions)
      .where(eq(skillVersions.id, execution.skillVersionId ?? -1))
      .limit(1),
    runConnectorRow(db, execution.id),
    db
      .select({ id: threads.id })
      .from(threads)
      .where(launchesWorkflows(principal, execution) ? and(eq(threads.workspaceId, principal.workspaceId), eq(threads.traceKey, execution.traceKey)) : sql`0`)
      .limit(1),
  ] as const;

/**
 * Whether the turn offers start_workflow: a chat run whose caller may launch workflows
 * (`workflow:run`, the scope of the launch route).
 */
const launchesWorkflows = (principal: Principal, execution: ExecutionRow) => execution.source === 'chat' && hasScope(principal.scopes, 'workflow:run');

function turnInput(
  principal: Actor,
  execution: ExecutionRow,
  context: Awaited<ReturnType<typeof holdAndRead>>['context'],
  turn: { turnKey: string; budget: number; text: string; system?: string },
): TurnInput {
  return {
    executionId: execution.id,
    workspaceId: principal.workspaceId,
    userId: principal.userId,
    role: principal.role,
    apiKeyId: apiKeyIdOf(principal),
    requestId: principal.origin.requestId,
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
  };
}

/** Records a run starting or being interrupted, once the object has taken it (the claim and the object are not one batch). */
const recordRun = (db: Db, principal: Principal, execution: ExecutionRow, action: 'execution.started' | 'execution.interrupted') =>
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
const announceStart = (db: Db, principal: Principal, execution: ExecutionRow) =>
  recordRun(db, principal, execution, 'execution.started').catch(logBookkeeping(execution.id));

/**
 * The rest of a start's bookkeeping, which the first model request need not wait for: the
 * trace's status and the control plane's `execution-started` (`seq`: the turn's
 * `session.status_running`), from which the control plane relays the run's own stream.
 */
export async function announceRunStarted(db: Db, env: Env, turn: TurnInput, seq: number) {
  await Promise.all([
    traceRunStarted(db, turn.executionId).catch(logBookkeeping(turn.executionId)),
    publish(env, turn.workspaceId, [{ type: 'execution-started', executionId: formatId('exec', turn.executionId), source: turn.source ?? 'api', seq }]),
  ]);
}

/**
 * The user's interrupt of a working execution. A live turn is told to stop (and, with
 * `waitMs`, waited for); a claimed turn the object never took is abandoned at once, its hold
 * released and the execution `idle` again. Answers what the object found and the status after.
 */
export async function interruptTurn(
  db: Db,
  env: Env,
  principal: Principal | null,
  execution: ExecutionRow,
  waitMs = 0,
): Promise<{ outcome: TurnOutcome; status: ExecutionStatus }> {
  const outcome = await sessionOf(env, execution.id).interrupt(execution.turnKey, waitMs);
  if (outcome.state === 'abandoned') await release(db, execution, execution.turnKey, 'idle');
  if (principal && outcome.state !== 'finished') await recordRun(db, principal, execution, 'execution.interrupted');
  return { outcome, status: await statusOf(db, execution.id) };
}

const statusOf = async (db: Db, executionId: number): Promise<ExecutionStatus> =>
  (await db.select({ status: executions.status }).from(executions).where(eq(executions.id, executionId)).limit(1))[0]?.status ?? 'failed';

/**
 * The reconciler for one execution: a claim `working` for longer than the grace period whose
 * turn the object never took is settled (the object ends its log with `session.status_idle`
 * (error), the hold is released, the execution `failed`); a turn the object holds is left
 * running (and resumes now if a restart cut it off). Answers the status after.
 */
export async function reconcileExecution(db: Db, env: Env, execution: ExecutionRow): Promise<ExecutionStatus> {
  if (execution.status !== 'working' || now() - (execution.claimedAt ?? 0) < CLAIM_GRACE_MS) return execution.status;
  const outcome = await sessionOf(env, execution.id).reconcile(execution.turnKey, LOST_NOTICE);
  if (outcome.state === 'live') return 'working';
  if (outcome.state === 'finished') return statusOf(db, execution.id);
  if (await release(db, execution, execution.turnKey, 'failed')) {
    const seq = outcome.events.at(-1)?.seq ?? 0;
    await publish(env, execution.workspaceId, [
      { type: 'execution-failed', executionId: formatId('exec', execution.id), source: execution.source, seq, stopReason: 'error', cost: 0 },
    ]).catch((error) =>
      console.error(JSON.stringify({ level: 'error', message: 'could not announce a lost run', executionId: execution.id, error: String(error) })),
    );
  }
  return statusOf(db, execution.id);
}

/** The caller's execution as it stands: a `working` one whose run was lost is settled first. */
export async function currentExecution(db: Db, env: Env, principal: Principal, rawId: string): Promise<ExecutionRow> {
  const execution = await requireOwned(db, executions, principal, 'exec', rawId, 'Execution');
  if (execution.status !== 'working' || (await reconcileExecution(db, env, execution)) === 'working') return execution;
  return requireOwned(db, executions, principal, 'exec', rawId, 'Execution');
}

/**
 * Settles stale claims (older than the grace period), oldest first: of one workspace (when a
 * run finds its slots taken) or of all (the hourly sweep). Answers how many it freed.
 */
export async function reconcileStale(db: Db, env: Env, workspaceId?: string): Promise<number> {
  let freed = 0;
  for (let seen = 0; seen < SWEEP_MAX; seen += SWEEP_BATCH) {
    const stale = await db
      .select()
      .from(executions)
      .where(
        and(
          eq(executions.status, 'working'),
          or(isNull(executions.claimedAt), lt(executions.claimedAt, now() - CLAIM_GRACE_MS)),
          workspaceId === undefined ? undefined : eq(executions.workspaceId, workspaceId),
        ),
      )
      .orderBy(asc(executions.claimedAt))
      .limit(SWEEP_BATCH)
      .offset(seen - freed);
    for (const execution of stale) {
      const status = await reconcileExecution(db, env, execution).catch((error) => {
        console.error(JSON.stringify({ level: 'error', message: 'could not reconcile an execution', executionId: execution.id, error: String(error) }));
        return 'working' as const;
      });
      if (status !== 'working') freed++;
    }
    if (stale.length < SWEEP_BATCH) break;
  }
  return freed;
}
