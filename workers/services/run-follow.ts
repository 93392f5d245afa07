import type { WorkflowRunRow, WorkflowRunStatus } from '../../schema/shard/workflows';
import type { Principal } from '../auth/principal';
import type { Env, ShardDb } from '../env';
import { followObjectStream } from '../lib/object-stream';
import { findRun } from './workflow-runs';

/** A follow lasts at most this long; clients re-subscribe. */
const MAX_FOLLOW_MS = 30 * 60_000;
/** Spec 4.8: the run stream closes on these (and on canceled too: nothing follows it). */
export const CLOSING: ReadonlySet<WorkflowRunStatus> = new Set<WorkflowRunStatus>(['success', 'failed', 'suspended', 'canceled']);

export interface RunFollower {
  signal: AbortSignal;
  /** Each new version of the record, oldest first. */
  onRow: (row: WorkflowRunRow) => Promise<void>;
  /** A read that found no run the principal may see. */
  onMissing: () => Promise<void>;
  /** The version already seen: only newer ones are given (-1, the default: the current one too). */
  since?: number;
  /** The statuses the follow ends at (default CLOSING, the run stream's). */
  closesOn?: ReadonlySet<WorkflowRunStatus>;
}

/**
 * Follows a run's record: read once now, then once per change notice of the run's object
 * (WorkflowRun's stream, a notice once D1 holds a new version), never on a timer. `onRow` gets
 * every new version after `since`; the follow ends once a new version's status is one it closes
 * on, `signal` aborts, time is up, or the object's stream cannot be followed. A
 * stream that ends while the run goes on (its object was evicted) is opened again after one
 * more read, from the last version it told of.
 */
export async function followRunRecord(env: Env, db: ShardDb, principal: Principal, runId: string, follower: RunFollower): Promise<void> {
  const closed = new AbortController();
  const signal = AbortSignal.any([follower.signal, closed.signal, AbortSignal.timeout(MAX_FOLLOW_MS)]);
  let version = follower.since ?? -1;
  const read = async () => {
    const row = await findRun(db, principal, runId);
    if (!row) return follower.onMissing();
    if (row.version === version) return;
    version = row.version;
    await follower.onRow(row);
    if ((follower.closesOn ?? CLOSING).has(row.status)) closed.abort();
  };
  await read();
  if (signal.aborted) return;
  await followObjectStream({
    open: (after, opened) => env.WORKFLOW_RUN.getByName(runId).fetch(`https://run/changes?after=${after}`, { signal: opened }),
    afterId: Math.max(version, 0),
    signal,
    onMessage: async ({ id }) => {
      if (id > version) await read();
    },
    ended: async () => {
      await read();
      return closed.signal.aborted;
    },
  });
}
