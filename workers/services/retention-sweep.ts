import { and, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { retentionWindows, workspaceShards } from '../../schema';
import type { Env, GlobalDb, ShardDb } from '../env';
import { now } from '../lib/clock';
import { formatId } from '../lib/ids';
import { DAY_MS } from './object-expiry';
import { windowsOf } from './retention';
import type { RetentionKind } from './retention-defaults';

/** Rows one statement deletes at most, and statements a table gets per sweep and group of workspaces: the rest waits an hour. */
const BATCH = 500;
const STATEMENTS_PER_TABLE = 4;
/** Workspaces one statement names (as a JSON parameter, which D1 caps at 2 MB). */
const WORKSPACES_PER_STATEMENT = 1000;
/** Objects erased at once after a statement. */
const ERASES_AT_ONCE = 50;

/**
 * One statement deleting up to BATCH expired rows of a table, given `windows`: a JSON array of
 * `[workspaceId, cutoffMs]` under the window of the kind it is swept with. Each workspace's rows
 * are found through its `(workspace_id, time)` index, so a sweep reads what it deletes and little
 * else. Trace segments and turns, and workflow step results, go with their parent (ON DELETE
 * CASCADE). Each answers the ids it deleted (`id`): those of executions and workflow runs name
 * objects to erase after them.
 */
const EXPIRE: Record<RetentionKind, (windows: string) => SQL> = {
  // An idle execution (which may run again) counts from its latest run's start, or its creation.
  executions: (w) =>
    sql`DELETE FROM executions WHERE id IN (SELECT e.id FROM json_each(${w}) w JOIN executions e ON e.workspace_id = json_extract(w.value, '$[0]') AND CASE WHEN e.completed_at IS NOT NULL THEN e.completed_at WHEN e.claimed_at IS NOT NULL THEN e.claimed_at ELSE e.started_at END < json_extract(w.value, '$[1]') WHERE e.status <> 'working' LIMIT ${BATCH}) RETURNING id`,
  audit: (w) =>
    sql`DELETE FROM audit_log WHERE id IN (SELECT a.id FROM json_each(${w}) w JOIN audit_log a ON a.workspace_id = json_extract(w.value, '$[0]') AND a.created_at < json_extract(w.value, '$[1]') LIMIT ${BATCH}) RETURNING id`,
  activity: (w) =>
    sql`DELETE FROM activity_log WHERE id IN (SELECT a.id FROM json_each(${w}) w JOIN activity_log a ON a.workspace_id = json_extract(w.value, '$[0]') AND a.created_at < json_extract(w.value, '$[1]') LIMIT ${BATCH}) RETURNING id`,
  traces: (w) =>
    sql`DELETE FROM traces WHERE id IN (SELECT t.id FROM json_each(${w}) w JOIN traces t ON t.workspace_id = json_extract(w.value, '$[0]') AND t.last_activity_at < json_extract(w.value, '$[1]') WHERE t.status <> 'running' LIMIT ${BATCH}) RETURNING id`,
  workflowRuns: (w) =>
    sql`DELETE FROM workflow_runs WHERE run_id IN (SELECT r.run_id FROM json_each(${w}) w JOIN workflow_runs r ON r.workspace_id = json_extract(w.value, '$[0]') AND r.updated_at < json_extract(w.value, '$[1]') WHERE r.status IN ('success', 'failed', 'canceled') LIMIT ${BATCH}) RETURNING run_id AS id`,
};

/** Tables without a window of their own, swept under another kind's: a trigger's delivery log is activity. */
const EXPIRE_WITH: readonly { kind: RetentionKind; expire: (windows: string) => SQL }[] = [
  {
    kind: 'activity',
    expire: (w) =>
      sql`DELETE FROM trigger_deliveries WHERE id IN (SELECT d.id FROM json_each(${w}) w JOIN trigger_deliveries d ON d.workspace_id = json_extract(w.value, '$[0]') AND d.created_at < json_extract(w.value, '$[1]') LIMIT ${BATCH}) RETURNING id`,
  },
];

/** Every statement of a sweep, each with the kind whose window it applies. */
const SWEPT = [...(Object.keys(EXPIRE) as RetentionKind[]).map((kind) => ({ kind, expire: EXPIRE[kind] })), ...EXPIRE_WITH];

/**
 * The objects of deleted rows, erased after them: a reader finds no row (404) before it could find
 * an empty object. A failed erase is logged; the object's own alarm erases it at the end of the
 * window it was armed for.
 */
const ERASE: Partial<Record<RetentionKind, (env: Env, id: number | string) => Promise<void>>> = {
  executions: (env, id) => env.EXECUTION_SESSION.getByName(formatId('exec', Number(id))).erase(),
  workflowRuns: (env, id) => env.WORKFLOW_RUN.getByName(String(id)).erase(),
};

async function eraseObjects(env: Env, kind: RetentionKind, ids: (number | string)[]) {
  const erase = ERASE[kind];
  if (!erase) return;
  for (let start = 0; start < ids.length; start += ERASES_AT_ONCE) {
    await Promise.all(
      ids
        .slice(start, start + ERASES_AT_ONCE)
        .map((id) =>
          erase(env, id).catch((error: unknown) =>
            console.error(JSON.stringify({ level: 'error', message: 'an expired object could not be erased', kind, id, error: String(error) })),
          ),
        ),
    );
  }
}

/**
 * The hourly retention sweep of one shard: for each workspace the directory places there (and
 * not moving), deletes the audit and activity entries (trigger delivery logs with the latter),
 * ended executions, traces and workflow runs older than the workspace's window for them (its
 * own, or the default), and erases the objects of the executions and runs it deleted.
 */
export async function expireRetainedData(env: Env, globalDb: GlobalDb, db: ShardDb): Promise<void> {
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
    for (const { kind, expire } of SWEPT) {
      const windows = JSON.stringify(group.map(({ workspaceId, days }) => [workspaceId, at - days[kind] * DAY_MS]));
      for (let i = 0; i < STATEMENTS_PER_TABLE; i++) {
        const deleted = await db.all<{ id: number | string }>(expire(windows));
        await eraseObjects(
          env,
          kind,
          deleted.map(({ id }) => id),
        );
        if (deleted.length < BATCH) break;
      }
    }
  }
}
