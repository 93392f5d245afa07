import { env } from 'cloudflare:workers';
import { afterEach, expect, it } from 'vitest';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { call, signUp } from '../helpers/api';
import { boundShards, shardBinding } from '../../workers/lib/db';
import { runHousekeeping } from '../helpers/housekeeping';

afterEach(() => resetClock());

const count = async (database: D1Database, sql: string, ...binds: unknown[]) =>
  (await database
    .prepare(sql)
    .bind(...binds)
    .first<{ n: number }>())!.n;

it('the hourly job deletes expired sessions and idempotency records, and keeps live ones', async () => {
  const stale = await signUp();
  await call('/api/v1/workspaces', {
    token: stale.token,
    headers: { 'idempotency-key': 'old-key' },
    body: { name: 'Old', slug: `old-${crypto.randomUUID().slice(0, 8)}` },
  });
  advanceClock(31 * 24 * 3600_000);
  const fresh = await signUp();

  await runHousekeeping();

  expect(await count(env.DB, 'SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?', stale.user.id)).toBe(0);
  expect(await count(env.DB, 'SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?', fresh.user.id)).toBe(1);
  for (const shard of boundShards(env)) {
    expect(await count(shardBinding(env, shard), "SELECT COUNT(*) AS n FROM idempotency_records WHERE key = 'old-key'")).toBe(0);
  }
  expect((await call('/api/v1/profile', { token: fresh.token })).status).toBe(200);
});

it('the hourly job deletes the keys of run tool calls a day old, and keeps newer ones, on every shard', async () => {
  const shards = boundShards(env);
  const [old, recent] = [crypto.randomUUID(), crypto.randomUUID()];
  for (const shard of shards) {
    const database = shardBinding(env, shard);
    const insert = database.prepare('INSERT INTO run_tool_calls (key, created_at) VALUES (?, ?)');
    await database.batch([insert.bind(old, now() - 24 * 3600_000 - 60_000), insert.bind(recent, now() - 3600_000)]);
  }

  await runHousekeeping();

  for (const shard of shards) {
    const keys = await shardBinding(env, shard).prepare('SELECT key FROM run_tool_calls WHERE key IN (?, ?)').bind(old, recent).all<{ key: string }>();
    expect(keys.results.map((k) => k.key)).toEqual([recent]);
  }
});
