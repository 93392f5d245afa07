import { and, asc, eq, isNull, lt } from 'drizzle-orm';
import { creditReservations, executions, workspaceShards } from '../../schema';
import type { Principal } from '../auth/principal';
import type { ShardDb, Env } from '../env';
import { now } from '../lib/clock';
import { globalDbOf, shardDbOf } from '../lib/db';
import { formatId, parseId } from '../lib/ids';
import { publish } from './control-plane';
import { holdOwner, releaseReservation } from './credits';
import { requireOwned } from './tenant';
import { traceRunFinished } from './traces';

/**
 * Claims whose turn never ran, given back: `release` (the hold, then the execution), used by a
 * start that was refused or failed (execution-lifecycle.ts), by the user's interrupt of a turn
 * the object never took, and by the reconciler. After a crash between claim and start, the
 * reconciler settles a claim once it is older than CLAIM_GRACE_MS: on the hourly sweep, on any
 * read of the execution (status, stream URL, cancel), on any list of the workspace's executions
 * and when a run finds the workspace's slots taken. A lost turn ends `failed`, its hold
 * released, with `session.status_idle` (error) in its log so streams end.
 */

type ExecutionRow = typeof executions.$inferSelect;
/**
 * Whose claim and hold a release gives back: the execution, and the user whose credits the hold
 * took when the caller knows it (the one who started the turn, not always the execution's
 * creator); else it is read by the hold's key.
 */
export type Holder = { id: number; userId?: string };
export type ExecutionStatus = ExecutionRow['status'];

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

/** The object that runs an execution's turns and keeps its log. */
export const sessionOf = (env: Env, executionId: number) => env.EXECUTION_SESSION.getByName(formatId('exec', executionId));

/** The claim of a `working` execution: every claim writes its turn's key and its time (step 1). */
export const claimOf = (execution: ExecutionRow) => ({ turnKey: execution.turnKey!, claimedAt: execution.claimedAt! });

/**
 * Gives back a claim whose turn never ran: its hold on the global ledger first (a crash after that
 * leaves only the claim, which the reconciler settles), then the execution on its shard, only
 * while it is still this claim's.
 */
export async function release(db: ShardDb, env: Env, holder: Holder, turnKey: string, to: 'idle' | 'failed'): Promise<boolean> {
  const ledger = globalDbOf(env);
  const userId = holder.userId ?? (await holdOwner(ledger, turnKey));
  if (userId !== undefined) await releaseReservation(ledger, { userId, executionId: formatId('exec', holder.id), turnKey });
  const released = await db
    .update(executions)
    .set({ status: to, completedAt: to === 'failed' ? now() : null })
    .where(and(eq(executions.id, holder.id), eq(executions.status, 'working'), eq(executions.turnKey, turnKey)))
    .returning({ id: executions.id });
  if (released.length > 0 && to === 'failed') await traceRunFinished(db, holder.id, 'error', 0);
  return released.length > 0;
}

/** The execution's status as D1 holds it now. */
export const statusOf = async (db: ShardDb, executionId: number): Promise<ExecutionStatus> =>
  (await db.select({ status: executions.status }).from(executions).where(eq(executions.id, executionId)).limit(1))[0]?.status ?? 'failed';

/**
 * The reconciler for one execution: a claim `working` for longer than the grace period whose
 * turn the object never took is settled (the object ends its log with `session.status_idle`
 * (error), the hold is released, the execution `failed`); a turn the object holds is left
 * running (and resumes now if a restart cut it off). Answers the status after.
 */
