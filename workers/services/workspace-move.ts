import { PLACE_TTL_MS } from './directory-routed';
import { and, eq, isNull } from 'drizzle-orm';
import { members, workspaceShards } from '../../schema';
import { credentialsChanged } from '../auth/credential-changes';
import type { Env } from '../env';
import { AppError, conflict, invalidInput, notFound } from '../errors';
import { now } from '../lib/clock';
import { boundShards, globalDbOf, shardBinding, shardDbOf } from '../lib/db';
import { placeOf } from './directory';
import { copyToolCallKeys, deleteWorkspaceRows, syncWorkspace } from './shard-copy';
import { fencePlacement, vouchAfterMove } from './shard-placement';

/**
 * Moving a workspace to another shard while it is in use (docs/operations.md, Moving a
 * workspace). The directory row is the move's progress: `moving_to` set is the fence, `shard`
 * flipped is the move done; every step can be run again, so running the move again after a crash
 * at any point goes on from where it stopped (it never rolls back).
 *
 * 1. copy the workspace's rows to the target (unfenced: writes go on at the source);
 * 2. raise the fence (`moving_to`, then the source shard's placement row) and make every
 *    member's CredentialGate forget, so requests resolve the fence and answer writes with 503;
 *    wait for requests already past the gate and for objects' trust in their last look;
 * 3. copy what changed since (and the shard's live run tool-call keys);
 * 4. flip the directory (`shard`, `moving_to` null, `shard_loads`), make the gates forget again;
 *    the target's placement row vouches for the workspace;
 * 5. delete the workspace's rows from every other shard.
 */

/** How long requests that resolved the workspace before a directory change may still be writing by default. */
export const DEFAULT_DRAIN_MS = 5_000;
/** Run tool-call keys are kept a day (schema/STORAGE.md). */
const TOOL_CALL_KEYS_MS = 24 * 3600_000;

export interface MoveOptions {
  /** How long to wait after raising the fence (and after the flip) for requests already under way. */
  drainMs?: number;
}

export interface MoveReport {
  workspaceId: string;
  from: number;
  to: number;
  /** Rows written to the target: in the copy before the fence, and in the copy under it. */
  copied: { beforeFence: number; underFence: number };
  /** Target rows removed because the source no longer had them (left by an earlier, interrupted copy). */
  removed: number;
  /** Rows deleted from other shards once the directory named the target. */
  deleted: number;
}

const wait = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/** Every member's gate forgets: the next request of each reads the directory row again. */
async function forgetMembers(env: Env, workspaceId: string): Promise<void> {
  const rows = await globalDbOf(env).select({ userId: members.userId }).from(members).where(eq(members.workspaceId, workspaceId));
  await credentialsChanged(env.CREDENTIAL_GATE, ...rows.map((row) => row.userId));
}

async function directoryRow(env: Env, workspaceId: string) {
  const place = await placeOf(globalDbOf(env), workspaceId);
  if (!place) throw notFound('Workspace');
  return place;
}

/** Step 1: the workspace's rows copied to `target` while it stays writable (again: only what differs). */
export async function copyBeforeFence(env: Env, workspaceId: string, target: number) {
  const { shard } = await directoryRow(env, workspaceId);
  return syncWorkspace(shardBinding(env, shard), shardBinding(env, target), workspaceId);
}

/**
 * Step 2: the fence in the directory, then on the source shard (which stops vouching for the
 * workspace to the Durable Objects that ask it), and every member's gate forgets. Refused (409)
 * when the workspace is not on `from` or another move's fence is up.
 */
export async function raiseFence(env: Env, workspaceId: string, from: number, target: number): Promise<void> {
  await globalDbOf(env)
    .update(workspaceShards)
    .set({ movingTo: target, updatedAt: now() })
    .where(and(eq(workspaceShards.workspaceId, workspaceId), eq(workspaceShards.shard, from), isNull(workspaceShards.movingTo)));
  const place = await directoryRow(env, workspaceId);
  if (place.movingTo !== target) throw conflict('The workspace changed place while the move started; run the move again');
  await fenceSource(env, workspaceId, from);
}

