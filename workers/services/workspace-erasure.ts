import type { BatchItem } from 'drizzle-orm/batch';
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, ne, sql } from 'drizzle-orm';
import {
  apiKeys,
  catalogSkills,
  changeOutbox,
  creditReservations,
  deviceActivations,
  executions,
  invitations,
  mcpLogLevels,
  members,
  oauthCodes,
  oauthGrants,
  sessions,
  skillEvals,
  skillVersions,
  UNFINISHED_RUN_STATUSES,
  workflowRuns,
  workflowSchedules,
  workflowTriggers,
  workspaceDeletionAudit,
  workspaceDeletions,
  workspaces,
  type DeletionStep,
  type WorkspaceDeletionRow,
} from '../../schema';
import { credentialsChanged } from '../auth/credential-changes';
import type { Env } from '../env';
import { blobKey, MANIFEST_PREFIX, type BundleManifest } from '../lib/bundle';
import { now } from '../lib/clock';
import { boundShards, globalDbOf, shardBinding, shardDbOf } from '../lib/db';
import { forgetPlacement } from './shard-placement';
import { eraseRateLimit } from '../lib/rate-limit';
import { formatId } from '../lib/ids';
import { advanceAccountDeletion, type Progress } from './account-erasure';
import { workspacePrefix } from './archive-install';
import { releaseReservation } from './credits';
import { PLACE_TTL_MS } from './directory-routed';
import { CANCEL_WAIT_MS, interruptTurn } from './execution-lifecycle';
import { release } from './execution-reconciler';
import { deleteWorkspaceRows } from './shard-copy';
import { triggerRateSubject } from './workflow-triggers';
import { DEFAULT_DRAIN_MS } from './workspace-move';

/**
 * The steps of a workspace deletion (docs/operations.md, "Deleting a workspace"), run by the
 * WorkspaceDeletion object's alarm. The job row (global `workspace_deletions`) records the step
 * it is at; every step can be run again whole, so after a crash the job goes on from the step
 * it was at. The memberships went with the request (workspace-deletion.ts), so no request
 * reaches the workspace any more.
 *
 * 1. credentials: API keys bound to it (their agent consents and permission requests with them),
 *    OAuth grants and codes for it, device activations into it, their MCP log levels; their
 *    owners' gates forget, so none of them works from the next request on; then a move's drain,
 *    for requests that resolved the workspace before the memberships went;
 * 2. cancel: open workflow runs canceled, working executions interrupted and waited for (their
 *    turns settle and release their holds), holds still open released;
 * 3. directory: the directory row goes and its shard's count with it; objects that were still
 *    writing find no place for the workspace from then on;
 * 4. objects: the storage of every execution's, workflow run's and workflow schedule's object, the
 *    delivery counts of every workflow trigger, then the channel's;
 * 5. storage: R2 objects under `workspaces/<id>/`, and the skill bundles no one else refers to;
 * 6. rows: every row of the workspace on every shard;
 * 7. records: global rows left (outbox, settled holds, session defaults) and the workspace row;
 *    the job completes, and `workspace.deleted` is recorded, in the same batch.
 */

type Job = WorkspaceDeletionRow;

/** What a step did: go on to `to` (with `cursor`, and `statements` in the batch that records it), or try again after `waitMs`. */
type StepResult = { to: DeletionStep; cursor?: Job['cursor']; statements?: BatchItem<'sqlite'>[] } | { waitMs: number };

