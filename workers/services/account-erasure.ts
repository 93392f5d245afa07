import { and, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import {
  accountDeletions,
  activityLog,
  auditLog,
  changeOutbox,
  creditAccounts,
  creditReservations,
  creditTransactions,
  executions,
  invitations,
  oauthClients,
  users,
  UNFINISHED_RUN_STATUSES,
  workflowRuns,
  workspaceDeletionAudit,
  workspaceDeletions,
  workspaces,
  type AccountDeletionRow,
  type ErasedAccount,
} from '../../schema';
import type { Env } from '../env';
import { now } from '../lib/clock';
import { globalDbOf, shardBinding, shardDbOf } from '../lib/db';
import { deliverChanges } from './audit';
import { releaseReservation } from './credits';
import { placeOf } from './directory';
import { CANCEL_WAIT_MS, interruptTurn } from './execution-lifecycle';
import { release } from './execution-reconciler';
import { scopeOf } from './shard-copy';
import { WORKSPACE_TABLES } from './shard-tables';

/**
 * The end of an account deletion (docs/auth.md, "Deleting an account"), once every workspace
 * deleted with it completed (their jobs release the holds of their runs on the person's ledger
 * first). Run again whole after a failure: each part finds nothing left to do the second time.
 *
 * 1. work the person started in workspaces they left stops: open workflow runs they launched
 *    are canceled, their working executions interrupted (released if they do not stop), and
 *    their holds left on the ledger released;
 * 2. in each workspace they left, the records stay but name no one: the user id becomes the
 *    anonymous id and the email a placeholder in every text column of the workspace's rows, their
 *    name is taken out of their own audit and activity lines, and those lose their ip and user agent;
 * 3. in the global database, one batch: a row under the anonymous id stands in for the user
 *    (no email anyone has, no password), the ledger (credit account, transactions) moves to it,
 *    settled holds go, workspaces they made and deletion jobs and audit records they asked
 *    for name it, the users row goes (and what cascades from it), and the job completes with
 *    `account.deleted` recorded.
 */

type Job = AccountDeletionRow & { account: ErasedAccount };

export type Progress = { done: true } | { done: false; againInMs: number };

/** What stands for the person's name and email in the records that stay. */
const NAMELESS = 'A deleted user';
const NO_EMAIL = 'deleted-account@deleted.invalid';
/** Rows rewritten per statement, so no statement runs long on a large workspace. */
const REWRITE_ROWS = 500;
/** A step waiting for a workspace move to finish looks again after this. */
const MOVE_POLL_MS = 5_000;

/** Stops what the person started in a workspace they left: their open workflow runs, then their working executions. */
async function stopWork(env: Env, job: Job, workspaceId: string, shard: number): Promise<void> {
  const db = shardDbOf(env, shard);
  const { userId } = job.account;
  const runs = await db
    .select({ runId: workflowRuns.runId })
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, workspaceId), eq(workflowRuns.resourceId, userId), inArray(workflowRuns.status, UNFINISHED_RUN_STATUSES)));
  for (const { runId } of runs) await env.WORKFLOW_RUN.getByName(runId).cancel();
  const working = await db
    .select()
    .from(executions)
    .where(and(eq(executions.workspaceId, workspaceId), eq(executions.userId, userId), eq(executions.status, 'working')));
  for (const execution of working) {
    const { status } = await interruptTurn(db, env, null, execution, CANCEL_WAIT_MS);
    if (status === 'working') await release(db, env, { id: execution.id }, execution.turnKey!, 'failed');
  }
}

/** Every statement of `rewrite` run until it changes fewer than REWRITE_ROWS rows. */
async function untilDone(statement: D1PreparedStatement): Promise<void> {
  for (;;) {
    const { meta } = await statement.run();
    if (meta.changes < REWRITE_ROWS) return;
  }
}