export async function reconcileExecution(db: ShardDb, env: Env, execution: ExecutionRow): Promise<ExecutionStatus> {
  if (execution.status !== 'working') return execution.status;
  const { turnKey, claimedAt } = claimOf(execution);
  if (now() - claimedAt < CLAIM_GRACE_MS) return execution.status;
  const outcome = await sessionOf(env, execution.id).reconcile(turnKey, LOST_NOTICE);
  if (outcome.state === 'live') return 'working';
  if (outcome.state === 'finished') return statusOf(db, execution.id);
  if (await release(db, env, { id: execution.id }, turnKey, 'failed')) {
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
export async function currentExecution(db: ShardDb, env: Env, principal: Principal, rawId: string): Promise<ExecutionRow> {
  const execution = await requireOwned(db, executions, principal, 'exec', rawId, 'Execution');
  if (execution.status !== 'working' || (await reconcileExecution(db, env, execution)) === 'working') return execution;
  return requireOwned(db, executions, principal, 'exec', rawId, 'Execution');
}

/** Claims `working` for longer than the grace period, oldest first: of one workspace, or of all. */
const staleClaims = (db: ShardDb, workspaceId?: string) =>
  db
    .select()
    .from(executions)
    .where(
      and(
        eq(executions.status, 'working'),
        lt(executions.claimedAt, now() - CLAIM_GRACE_MS),
        workspaceId === undefined ? undefined : eq(executions.workspaceId, workspaceId),
      ),
    )
    .orderBy(asc(executions.claimedAt));

/** Reconciles each stale claim (a failure is logged, and the claim counts as still working); answers how many it freed. */
async function settleStale(db: ShardDb, env: Env, stale: ExecutionRow[]): Promise<number> {
  let freed = 0;
  for (const execution of stale) {
    const status = await reconcileExecution(db, env, execution).catch((error) => {
      console.error(JSON.stringify({ level: 'error', message: 'could not reconcile an execution', executionId: execution.id, error: String(error) }));
      return 'working' as const;
    });
    if (status !== 'working') freed++;
  }
  return freed;
}

/**
 * Settles stale claims (older than the grace period), oldest first: of one workspace (when a
 * run finds its slots taken) or of all (the hourly sweep). Answers how many it freed.
 */
export async function reconcileStale(db: ShardDb, env: Env, workspaceId?: string): Promise<number> {
  let freed = 0;
  for (let seen = 0; seen < SWEEP_MAX; seen += SWEEP_BATCH) {
    const stale = await staleClaims(db, workspaceId)
      .limit(SWEEP_BATCH)
      .offset(seen - freed);
    freed += await settleStale(db, env, stale);
    if (stale.length < SWEEP_BATCH) break;
  }
  return freed;
}

/**
 * A list of the workspace's executions (`read`), with its stale claims settled first: the owner
 * of a start that was never answered knows its run only from the list, which must not show it
 * `working` once the grace period has passed. The list is read alongside the stale claims, and
 * again only if one was freed. Bounded: a workspace has at most MAX_ACTIVE_EXECUTIONS claims.
 */
export async function withStaleSettled<T>(db: ShardDb, env: Env, workspaceId: string, read: () => Promise<T>): Promise<T> {
  const [stale, list] = await Promise.all([staleClaims(db, workspaceId).limit(SWEEP_BATCH), read()]);
  if (stale.length === 0 || (await settleStale(db, env, stale)) === 0) return list;
  return read();
}

/**
 * Holds whose claim is gone, given back: the hourly sweep. A run's claim is on its workspace's
 * shard and its hold on the global ledger, written one after the other; a hold that landed after
 * the reconciler had settled its claim (a start stalled past the grace period) would otherwise
 * hold the user's credits for good. A hold is orphaned when it is unsettled, older than the grace
 * period and its execution is no longer in the hold's turn: settling marks the hold settled in
 * the same batch as the charge, and a release deletes the hold before it frees the claim, so no
 * live run's hold meets that. Answers how many it released.
 */
export async function releaseOrphanedHolds(env: Env): Promise<number> {
  const ledger = globalDbOf(env);
  const holds = await ledger
    .select({ key: creditReservations.executionId, userId: creditReservations.userId, shard: workspaceShards.shard })
    .from(creditReservations)
    .innerJoin(workspaceShards, eq(workspaceShards.workspaceId, creditReservations.workspaceId))
    .where(and(isNull(creditReservations.settledAt), lt(creditReservations.createdAt, now() - CLAIM_GRACE_MS)))
    .orderBy(asc(creditReservations.createdAt))
    .limit(SWEEP_MAX);
  let released = 0;
  for (const { key, userId, shard } of holds) {
    const executionId = parseId('exec', key.split(':')[0]!);
    if (executionId === null) continue;
    const [inTurn] = await shardDbOf(env, shard)
      .select({ id: executions.id })
      .from(executions)
      .where(and(eq(executions.id, executionId), eq(executions.status, 'working'), eq(executions.turnKey, key)))
      .limit(1);
    if (inTurn) continue;
    if ((await releaseReservation(ledger, { userId, executionId: formatId('exec', executionId), turnKey: key })).released) released++;
  }
  return released;
}