/** How long cancel waits for interrupted turns to settle before releasing what they still hold. */
const CANCEL_DEADLINE_MS = 120_000;
/** How often a step waiting for turns to stop looks again. */
const CANCEL_POLL_MS = 2_000;
/** Objects erased per step run (a page of executions, workflow runs or schedules). */
const OBJECTS_PAGE = 50;
/** Keys R2 deletes in one call at most. */
const R2_DELETE_KEYS = 1_000;

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function revokeCredentials(env: Env, job: Job): Promise<StepResult> {
  const db = globalDbOf(env);
  const [keys, grants] = await Promise.all([
    db.select({ id: apiKeys.id, userId: apiKeys.userId }).from(apiKeys).where(eq(apiKeys.workspaceId, job.workspaceId)),
    db.select({ id: oauthGrants.id, userId: oauthGrants.userId }).from(oauthGrants).where(eq(oauthGrants.workspaceId, job.workspaceId)),
  ]);
  const levels = [...keys.map((k) => `api_key:${k.id}`), ...grants.map((g) => `oauth:${g.id}`)];
  await db.batch([
    db.delete(deviceActivations).where(eq(deviceActivations.workspaceId, job.workspaceId)),
    // Agent consents and permission requests go with their key, OAuth tokens with their grant (foreign keys).
    db.delete(apiKeys).where(eq(apiKeys.workspaceId, job.workspaceId)),
    db.delete(oauthGrants).where(eq(oauthGrants.workspaceId, job.workspaceId)),
    db.delete(oauthCodes).where(eq(oauthCodes.workspaceId, job.workspaceId)),
    db.delete(mcpLogLevels).where(levels.length ? inArray(mcpLogLevels.credential, levels) : sql`0`),
  ]);
  await credentialsChanged(env.CREDENTIAL_GATE, job.requestedBy, ...job.memberIds, ...keys.map((k) => k.userId), ...grants.map((g) => g.userId));
  // Requests that resolved the workspace before its memberships went may still be writing (a run starting): as a move's fence does, wait for them.
  await wait(DEFAULT_DRAIN_MS);
  return { to: 'cancel' };
}

/** The workspace's holds not settled yet, on the ledger. */
const openHolds = (env: Env, job: Job) =>
  globalDbOf(env)
    .select({ key: creditReservations.executionId, userId: creditReservations.userId })
    .from(creditReservations)
    .where(and(eq(creditReservations.workspaceId, job.workspaceId), isNull(creditReservations.settledAt)));

async function releaseHolds(env: Env, job: Job): Promise<void> {
  for (const hold of await openHolds(env, job)) {
    await releaseReservation(globalDbOf(env), { userId: hold.userId, executionId: hold.key.split(':')[0]!, turnKey: hold.key });
  }
}

async function cancelWork(env: Env, job: Job): Promise<StepResult> {
  const db = shardDbOf(env, job.shard);
  const runs = await db
    .select({ runId: workflowRuns.runId })
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, job.workspaceId), inArray(workflowRuns.status, UNFINISHED_RUN_STATUSES)));
  // A run canceled here stops the executions its steps started; the record may lag, so its object is asked each time.
  for (const { runId } of runs) await env.WORKFLOW_RUN.getByName(runId).cancel();
  // An eval job still going starts no more runs.
  const evals = await db
    .select({ id: skillEvals.id })
    .from(skillEvals)
    .where(and(eq(skillEvals.workspaceId, job.workspaceId), inArray(skillEvals.status, ['queued', 'running'])));
  for (const { id } of evals) await env.SKILL_EVAL.getByName(formatId('eval', id)).erase();
  const working = await db
    .select()
    .from(executions)
    .where(and(eq(executions.workspaceId, job.workspaceId), eq(executions.status, 'working')));
  const overdue = now() - job.updatedAt > CANCEL_DEADLINE_MS;
  for (const execution of working) {
    if (overdue) await release(db, env, { id: execution.id }, execution.turnKey!, 'failed');
    else await interruptTurn(db, env, null, execution, CANCEL_WAIT_MS);
  }
  if (!overdue) {
    const still = await db
      .select({ id: executions.id })
      .from(executions)
      .where(and(eq(executions.workspaceId, job.workspaceId), eq(executions.status, 'working')))
      .limit(1);
    if (still.length > 0) return { waitMs: CANCEL_POLL_MS };
  }
  await releaseHolds(env, job);
  return { to: 'directory' };
}

