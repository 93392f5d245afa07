import { now } from '../workers/lib/clock';

/** How fast failures slow down further attempts: none for the first `free`, then waits that double up to a cap. */
export interface BackoffPolicy {
  free: number;
  /** The wait after the first failure past `free`. */
  firstDelayMs: number;
  maxDelayMs: number;
}

/** The wait a counter imposes after its `failures`th failure. */
export const waitAfter = (failures: number, policy: BackoffPolicy): number =>
  failures <= policy.free ? 0 : Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(failures - policy.free - 1, 40));

/** A counter not failed for this long starts again from nothing. */
export const FORGET_AFTER_MS = 24 * 3600_000;
/** An address someone signed in to an account from stays familiar to that account this long. */
export const FAMILIAR_FOR_MS = 30 * 24 * 3600_000;

/** One failure an attempt counted, with what the counter held before and after: enough to take it back. */
interface Counted {
  key: string;
  failures: number;
  blockedUntil: number;
  previousBlockedUntil: number;
}

/** What an allowed attempt counted in one object, and (in an account's object) the address it came from. */
export interface SignInTicket {
  counted: Counted[];
  address: string | null;
}

export type SignInDecision = { allowed: true; ticket: SignInTicket } | { allowed: false; retryAfterMs: number };

interface Failures {
  failures: number;
  lastAt: number;
  blockedUntil: number;
}

/**
 * Sign-in failures, in a RateLimiter object's synchronous KV (docs/auth.md, "Password
 * guessing"). An address's object counts every failure from it under `failures`. An account's
 * object counts failures from each address under `from:<address>`, and failures from addresses
 * the account was not signed in from lately under `failures`; `familiar:<address>` is when
 * someone last signed in from that address. Each counter is `{failures, lastAt, blockedUntil}`.
 *
 * An attempt counts as a failure before the password is checked, so attempts racing each other
 * cannot all slip through once a wait is due; a successful one is then taken back. While a wait
 * runs, attempts are refused without counting. Everything runs without awaiting, one call at a
 * time per object, so counts are exact.
 */
export class SignInBackoff {
  constructor(private readonly kv: SyncKvStorage) {}

  /** An attempt from this object's address, whichever the account. */
  fromAddress(policy: BackoffPolicy): SignInDecision {
    const counted = this.count('failures', policy);
    if ('retryAfterMs' in counted) return { allowed: false, ...counted };
    return { allowed: true, ticket: { counted: [counted], address: null } };
  }

  /**
   * An attempt on this object's account from `address`: slowed by that address's failures on
   * the account, and, unless someone signed in from it lately, by the failures of all
   * unfamiliar addresses together. Nobody else's failures slow the account's own addresses.
   */
  toAccount(address: string, fromAddress: BackoffPolicy, fromUnfamiliar: BackoffPolicy): SignInDecision {
    const pair = this.count(`from:${address}`, fromAddress);
    if ('retryAfterMs' in pair) return { allowed: false, ...pair };
    if (this.familiar(address)) return { allowed: true, ticket: { counted: [pair], address } };
    const all = this.count('failures', fromUnfamiliar);
    if ('retryAfterMs' in all) {
      this.takeBack(pair);
      return { allowed: false, ...all };
    }
    return { allowed: true, ticket: { counted: [pair, all], address } };
  }

  /**
   * Takes back what an attempt counted: it succeeded, or another check refused it before the
   * password was tried. After a success the account's count from that address starts again,
   * and the address becomes familiar.
   */
  settle(ticket: SignInTicket, succeeded: boolean): void {
    for (const counted of ticket.counted) this.takeBack(counted);
    if (!succeeded || ticket.address === null) return;
    this.kv.delete(`from:${ticket.address}`);
    this.kv.put(`familiar:${ticket.address}`, now());
  }

  private familiar(address: string): boolean {
    const at = this.kv.get<number>(`familiar:${address}`);
    return at !== undefined && now() - at < FAMILIAR_FOR_MS;
  }

  private count(key: string, policy: BackoffPolicy): Counted | { retryAfterMs: number } {
    const t = now();
    const stored = this.kv.get<Failures>(key);
    const state = stored && t - stored.lastAt < FORGET_AFTER_MS ? stored : { failures: 0, lastAt: t, blockedUntil: 0 };
    if (t < state.blockedUntil) return { retryAfterMs: state.blockedUntil - t };
    const failures = state.failures + 1;
    const wait = waitAfter(failures, policy);
    const blockedUntil = wait > 0 ? t + wait : 0;
    this.kv.put(key, { failures, lastAt: t, blockedUntil } satisfies Failures);
    return { key, failures, blockedUntil, previousBlockedUntil: state.blockedUntil };
  }

  private takeBack(counted: Counted): void {
    const stored = this.kv.get<Failures>(counted.key);
    if (!stored || stored.failures === 0) return;
    // The wait this attempt started ends with it, unless another attempt has counted since.
    const untouched = stored.failures === counted.failures && stored.blockedUntil === counted.blockedUntil;
    this.kv.put(counted.key, {
      ...stored,
      failures: stored.failures - 1,
      blockedUntil: untouched ? counted.previousBlockedUntil : stored.blockedUntil,
    } satisfies Failures);
  }
}
