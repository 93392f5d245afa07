import { expect, it } from 'vitest';
import { call, expectError, signUp } from '../helpers/api';
import { shardD1 } from '../helpers/shards';

it('answers an unexpected failure 500 INTERNAL_ERROR without leaking internals', async () => {
  const user = await signUp();
  const shard = await shardD1(user.workspaceId);
  // The files after this one in the same pool worker use the table: it comes back as it was.
  const { results } = await shard
    .prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'memory' AND sql IS NOT NULL ORDER BY type DESC")
    .all<{ sql: string }>();
  await shard.exec('DROP TABLE memory');
  try {
    const res = await call('/api/v1/memory', { token: user.token });
    const error = expectError(res, 500, 'INTERNAL_ERROR');
    expect(JSON.stringify(res.body)).not.toMatch(/memory|sqlite|D1|stack|table/i);
    expect(error.message).toBe('An unexpected error occurred');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  } finally {
    for (const { sql } of results) await shard.prepare(sql).run();
  }
});
