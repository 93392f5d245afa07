import { and, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { retentionWindows, workspaceShards } from '../../schema';
import type { GlobalDb, ShardDb } from '../env';
import { now } from '../lib/clock';
import { windowsOf } from './retention';
import type { RetentionKind } from './retention-defaults';

const DAY_MS = 86_400_000;
/** Rows one statement deletes at most, and statements a kind gets per sweep and group of workspaces: the rest waits an hour. */
const BATCH = 500;
const STATEMENTS_PER_KIND = 4;
/** Workspaces one statement names (as a JSON parameter, which D1 caps at 2 MB). */
const WORKSPACES_PER_STATEMENT = 1000;

/**
 * One statement deleting up to BATCH expired rows of a kind, given `windows`: a JSON array of
 * `[workspaceId, cutoffMs]`. Each workspace's rows are found through its `(workspace_id, time)`
 * index, so a sweep reads what it deletes and little else. Trace segments and turns, and
 * workflow step results, go with their parent (ON DELETE CASCADE).
 */
const EXPIRE: Record<RetentionKind, (windows: string) => SQL> = {
  audit: (w) =>
    sql`DELETE FROM audit_log WHERE id IN (SELECT a.id FROM json_each(${w}) w JOIN audit_log a ON a.workspace_id = json_extract(w.value, '$[0]') AND a.created_at < json_extract(w.value, '$[1]') LIMIT ${BATCH})`,
  activity: (w) =>
    sql`DELETE FROM activity_log WHERE id IN (SELECT a.id FROM json_each(${w}) w JOIN activity_log a ON a.workspace_id = json_extract(w.value, '$[0]') AND a.created_at < json_extract(w.value, '$[1]') LIMIT ${BATCH})`,
  traces: (w) =>
    sql`DELETE FROM traces WHERE id IN (SELECT t.id FROM json_each(${w}) w JOIN traces t ON t.workspace_id = json_extract(w.value, '$[0]') AND t.last_activity_at < json_extract(w.value, '$[1]') WHERE t.status <> 'running' LIMIT ${BATCH})`,
  workflowRuns: (w) =>
    sql`DELETE FROM workflow_runs WHERE run_id IN (SELECT r.run_id FROM json_each(${w}) w JOIN workflow_runs r ON r.workspace_id = json_extract(w.value, '$[0]') AND r.updated_at < json_extract(w.value, '$[1]') WHERE r.status IN ('success', 'failed', 'canceled') LIMIT ${BATCH})`,
};

/**
 * The hourly retention sweep of one shard: for each workspace the directory places there (and
 * not moving), deletes the audit and activity entries, ended traces and ended workflow runs
 * older than the workspace's window for them (its own, or the default).
 */
export async function expireRetainedData(globalDb: GlobalDb, db: ShardDb): Promise<void> {
  const placed = await globalDb
    .select({ workspaceId: workspaceShards.workspaceId })
    .from(workspaceShards)
    .where(and(eq(workspaceShards.shard, db.shard), isNull(workspaceShards.movingTo)));
  if (placed.length === 0) return;
  const overrides = new Map((await db.select().from(retentionWindows)).map((row) => [row.workspaceId, row]));
  const at = now();
  for (let start = 0; start < placed.length; start += WORKSPACES_PER_STATEMENT) {
    const group = placed
      .slice(start, start + WORKSPACES_PER_STATEMENT)
      .map(({ workspaceId }) => ({ workspaceId, days: windowsOf(overrides.get(workspaceId)) }));
    for (const kind of Object.keys(EXPIRE) as RetentionKind[]) {
      const windows = JSON.stringify(group.map(({ workspaceId, days }) => [workspaceId, at - days[kind] * DAY_MS]));
      for (let i = 0; i < STATEMENTS_PER_KIND; i++) {
        const result = await db.run(EXPIRE[kind](windows));
        if (result.meta.changes < BATCH) break;
      }
    }
  }
}