async function removeFromDirectory(env: Env, job: Job): Promise<StepResult> {
  // Objects ask the shard before the directory: it stops vouching first (no move runs during a deletion).
  await forgetPlacement(shardDbOf(env, job.shard), job.workspaceId);
  // The count goes down only in the batch that deletes the row, so running this again changes nothing.
  await env.DB.batch([
    env.DB.prepare(
      `UPDATE shard_loads SET workspaces = max(workspaces - 1, 0) WHERE shard = (SELECT shard FROM workspace_shards WHERE workspace_id = ?1)`,
    ).bind(job.workspaceId),
    env.DB.prepare(`DELETE FROM workspace_shards WHERE workspace_id = ?1`).bind(job.workspaceId),
  ]);
  // An object trusts its last look at where the workspace is this long: after it, none writes to the workspace's shard.
  await wait(PLACE_TTL_MS);
  return { to: 'objects' };
}

/**
 * A page of objects erased: executions' first (by id), then workflow runs' (by run id), then
 * schedules' (by id), then triggers' delivery counts (by id), then the channel's.
 */
async function eraseObjects(env: Env, job: Job): Promise<StepResult> {
  const db = shardDbOf(env, job.shard);
  const cursor = job.cursor ?? {};
  if (cursor.run === undefined) {
    const page = await db
      .select({ id: executions.id })
      .from(executions)
      .where(and(eq(executions.workspaceId, job.workspaceId), gt(executions.id, cursor.execution ?? 0)))
      .orderBy(asc(executions.id))
      .limit(OBJECTS_PAGE);
    await Promise.all(page.map(({ id }) => env.EXECUTION_SESSION.getByName(formatId('exec', id)).erase()));
    if (page.length === OBJECTS_PAGE) return { to: 'objects', cursor: { execution: page.at(-1)!.id } };
  }
  if (cursor.schedule === undefined) {
    const runs = await db
      .select({ runId: workflowRuns.runId })
      .from(workflowRuns)
      .where(and(eq(workflowRuns.workspaceId, job.workspaceId), gt(workflowRuns.runId, cursor.run ?? '')))
      .orderBy(asc(workflowRuns.runId))
      .limit(OBJECTS_PAGE);
    await Promise.all(runs.map(({ runId }) => env.WORKFLOW_RUN.getByName(runId).erase()));
    if (runs.length === OBJECTS_PAGE) return { to: 'objects', cursor: { run: runs.at(-1)!.runId } };
  }
  if (cursor.trigger === undefined) {
    const schedules = await db
      .select({ id: workflowSchedules.id })
      .from(workflowSchedules)
      .where(and(eq(workflowSchedules.workspaceId, job.workspaceId), gt(workflowSchedules.id, cursor.schedule ?? '')))
      .orderBy(asc(workflowSchedules.id))
      .limit(OBJECTS_PAGE);
    await Promise.all(schedules.map(({ id }) => env.WORKFLOW_SCHEDULE.getByName(id).erase()));
    if (schedules.length === OBJECTS_PAGE) return { to: 'objects', cursor: { run: '', schedule: schedules.at(-1)!.id } };
  }
  const triggers = await db
    .select({ id: workflowTriggers.id })
    .from(workflowTriggers)
    .where(and(eq(workflowTriggers.workspaceId, job.workspaceId), gt(workflowTriggers.id, cursor.trigger ?? '')))
    .orderBy(asc(workflowTriggers.id))
    .limit(OBJECTS_PAGE);
  await Promise.all(triggers.map(({ id }) => eraseRateLimit(env, triggerRateSubject(id))));
  if (triggers.length === OBJECTS_PAGE) return { to: 'objects', cursor: { run: '', schedule: '', trigger: triggers.at(-1)!.id } };
  await env.WORKSPACE_CHANNEL.getByName(job.workspaceId).erase();
  return { to: 'storage', cursor: null };
}

/** Deletes every R2 object whose key starts with `prefix`. */
async function deletePrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  for (;;) {
    const listed = await bucket.list({ prefix, limit: R2_DELETE_KEYS });
    if (listed.objects.length === 0) return;
    await bucket.delete(listed.objects.map((o) => o.key));
    if (!listed.truncated) return;
  }
}

