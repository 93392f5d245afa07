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
 * addressed by name, e.g. `api:key:12`; or per holder of stream slots, e.g. `streams:sse:key:12`.
 *
 * Storage: synchronous KV on the object's SQLite: `window` (start of the current fixed window,
 * ms) and `count` (hits in it), or one `slot:<lease>` entry per slot taken (its expiry, ms). Each
 * call reads and writes without awaiting in between, and a Durable Object runs one call at a
 * time, so counts are exact: two isolates can never both take the last hit or slot. State
 * survives eviction and restarts.
 *
 * Lifecycle: created on first use; a stale window is simply replaced on the next hit, an expired
 * slot when a slot is wanted and none is free. An object whose subject goes away (a workflow
 * trigger's `trigger:<id>`) is erased with it.
 */
export class RateLimiter extends DurableObject<Env> {
  private counter = new HitCounter(this.ctx.storage.kv);
  private slots = new SlotLeases(this.ctx.storage.kv);

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

  /** One of `cap` slots, leased for `leaseMs`: its lease id, or null when every slot is held. */
  takeSlot(cap: number, leaseMs: number): string | null {
    return this.slots.take(cap, leaseMs);
  }

  /** Extends a lease by `leaseMs`; false once it has expired (its slot may be someone else's now). */
  renewSlot(lease: string, leaseMs: number): boolean {
    return this.slots.renew(lease, leaseMs);
  }

  releaseSlot(lease: string): void {
    this.slots.release(lease);
  }

  /** Its subject is gone: nothing is left of this object, and what was held in memory is forgotten with it. */
  async erase(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.counter = new HitCounter(this.ctx.storage.kv);
    this.slots = new SlotLeases(this.ctx.storage.kv);
  }
}

/**
 * Slots held by leases that expire unless renewed, so a holder that vanishes without releasing
 * (a crashed isolate) frees its slot after one lease. Kept in synchronous KV under
 * `slot:<lease>` (the expiry, ms) and mirrored in memory once read.
 */
export class SlotLeases {
  private leases: Map<string, number> | undefined;

  constructor(private readonly kv: SyncKvStorage) {}

  take(cap: number, leaseMs: number): string | null {
    const leases = this.held();
    if (leases.size >= cap) {
      const t = now();
      for (const [lease, expiry] of leases) if (expiry <= t) this.release(lease);
      if (leases.size >= cap) return null;
    }
    const lease = crypto.randomUUID();
    this.set(lease, now() + leaseMs);
    return lease;
  }

  renew(lease: string, leaseMs: number): boolean {
    const expiry = this.held().get(lease);
    if (expiry === undefined || expiry <= now()) {
      this.release(lease);
      return false;
    }
    this.set(lease, now() + leaseMs);
    return true;
  }

  release(lease: string): void {
    if (this.held().delete(lease)) this.kv.delete(`slot:${lease}`);
  }

  private set(lease: string, expiry: number) {
    this.held().set(lease, expiry);
    this.kv.put(`slot:${lease}`, expiry);
  }

  private held(): Map<string, number> {
    this.leases ??= new Map([...this.kv.list<number>({ prefix: 'slot:' })].map(([key, expiry]) => [key.slice('slot:'.length), expiry]));
    return this.leases;
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

  /**
   * Counts `weight` hits at once (the calls of an MCP batch), all or none: what does not fit is
   * refused whole and counts nothing, and `remaining` says what would have fit.
   */
  hit(prefix: string, limit: number, windowMs: number, weight = 1): RateDecision {
    const t = now();
    const currentWindow = t - (t % windowMs);
    const stored = this.stored(prefix);
    const count = stored.window === currentWindow ? stored.count : 0;
    const resetMs = currentWindow + windowMs - t;
    if (count + weight > limit) return { allowed: false, limit, remaining: Math.max(0, limit - count), resetMs, window: currentWindow };
    if (stored.window !== currentWindow) this.kv.put(`${prefix}window`, currentWindow);
    this.kv.put(`${prefix}count`, count + weight);
    this.windows.set(prefix, { window: currentWindow, count: count + weight });
    return { allowed: true, limit, remaining: limit - count - weight, resetMs, window: currentWindow };
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
