import { WORKSPACE_TABLES, type WorkspaceTable } from './shard-tables';

/**
 * Copying one workspace's rows between two shard databases, table by table in pages, keeping
 * every id (ids are unique across shards, schema/STORAGE.md). Raw D1 rather than the query
 * builder: every table is handled alike, by the description in shard-tables.ts.
 */

type Row = Record<string, unknown>;

/** D1 binds at most 100 parameters to a statement: a page's keys must fit in one lookup. */
const MAX_PARAMS = 99;
const PAGE_ROWS = 50;
/** Rows one DELETE removes at most, so no statement runs long on a large workspace. */
const DELETE_ROWS = 500;

const quote = (name: string) => `"${name}"`;

/** The rows of `table` that belong to the workspace, as `r`; binds the workspace id at `param`. */
export const scopeOf = (table: WorkspaceTable, param = '?') =>
  table.parent
    ? `FROM ${quote(table.name)} AS r JOIN ${quote(table.parent.name)} AS o ON o.${quote(table.parent.parentColumn)} = r.${quote(table.parent.column)} WHERE o.workspace_id = ${param}`
    : `FROM ${quote(table.name)} AS r WHERE r.workspace_id = ${param}`;

const pageSize = (table: WorkspaceTable) => Math.min(PAGE_ROWS, Math.floor(MAX_PARAMS / table.key.length));

/** `(r.k1, r.k2) IN (VALUES (?, ?), …)` for these rows' keys, and its parameters. */
function keyMatch(table: WorkspaceTable, rows: Row[], alias = 'r.') {
  const columns = table.key.map((k) => `${alias}${quote(k)}`).join(', ');
  const tuple = `(${table.key.map(() => '?').join(', ')})`;
  return {
    sql: `(${columns}) IN (VALUES ${rows.map(() => tuple).join(', ')})`,
    params: rows.flatMap((row) => table.key.map((k) => row[k])),
  };
}

const keyOf = (table: WorkspaceTable, row: Row) => JSON.stringify(table.key.map((k) => row[k]));
const valueOf = (table: WorkspaceTable, row: Row) => JSON.stringify(table.columns.map((c) => row[c]));

/** Pages of the workspace's rows of `table` in `db` (the columns named, in rowid order). */
export async function* pages(db: D1Database, table: WorkspaceTable, workspaceId: string, columns: string[]): AsyncGenerator<Row[]> {
  const size = pageSize(table);
  const select = `SELECT r.rowid AS __rowid, ${columns.map((c) => `r.${quote(c)}`).join(', ')} ${scopeOf(table)} AND r.rowid > ? ORDER BY r.rowid LIMIT ?`;
  let after = 0;
  for (;;) {
    const { results } = await db.prepare(select).bind(workspaceId, after, size).all<Row>();
    if (results.length === 0) return;
    yield results;
    after = results.at(-1)!.__rowid as number;
    if (results.length < size) return;
  }
}

/**
 * Pages of the workspace's rows of `table` in `db` in primary-key order (the columns named, and
 * the key's): a key, unlike a rowid, means the same on every shard, so reading can go on across a
 * move (export-archive.ts).
 */
export async function* keyPages(db: D1Database, table: WorkspaceTable, workspaceId: string, columns: string[]): AsyncGenerator<Row[]> {
  const size = pageSize(table);
  const keys = table.key.map((k) => `r.${quote(k)}`).join(', ');
  const selected = [...new Set([...table.key, ...columns])].map((c) => `r.${quote(c)}`).join(', ');
  const first = `SELECT ${selected} ${scopeOf(table)} ORDER BY ${keys} LIMIT ?`;
  const next = `SELECT ${selected} ${scopeOf(table)} AND (${keys}) > (${table.key.map(() => '?').join(', ')}) ORDER BY ${keys} LIMIT ?`;
  let after: unknown[] | null = null;
  for (;;) {
    const statement: D1PreparedStatement = after === null ? db.prepare(first).bind(workspaceId, size) : db.prepare(next).bind(workspaceId, ...after, size);
    const { results } = await statement.all<Row>();
    if (results.length === 0) return;
    yield results;
    if (results.length < size) return;
    const last: Row = results.at(-1)!;
    after = table.key.map((k) => last[k]);
  }
}

/** The rows of `table` in `db` with these rows' keys (every column). */
async function matching(db: D1Database, table: WorkspaceTable, rows: Row[]): Promise<Row[]> {
  const match = keyMatch(table, rows);
  const columns = table.columns.map((c) => `r.${quote(c)}`).join(', ');
  const { results } = await db
    .prepare(`SELECT ${columns} FROM ${quote(table.name)} AS r WHERE ${match.sql}`)
    .bind(...match.params)
    .all<Row>();
  return results;
}

