import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { now } from '../workers/lib/clock';
import { SignInBackoff, type BackoffPolicy, type SignInDecision, type SignInTicket } from './sign-in-backoff';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the current window ends. */
  resetMs: number;
  /** When the window this decision counted in began (ms): what `giveBack` names. */
  window: number;
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
  private readonly counter = new HitCounter(this.ctx.storage.kv);

  hit(limit: number, windowMs: number): RateDecision {
    return this.counter.hit('', limit, windowMs);
  }

  /** Sign-in failures from this object's address (`signin:address:<address>`; durable-objects/sign-in-backoff.ts). */
  signInFromAddress(policy: BackoffPolicy): SignInDecision {
    return new SignInBackoff(this.ctx.storage.kv).fromAddress(policy);
  }

  /** Sign-in failures on this object's account (`signin:account:<email>`) from `address`, and from unfamiliar addresses. */
  signInToAccount(address: string, fromAddress: BackoffPolicy, fromUnfamiliar: BackoffPolicy): SignInDecision {
    return new SignInBackoff(this.ctx.storage.kv).toAccount(address, fromAddress, fromUnfamiliar);
  }

  /** Takes back what an allowed sign-in attempt counted here: it succeeded, or never reached the password. */
  settleSignIn(ticket: SignInTicket, succeeded: boolean): void {
    new SignInBackoff(this.ctx.storage.kv).settle(ticket, succeeded);
  }

  /** Takes back a hit whose action did not happen (a run start whose claim was refused). */
  giveBack(window: number): void {
    this.counter.unhit('', window);
  }
}

/**
 * Hits in fixed windows, kept in synchronous KV under `<prefix>window` and `<prefix>count` for
 * each subject (a prefix). A hit reads and writes without awaiting in between, so inside one
 * Durable Object (one call at a time) the count is exact. The object is the only writer of its
 * storage, so what it last wrote is also held in memory: a hit reads storage only for a subject
 * this instance has not counted yet, and writes the window only when a new one starts.
 */
export class HitCounter {
  private readonly windows = new Map<string, { window: number; count: number }>();

  constructor(private readonly kv: SyncKvStorage) {}

  hit(prefix: string, limit: number, windowMs: number): RateDecision {
    const t = now();
    const currentWindow = t - (t % windowMs);
    const stored = this.stored(prefix);
    const count = stored.window === currentWindow ? stored.count : 0;
    const resetMs = currentWindow + windowMs - t;
    if (count >= limit) return { allowed: false, limit, remaining: 0, resetMs, window: currentWindow };
    if (stored.window !== currentWindow) this.kv.put(`${prefix}window`, currentWindow);
    this.kv.put(`${prefix}count`, count + 1);
    this.windows.set(prefix, { window: currentWindow, count: count + 1 });
    return { allowed: true, limit, remaining: limit - count - 1, resetMs, window: currentWindow };
  }

  /** Takes back one hit counted in `window`; once that window has passed there is nothing to take back. */
  unhit(prefix: string, window: number): void {
    const stored = this.stored(prefix);
    if (stored.window !== window || stored.count === 0) return;
    this.kv.put(`${prefix}count`, stored.count - 1);
    this.windows.set(prefix, { window, count: stored.count - 1 });
  }

  /** The subject's window and count: as last written here, else as stored (a new instance after an eviction). */
  private stored(prefix: string) {
    return this.windows.get(prefix) ?? { window: this.kv.get<number>(`${prefix}window`) ?? Number.NaN, count: this.kv.get<number>(`${prefix}count`) ?? 0 };
  }
}
