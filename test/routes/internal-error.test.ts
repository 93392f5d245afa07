import { expect, it } from 'vitest';
import { call, expectError, signUp } from '../helpers/api';
import { shardD1 } from '../helpers/shards';

// Its own file: storage is isolated per test file, so the table dropped here breaks nothing else.
it('answers an unexpected failure 500 INTERNAL_ERROR without leaking internals', async () => {
  const user = await signUp();
  await (await shardD1(user.workspaceId)).exec('DROP TABLE memory');
  const res = await call('/api/v1/memory', { token: user.token });
  const error = expectError(res, 500, 'INTERNAL_ERROR');
  expect(JSON.stringify(res.body)).not.toMatch(/memory|sqlite|D1|stack|table/i);
  expect(error.message).toBe('An unexpected error occurred');
  expect(res.headers.get('x-request-id')).toBeTruthy();
});