function upsert(db: D1Database, table: WorkspaceTable, row: Row): D1PreparedStatement {
  const rest = table.columns.filter((c) => !table.key.includes(c));
  const onConflict = rest.length ? `DO UPDATE SET ${rest.map((c) => `${quote(c)} = excluded.${quote(c)}`).join(', ')}` : 'DO NOTHING';
  return db
    .prepare(
      `INSERT INTO ${quote(table.name)} (${table.columns.map(quote).join(', ')}) VALUES (${table.columns.map(() => '?').join(', ')}) ON CONFLICT (${table.key.map(quote).join(', ')}) ${onConflict}`,
    )
    .bind(...table.columns.map((c) => row[c] ?? null));
}

/** Removes from `target` the workspace's rows of `table` that `source` no longer has. */
async function prune(source: D1Database, target: D1Database, table: WorkspaceTable, workspaceId: string): Promise<number> {
  let removed = 0;
  for await (const rows of pages(target, table, workspaceId, table.key)) {
    const kept = new Set((await matching(source, table, rows)).map((row) => keyOf(table, row)));
    const gone = rows.filter((row) => !kept.has(keyOf(table, row)));
    if (gone.length === 0) continue;
    const match = keyMatch(table, gone, '');
    await target
      .prepare(`DELETE FROM ${quote(table.name)} WHERE ${match.sql}`)
      .bind(...match.params)
      .run();
    removed += gone.length;
  }
  return removed;
}

/** Writes to `target` the workspace's rows of `table` that are missing there or differ. */
async function copyChanged(source: D1Database, target: D1Database, table: WorkspaceTable, workspaceId: string): Promise<number> {
  let copied = 0;
  for await (const rows of pages(source, table, workspaceId, table.columns)) {
    const there = new Map((await matching(target, table, rows)).map((row) => [keyOf(table, row), valueOf(table, row)]));
    const changed = rows.filter((row) => there.get(keyOf(table, row)) !== valueOf(table, row));
    if (changed.length === 0) continue;
    await target.batch(changed.map((row) => upsert(target, table, row)));
    copied += changed.length;
  }
  return copied;
}

export interface SyncCounts {
  copied: number;
  removed: number;
}

/**
 * Makes the workspace's rows in `target` what they are in `source`: rows gone from the source
 * are removed (children first), rows missing or different are written (parents first). Only the
 * differences are written, so running it again after a first pass copies what changed since;
 * with the workspace's writes fenced it leaves the two equal.
 */
export async function syncWorkspace(source: D1Database, target: D1Database, workspaceId: string): Promise<SyncCounts> {
  let removed = 0;
  for (const table of [...WORKSPACE_TABLES].reverse()) removed += await prune(source, target, table, workspaceId);
  let copied = 0;
  for (const table of WORKSPACE_TABLES) copied += await copyChanged(source, target, table, workspaceId);
  return { copied, removed };
}

/** Deletes every row of the workspace from `db`, children first, a bounded number per statement. */
export async function deleteWorkspaceRows(db: D1Database, workspaceId: string): Promise<number> {
  let deleted = 0;
  for (const table of [...WORKSPACE_TABLES].reverse()) {
    const statement = db.prepare(`DELETE FROM ${quote(table.name)} WHERE rowid IN (SELECT r.rowid ${scopeOf(table)} LIMIT ${DELETE_ROWS})`).bind(workspaceId);
    for (;;) {
      const { meta } = await statement.run();
      deleted += meta.changes;
      if (meta.changes < DELETE_ROWS) break;
    }
  }
  return deleted;
}

/** Whether `db` holds any row of the workspace. */
export async function holdsWorkspace(db: D1Database, workspaceId: string): Promise<boolean> {
  for (const table of WORKSPACE_TABLES) {
    if (
      await db
        .prepare(`SELECT 1 ${scopeOf(table)} LIMIT 1`)
        .bind(workspaceId)
        .first()
    )
      return true;
  }
  return false;
}

/**
 * Run tool-call keys carry no workspace (a digest of a turn and a call), so the source's live ones
 * (kept a day) all go to the target: a turn cut off before the move that makes its call again
 * after it must find its key there. Other workspaces' keys are never asked for there and expire.
 */
export async function copyToolCallKeys(source: D1Database, target: D1Database, since: number): Promise<number> {
  let copied = 0;
  let after = '';
  for (;;) {
    const { results } = await source
      .prepare(`SELECT key, created_at FROM run_tool_calls WHERE created_at >= ? AND key > ? ORDER BY key LIMIT ?`)
      .bind(since, after, PAGE_ROWS)
      .all<{ key: string; created_at: number }>();
    if (results.length === 0) return copied;
    await target.batch(
      results.map((row) => target.prepare(`INSERT OR IGNORE INTO run_tool_calls (key, created_at) VALUES (?, ?)`).bind(row.key, row.created_at)),
    );
    copied += results.length;
    after = results.at(-1)!.key;
  }
}
