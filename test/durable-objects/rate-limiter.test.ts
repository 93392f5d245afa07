import { env } from 'cloudflare:workers';
import { evictDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';

describe('RateLimiter', () => {
  it('lets exactly `limit` of many concurrent hits through', async () => {
    const stub = env.RATE_LIMITER.getByName(`concurrency-${crypto.randomUUID()}`);
    const decisions = await Promise.all(Array.from({ length: 150 }, () => stub.hit(100, 3_600_000)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0)).toBe(true);
  });

  it('keeps its count across eviction', async () => {
    const stub = env.RATE_LIMITER.getByName(`eviction-${crypto.randomUUID()}`);
    await stub.hit(2, 3_600_000);
    await evictDurableObject(stub);
    expect((await stub.hit(2, 3_600_000)).allowed).toBe(true);
    expect((await stub.hit(2, 3_600_000)).allowed).toBe(false);
  });
});