/** The workspace's records name no one: see step 2 above. */
async function anonymiseRows(env: Env, job: Job, workspaceId: string, shard: number): Promise<void> {
  const db = shardDbOf(env, shard);
  const { userId, email, name } = job.account;
  await deliverChanges(globalDbOf(env), db, workspaceId);
  await db.batch([
    db
      .update(auditLog)
      .set({ metadata: sql`replace(${auditLog.metadata}, ${name}, ${NAMELESS})`, ip: null, userAgent: null })
      .where(and(eq(auditLog.workspaceId, workspaceId), eq(auditLog.actorUserId, userId))),
    db
      .update(activityLog)
      .set({ summary: sql`replace(${activityLog.summary}, ${name}, ${NAMELESS})` })
      .where(and(eq(activityLog.workspaceId, workspaceId), eq(activityLog.actorUserId, userId))),
  ]);
  const binding = shardBinding(env, shard);
  for (const table of WORKSPACE_TABLES) {
    const columns = table.text.filter((column) => column !== 'workspace_id' && !table.key.includes(column)).map((column) => `"${column}"`);
    if (columns.length === 0) continue;
    const set = columns.map((c) => `${c} = replace(replace(${c}, ?2, ?3), ?4, ?5)`).join(', ');
    const named = columns.map((c) => `instr(r.${c}, ?2) > 0 OR instr(r.${c}, ?4) > 0`).join(' OR ');
    await untilDone(
      binding
        .prepare(`UPDATE "${table.name}" SET ${set} WHERE rowid IN (SELECT r.rowid ${scopeOf(table, '?1')} AND (${named}) LIMIT ${REWRITE_ROWS})`)
        .bind(workspaceId, userId, job.anonymousId, email, NO_EMAIL),
    );
  }
}

/** Holds still open on the person's ledger (a run that was cut off) are given back before the ledger moves. */
async function releaseHolds(env: Env, userId: string): Promise<void> {
  const db = globalDbOf(env);
  const open = await db
    .select({ key: creditReservations.executionId })
    .from(creditReservations)
    .where(and(eq(creditReservations.userId, userId), isNull(creditReservations.settledAt)));
  for (const { key } of open) await releaseReservation(db, { userId, executionId: key.split(':')[0]!, turnKey: key });
}

async function finish(env: Env, job: Job): Promise<void> {
  const db = globalDbOf(env);
  const { userId } = job.account;
  const anonymous = job.anonymousId;
  const at = now();
  await db.batch([
    db
      .insert(users)
      .values({ id: anonymous, email: `${anonymous}@deleted.invalid`, name: 'Deleted user', passwordHash: '', createdAt: at, updatedAt: at })
      .onConflictDoNothing(),
    // Settled holds are runs' bookkeeping, not the ledger; open ones were released. Deleted while
    // the account is still the user's, so the trigger of one opened since takes it off `reserved`.
    db.delete(creditReservations).where(eq(creditReservations.userId, userId)),
    // The account moves with its transactions, totals and all (moving a transaction fires no trigger).
    db.update(creditAccounts).set({ userId: anonymous }).where(eq(creditAccounts.userId, userId)),
    db
      .update(creditTransactions)
      .set({ userId: anonymous, businessKey: sql`replace(${creditTransactions.businessKey}, ${userId}, ${anonymous})` })
      .where(eq(creditTransactions.userId, userId)),
    db.update(workspaces).set({ createdBy: anonymous }).where(eq(workspaces.createdBy, userId)),
    db.update(oauthClients).set({ createdBy: null }).where(eq(oauthClients.createdBy, userId)),
    db.delete(invitations).where(or(eq(invitations.invitedBy, userId), eq(invitations.email, job.account.email))),
    db
      .update(workspaceDeletions)
      .set({
        requestedBy: sql`replace(${workspaceDeletions.requestedBy}, ${userId}, ${anonymous})`,
        memberIds: sql`replace(${workspaceDeletions.memberIds}, ${userId}, ${anonymous})`,
      })
      .where(or(eq(workspaceDeletions.requestedBy, userId), sql`instr(${workspaceDeletions.memberIds}, ${userId}) > 0`)),
    db.update(workspaceDeletionAudit).set({ actorUserId: anonymous, ip: null, userAgent: null }).where(eq(workspaceDeletionAudit.actorUserId, userId)),
    db.update(changeOutbox).set({ actorUserId: anonymous, ip: null, userAgent: null }).where(eq(changeOutbox.actorUserId, userId)),
    db.delete(users).where(eq(users.id, userId)),
    db
      .update(accountDeletions)
      .set({ status: 'completed', account: null, lastError: null, updatedAt: at, completedAt: at })
      .where(and(eq(accountDeletions.id, job.id), isNull(accountDeletions.completedAt))),
    db.insert(workspaceDeletionAudit).values({
      workspaceId: anonymous,
      actorUserId: anonymous,
      action: 'account.deleted',
      resourceType: 'account',
      resourceId: anonymous,
      requestId: `account-deletion:${job.id}`,
      metadata: { jobId: job.id },
      createdAt: at,
    }),
  ]);
}

