import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

/** What the deletion tests share: the enumeration of what is left, and waits. */

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export type Row = Record<string, unknown>;

/** Every row of every table of `db` (SQLite's, D1's and the migrations' own aside), by table. */
export async function everyRow(db: D1Database): Promise<Record<string, Row[]>> {
  const { results: tables } = await db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%'`)
    .all<{ name: string }>();
  const rows: Record<string, Row[]> = {};
  for (const { name } of tables) rows[name] = (await db.prepare(`SELECT * FROM "${name}"`).all<Row>()).results;
  return rows;
}

/** The rows, as `table: row`, in which any value is or contains one of `marks`. */
export function rowsMarked(tables: Record<string, Row[]>, marks: string[]): string[] {
  const hit = (value: unknown) => value !== null && marks.some((mark) => String(value).includes(mark));
  return Object.entries(tables).flatMap(([table, rows]) => rows.filter((row) => Object.values(row).some(hit)).map((row) => `${table}: ${JSON.stringify(row)}`));
}

/** What an object holds beyond what opening it writes (the schema version its constructor stores): every table's rows and key, and its alarm. */
export async function heldBy(stub: DurableObjectStub) {
  return runInDurableObject(stub, async (_, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'`)
      .toArray()
      .map((t) => t.name);
    const rows = tables.flatMap((table) =>
      state.storage.sql
        .exec<Record<string, SqlStorageValue>>(`SELECT * FROM "${table}"`)
        .toArray()
        .filter((row) => !(table === 'meta' && row.key === 'schema_version'))
        .map((row) => `${table}: ${JSON.stringify(row)}`),
    );
    for (const [key] of state.storage.kv.list()) rows.push(`kv: ${key}`);
    return { rows, alarm: await state.storage.getAlarm() };
  });
}

/** Every R2 key under `prefix`. */
export const allKeys = async (prefix = '') => {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.BUCKET.list({ prefix, ...(cursor ? { cursor } : {}) });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return keys;
};
