import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp } from '../helpers/api';

afterEach(() => resetClock());

/** Fires requests in small parallel waves: quicker than one by one, still within one window. */
async function burst(n: number, send: () => ReturnType<typeof call>) {
  const results: Awaited<ReturnType<typeof call>>[] = [];
  for (let i = 0; i < n; i += 10) {
    results.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, send))));
  }
  return results;
}

describe('rate limit: 100 requests per minute per credential', () => {
  it('sets the x-ratelimit headers on every /api/v1 response, errors included', async () => {
    const user = await signUp();
    const ok = await call('/api/v1/profile', { token: user.token });
    expect(ok.headers.get('x-ratelimit-limit')).toBe('100');
    expect(Number(ok.headers.get('x-ratelimit-remaining'))).toBeLessThan(100);
    const reset = Number(ok.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(60);

    const invalid = await call('/api/v1/workspaces', { token: user.token, body: {} });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-ratelimit-limit')).toBe('100');
    const anonymous = await call('/api/v1/profile');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('x-ratelimit-limit')).toBe('100');
  });

  it('answers the 101st request in a window 429 RATE_LIMITED, with correct headers, and only for that key', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    const other = await createKey(user, ['*']);
    // Pin the window start so the 101 requests cannot straddle a minute boundary.
    advanceClock(60_000 - (Date.now() % 60_000) + 1);

    const first100 = await burst(100, () => call('/api/v1/profile', { apiKey: key.key }));
    expect(first100.every((r) => r.status === 200)).toBe(true);
    expect(first100.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));

    const limited = await call('/api/v1/profile', { apiKey: key.key });
    const error = expectError(limited, 429, 'RATE_LIMITED');
    expect(limited.headers.get('x-ratelimit-limit')).toBe('100');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(limited.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(60);
    expect(limited.headers.get('retry-after')).toBe(String(reset));
    expect(error.details?.retryAfterSeconds).toBe(reset);

    expect((await call('/api/v1/profile', { apiKey: other.key })).status).toBe(200);

    advanceClock(reset * 1000);
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
  });

  it('counts a session user across their sessions', async () => {
    const user = await signUp();
    const second = await call('/auth/sign-in/email', { body: { email: user.email, password: user.password } });
    const a = await call('/api/v1/profile', { token: user.token });
    const b = await call('/api/v1/profile', { token: second.body.token });
    expect(Number(b.headers.get('x-ratelimit-remaining'))).toBe(Number(a.headers.get('x-ratelimit-remaining')) - 1);
  });
});