async function runFinish(env: Env, job: Job): Promise<Progress> {
  const places = [];
  for (const workspaceId of job.keptWorkspaceIds) {
    const place = await placeOf(globalDbOf(env), workspaceId);
    // A workspace deleted since has no records left to anonymise; one being moved is waited for.
    if (!place) continue;
    if (place.movingTo !== null) return { done: false, againInMs: MOVE_POLL_MS };
    places.push({ workspaceId, shard: place.shard });
  }
  for (const { workspaceId, shard } of places) await stopWork(env, job, workspaceId, shard);
  await releaseHolds(env, job.account.userId);
  for (const { workspaceId, shard } of places) await anonymiseRows(env, job, workspaceId, shard);
  await finish(env, job);
  return { done: true };
}

/**
 * Finishes the account deletion once none of its workspace jobs (nor one the person asked for
 * before) is still running; until then it is the last of those jobs' completion that calls
 * again (answered `done` meanwhile, for the caller has nothing more to do). A failure is
 * recorded and thrown (the caller tries again later).
 */
export async function advanceAccountDeletion(env: Env, id: string): Promise<Progress> {
  const db = globalDbOf(env);
  const [job] = await db.select().from(accountDeletions).where(eq(accountDeletions.id, id)).limit(1);
  if (!job || job.status === 'completed' || job.account === null) return { done: true };
  const { account } = job;
  const [unfinished] = await db
    .select({ id: workspaceDeletions.id })
    .from(workspaceDeletions)
    .where(and(eq(workspaceDeletions.status, 'running'), or(eq(workspaceDeletions.accountDeletionId, id), eq(workspaceDeletions.requestedBy, account.userId))))
    .limit(1);
  if (unfinished) return { done: true };
  try {
    return await runFinish(env, { ...job, account });
  } catch (error) {
    await db
      .update(accountDeletions)
      .set({ lastError: String(error) })
      .where(eq(accountDeletions.id, id));
    throw error;
  }
}

/** Account deletions no driver advanced for this long are driven again by the hourly housekeeping. */
const STALE_MS = 10 * 60_000;

/**
 * The hourly housekeeping's part: an account deletion that has not completed STALE_MS after its
 * last change is finished through its first workspace's deletion object (which wakes, finds
 * its own job completed, and goes on to the account's). Answers how many it woke.
 */
export async function resumeStaleAccountDeletions(env: Env): Promise<number> {
  const stale = await globalDbOf(env)
    .select({ workspaceIds: accountDeletions.workspaceIds })
    .from(accountDeletions)
    .where(and(eq(accountDeletions.status, 'running'), sql`${accountDeletions.updatedAt} < ${now() - STALE_MS}`));
  for (const { workspaceIds } of stale) {
    const [first] = workspaceIds;
    if (first !== undefined) await env.WORKSPACE_DELETION.getByName(first).begin(first);
  }
  return stale.length;
}
