import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { now } from '../workers/lib/clock';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the current window ends. */
  resetMs: number;
}

/**
 * One instance per rate-limited subject (an API key, a session user, an IP, an account),
 * addressed by name, e.g. `api:key:12`.
 *
 * Storage: synchronous KV on the object's SQLite, two entries: `window` (start of the current
 * fixed window, ms) and `count` (hits in it). `hit` reads and writes without awaiting in
 * between, and a Durable Object runs one call at a time, so the count is exact: two isolates
 * can never both take the last slot. State survives eviction and restarts.
 *
 * Lifecycle: created on first hit; a stale window is simply replaced on the next hit.
 */
export class RateLimiter extends DurableObject<Env> {
  hit(limit: number, windowMs: number): RateDecision {
    return countHit(this.ctx.storage.kv, '', limit, windowMs);
  }
}

/**
 * One hit in a fixed window kept in synchronous KV under `<prefix>window` and `<prefix>count`.
 * It reads and writes without awaiting in between, so inside one Durable Object (one call at a
 * time) the count is exact.
 */
export function countHit(kv: SyncKvStorage, prefix: string, limit: number, windowMs: number): RateDecision {
  const t = now();
  const currentWindow = t - (t % windowMs);
  const storedWindow = kv.get<number>(`${prefix}window`);
  let count = storedWindow === currentWindow ? (kv.get<number>(`${prefix}count`) ?? 0) : 0;
  const resetMs = currentWindow + windowMs - t;
  if (count >= limit) return { allowed: false, limit, remaining: 0, resetMs };
  count += 1;
  kv.put(`${prefix}window`, currentWindow);
  kv.put(`${prefix}count`, count);
  return { allowed: true, limit, remaining: limit - count, resetMs };
}