/** Whether anything but this workspace names the manifest: the catalog, or a skill version of another workspace on any shard. */
async function manifestShared(env: Env, job: Job, storagePath: string): Promise<boolean> {
  const [catalog] = await globalDbOf(env).select({ id: catalogSkills.id }).from(catalogSkills).where(eq(catalogSkills.storagePath, storagePath)).limit(1);
  if (catalog) return true;
  for (const shard of boundShards(env)) {
    const [other] = await shardDbOf(env, shard)
      .select({ id: skillVersions.id })
      .from(skillVersions)
      .where(and(eq(skillVersions.storagePath, storagePath), ne(skillVersions.workspaceId, job.workspaceId)))
      .limit(1);
    if (other) return true;
  }
  return false;
}

/** The blobs among `candidates` that a manifest in the bucket other than `leaving` lists. */
async function blobsStillListed(bucket: R2Bucket, candidates: Set<string>, leaving: Set<string>): Promise<Set<string>> {
  const listed = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: MANIFEST_PREFIX, ...(cursor ? { cursor } : {}) });
    for (const object of page.objects) {
      if (leaving.has(object.key)) continue;
      const manifest = (await (await bucket.get(object.key))?.json()) as BundleManifest | undefined;
      for (const file of manifest?.files ?? []) if (candidates.has(file.sha256)) listed.add(file.sha256);
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return listed;
}

/**
 * Skill bundles are content-addressed and shared (workers/lib/bundle-store.ts): a manifest goes
 * when no one else names it, and a blob when no manifest left lists it. Blobs go before their
 * manifest, so a step cut off in between finds the manifest again and its blobs with it.
 */
async function deleteUnsharedBundles(env: Env, job: Job): Promise<void> {
  const bucket = env.BUCKET;
  const paths = await shardDbOf(env, job.shard)
    .selectDistinct({ storagePath: skillVersions.storagePath })
    .from(skillVersions)
    .where(eq(skillVersions.workspaceId, job.workspaceId));
  const leaving = new Set<string>();
  const blobs = new Set<string>();
  for (const { storagePath } of paths) {
    if (!storagePath.startsWith(MANIFEST_PREFIX) || (await manifestShared(env, job, storagePath))) continue;
    const manifest = (await (await bucket.get(storagePath))?.json()) as BundleManifest | undefined;
    leaving.add(storagePath);
    for (const file of manifest?.files ?? []) blobs.add(file.sha256);
  }
  if (leaving.size === 0) return;
  const kept = blobs.size ? await blobsStillListed(bucket, blobs, leaving) : new Set<string>();
  const unlisted = [...blobs].filter((sha) => !kept.has(sha)).map(blobKey);
  for (let i = 0; i < unlisted.length; i += R2_DELETE_KEYS) await bucket.delete(unlisted.slice(i, i + R2_DELETE_KEYS));
  await bucket.delete([...leaving]);
}

async function deleteStorage(env: Env, job: Job): Promise<StepResult> {
  await deletePrefix(env.BUCKET, workspacePrefix(job.workspaceId));
  await deleteUnsharedBundles(env, job);
  return { to: 'rows' };
}

async function deleteRows(env: Env, job: Job): Promise<StepResult> {
  // Every shard: a move cut off before this deletion may have left rows on another.
  for (const shard of boundShards(env)) await deleteWorkspaceRows(shardBinding(env, shard), job.workspaceId);
  return { to: 'records' };
}