/** The fence's second half, after the directory's (again when a move resumes: a crash may have come between): the source stops vouching, every member's gate forgets. */
async function fenceSource(env: Env, workspaceId: string, from: number): Promise<void> {
  await fencePlacement(shardDbOf(env, from), workspaceId, from);
  await forgetMembers(env, workspaceId);
}

/**
 * Step 4: the directory names the target, and the shard counts follow, in one batch in which
 * nothing changes unless the fence names `target` (run again after it landed, it changes nothing).
 */
async function flip(env: Env, workspaceId: string, from: number, target: number): Promise<void> {
  const fenced = `EXISTS (SELECT 1 FROM workspace_shards WHERE workspace_id = ?1 AND shard = ?2 AND moving_to = ?3)`;
  await env.DB.batch([
    env.DB.prepare(`UPDATE shard_loads SET workspaces = max(workspaces - 1, 0) WHERE shard = ?2 AND ${fenced}`).bind(workspaceId, from, target),
    env.DB.prepare(
      `INSERT INTO shard_loads (shard, workspaces) SELECT ?3, 1 WHERE ${fenced} ON CONFLICT (shard) DO UPDATE SET workspaces = workspaces + 1`,
    ).bind(workspaceId, from, target),
    env.DB.prepare(`UPDATE workspace_shards SET shard = ?3, moving_to = NULL, updated_at = ?4 WHERE workspace_id = ?1 AND shard = ?2 AND moving_to = ?3`).bind(
      workspaceId,
      from,
      target,
      now(),
    ),
  ]);
  await forgetMembers(env, workspaceId);
}

/** Step 5: the workspace's rows deleted from every bound shard but the one the directory names. */
async function removeElsewhere(env: Env, workspaceId: string, shard: number): Promise<number> {
  let deleted = 0;
  for (const other of boundShards(env)) if (other !== shard) deleted += await deleteWorkspaceRows(shardBinding(env, other), workspaceId);
  return deleted;
}

/**
 * Moves the workspace to shard `target`, or finishes a move that a crash interrupted: a fence
 * already up for `target` goes on from the copy under the fence; a workspace already on `target`
 * has its rows removed from the other shards.
 */
export async function moveWorkspace(env: Env, workspaceId: string, target: number, options: MoveOptions = {}): Promise<MoveReport> {
  if (!boundShards(env).includes(target)) throw invalidInput('shard', 'bound', `There is no shard ${target} bound to this Worker`);
  // Never shorter than the time an object trusts an unfenced directory read: it must see the fence before the copy under it.
  const drainMs = Math.max(options.drainMs ?? DEFAULT_DRAIN_MS, PLACE_TTL_MS);
  const place = await directoryRow(env, workspaceId);
  const from = place.shard;
  const report: MoveReport = { workspaceId, from, to: target, copied: { beforeFence: 0, underFence: 0 }, removed: 0, deleted: 0 };
  if (place.movingTo !== null && place.movingTo !== target) {
    throw new AppError('CONFLICT', 409, `A move of this workspace to shard ${place.movingTo} is under way: run it again with that shard to finish it`, {
      movingTo: place.movingTo,
    });
  }
  if (from !== target) {
    if (place.movingTo === null) {
      const before = await copyBeforeFence(env, workspaceId, target);
      report.copied.beforeFence = before.copied;
      report.removed += before.removed;
      await raiseFence(env, workspaceId, from, target);
    } else await fenceSource(env, workspaceId, from);
    await wait(drainMs);
    const source = shardBinding(env, from);
    const destination = shardBinding(env, target);
    const under = await syncWorkspace(source, destination, workspaceId);
    await copyToolCallKeys(source, destination, now() - TOOL_CALL_KEYS_MS);
    report.copied.underFence = under.copied;
    report.removed += under.removed;
    await flip(env, workspaceId, from, target);
    if ((await directoryRow(env, workspaceId)).shard !== target) throw conflict('The directory did not flip to the target; run the move again');
    // Requests that resolved the fence just before the flip read the old rows: let them finish.
    await wait(drainMs);
  }
  // Again after a crash between the flip and this: until it lands, objects ask the directory.
  await vouchAfterMove(shardDbOf(env, target), workspaceId, target);
  report.deleted = await removeElsewhere(env, workspaceId, target);
  return report;
}
