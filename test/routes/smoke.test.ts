import { describe, expect, it } from 'vitest';
import { call, signUp } from '../helpers/api';

describe('smoke', () => {
  it('signs up and reads the profile', async () => {
    const user = await signUp('Ada');
    const res = await call('/api/v1/profile', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Ada');
  });
});
