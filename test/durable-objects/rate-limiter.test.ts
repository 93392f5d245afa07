import { env } from 'cloudflare:workers';
import { evictDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';

describe('RateLimiter', () => {
  afterEach(() => resetClock());

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

  it('starts a new window afresh and keeps that window’s count across eviction', async () => {
    const stub = env.RATE_LIMITER.getByName(`windows-${crypto.randomUUID()}`);
    advanceClock(60_000 - (now() % 60_000) + 1); // just inside a window
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await stub.hit(2, 60_000)).allowed).toBe(false);
    advanceClock(60_000);
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 1 });
    await evictDurableObject(stub);
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await stub.hit(2, 60_000)).allowed).toBe(false);
  });

  it('takes back a hit given back in its own window, and nothing once that window has passed', async () => {
    const stub = env.RATE_LIMITER.getByName(`give-back-${crypto.randomUUID()}`);
    advanceClock(60_000 - (now() % 60_000) + 1);
    const first = await stub.hit(2, 60_000);
    await stub.hit(2, 60_000);
    await stub.giveBack(first.window);
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await stub.hit(2, 60_000)).allowed).toBe(false);

    advanceClock(60_000);
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 1 });
    // A hit of the window before is gone with it: giving it back takes nothing from this one.
    await stub.giveBack(first.window);
    await evictDurableObject(stub);
    expect(await stub.hit(2, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
  });
});
