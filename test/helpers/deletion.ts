import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { expect } from 'vitest';
import { call, type TestUser } from './api';
import { shardNumberOf } from './shards';

/** What the deletion tests share: workspaces to delete, and the enumeration of what is left. */

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A workspace `owner` creates (not personal), which their session then acts in: the user as it stands there. */
export async function teamOf(owner: TestUser, name = 'Team Space'): Promise<TestUser & { name: string; slug: string }> {
  const slug = `team-${crypto.randomUUID().slice(0, 8)}`;
  const created = await call('/api/v1/workspaces', { token: owner.token, body: { name, slug } });
  expect(created.status).toBe(201);
  expect((await call('/api/v1/workspaces/current', { method: 'PUT', token: owner.token, body: { workspace: created.body.id } })).status).toBe(200);
  return { ...owner, workspaceId: created.body.id, shard: await shardNumberOf(created.body.id), name, slug };
}

/** `user` joins the workspace `inviter` is in, with `role`; their session then acts there. */
export async function join(inviter: TestUser, user: TestUser, role: 'admin' | 'member') {
  const invited = await call(`/api/v1/workspaces/${inviter.workspaceId}/invitations`, { token: inviter.token, body: { email: user.email, role } });
  expect(invited.status).toBe(201);
  expect((await call('/api/v1/invitations/accept', { token: user.token, body: { token: invited.body.token } })).status).toBe(200);
  expect((await call('/api/v1/workspaces/current', { method: 'PUT', token: user.token, body: { workspace: inviter.workspaceId } })).status).toBe(200);
  return { ...user, workspaceId: inviter.workspaceId, shard: inviter.shard };
}

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