async function deleteRecords(env: Env, job: Job): Promise<StepResult> {
  const db = globalDbOf(env);
  await releaseHolds(env, job);
  return {
    to: 'done',
    statements: [
      db.delete(changeOutbox).where(eq(changeOutbox.workspaceId, job.workspaceId)),
      // The ledger's transactions are the user's and stay; a settled hold is only the run's bookkeeping.
      db.delete(creditReservations).where(and(eq(creditReservations.workspaceId, job.workspaceId), isNotNull(creditReservations.settledAt))),
      db.update(sessions).set({ workspaceId: null }).where(eq(sessions.workspaceId, job.workspaceId)),
      db.delete(invitations).where(eq(invitations.workspaceId, job.workspaceId)),
      db.delete(members).where(eq(members.workspaceId, job.workspaceId)),
      db.delete(workspaces).where(eq(workspaces.id, job.workspaceId)),
      db.insert(workspaceDeletionAudit).values({
        workspaceId: job.workspaceId,
        actorUserId: job.requestedBy,
        action: 'workspace.deleted',
        resourceType: 'workspace',
        resourceId: job.workspaceId,
        requestId: `deletion:${job.id}`,
        metadata: { name: job.workspaceName, jobId: job.id },
        createdAt: now(),
      }),
    ],
  };
}

const STEPS: Record<Exclude<DeletionStep, 'done'>, (env: Env, job: Job) => Promise<StepResult>> = {
  credentials: revokeCredentials,
  cancel: cancelWork,
  directory: removeFromDirectory,
  objects: eraseObjects,
  storage: deleteStorage,
  rows: deleteRows,
  records: deleteRecords,
};

/** How long one call goes on taking steps before it hands back (its object's alarm calls again at once). */
const SLICE_MS = 20_000;

/**
 * Takes the deletion's next steps, each recorded in the job once done, until it completes, a
 * step must wait, or the slice is spent. A failing step records why and throws (the caller
 * tries again later).
 */
export async function advanceDeletion(env: Env, workspaceId: string): Promise<Progress> {
  const db = globalDbOf(env);
  const started = Date.now();
  for (;;) {
    const [job] = await db.select().from(workspaceDeletions).where(eq(workspaceDeletions.workspaceId, workspaceId)).limit(1);
    if (!job) return { done: true };
    // A workspace deleted with its account: the account's deletion goes on from its last workspace's completion.
    if (job.status === 'completed' || job.step === 'done') return job.accountDeletionId ? advanceAccountDeletion(env, job.accountDeletionId) : { done: true };
    let result: StepResult;
    try {
      result = await STEPS[job.step](env, job);
    } catch (error) {
      await db
        .update(workspaceDeletions)
        .set({ lastError: String(error) })
        .where(eq(workspaceDeletions.id, job.id));
      throw error;
    }
    if ('waitMs' in result) return { done: false, againInMs: result.waitMs };
    const at = now();
    const done = result.to === 'done';
    await db.batch([
      db
        .update(workspaceDeletions)
        .set({
          step: result.to,
          cursor: result.cursor ?? null,
          lastError: null,
          updatedAt: at,
          ...(done ? { status: 'completed' as const, completedAt: at } : {}),
        })
        // Only from the step this call ran: a second driver that got there first is not undone.
        .where(and(eq(workspaceDeletions.id, job.id), eq(workspaceDeletions.step, job.step), isNull(workspaceDeletions.completedAt))),
      ...(result.statements ?? []),
    ]);
    if (done) continue;
    if (Date.now() - started > SLICE_MS) return { done: false, againInMs: 0 };
  }
}

/** Unfinished deletions no driver advanced for this long are driven again by the hourly housekeeping. */
const STALE_MS = 10 * 60_000;

/**
 * The hourly housekeeping's part: a deletion that has not moved for STALE_MS (its object's alarm
 * lost, or failing) has its object woken. Answers how many it woke.
 */
export async function resumeStaleDeletions(env: Env): Promise<number> {
  const stale = await globalDbOf(env)
    .select({ workspaceId: workspaceDeletions.workspaceId })
    .from(workspaceDeletions)
    .where(and(eq(workspaceDeletions.status, 'running'), lt(workspaceDeletions.updatedAt, now() - STALE_MS)));
  for (const { workspaceId } of stale) await env.WORKSPACE_DELETION.getByName(workspaceId).begin(workspaceId);
  return stale.length;
}
