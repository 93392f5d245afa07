import type { BackoffPolicy } from '../../durable-objects/sign-in-backoff';
import type { Env } from '../env';
import { AppError } from '../errors';
import { addressKey } from '../lib/client-address';
import { hitRateLimit } from '../lib/rate-limit';

/**
 * Password guessing is slowed, never locked out (docs/auth.md, "Password guessing"): failures
 * make the next attempt wait, a wait that doubles with each further failure up to a cap. Three
 * counters, each past its free failures: every failure from one address (an IPv6 /64); the
 * failures on one account from one address, reset when someone signs in from there; and the
 * failures on one account from every address nobody signed in to it from lately, for guesses
 * spread over many addresses. A stranger's failures therefore slow the stranger, not the
 * account's owner at their usual address.
 */
const WAITS = { firstDelayMs: 1000, maxDelayMs: 15 * 60_000 };
const PER_ADDRESS: BackoffPolicy = { free: 30, ...WAITS };
const PER_ACCOUNT_FROM_ADDRESS: BackoffPolicy = { free: 5, ...WAITS };
const PER_ACCOUNT_FROM_UNFAMILIAR: BackoffPolicy = { free: 100, ...WAITS };

const SIGN_UP_PER_ADDRESS = 20;
const SIGN_UP_WINDOW_MS = 15 * 60_000;

const tooSoon = (retryAfterMs: number) => {
  const retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('RATE_LIMITED', 429, `Too many failed sign-ins; try again in ${retryAfterSeconds} s`, { retryAfterSeconds });
};

/**
 * Runs `checkPassword` unless a wait is due (429 RATE_LIMITED with `retryAfterSeconds`). The API
 * and the sign-in pages count together. An attempt counts as a failure unless `checkPassword`
 * returns.
 */
export async function throttledSignIn<T>(env: Env, ip: string | null, email: string, checkPassword: () => Promise<T>): Promise<T> {
  const address = addressKey(ip);
  const addressCounter = env.RATE_LIMITER.getByName(`signin:address:${address}`);
  const accountCounter = env.RATE_LIMITER.getByName(`signin:account:${email}`);
  const fromAddress = await addressCounter.signInFromAddress(PER_ADDRESS);
  if (!fromAddress.allowed) throw tooSoon(fromAddress.retryAfterMs);
  const toAccount = await accountCounter.signInToAccount(address, PER_ACCOUNT_FROM_ADDRESS, PER_ACCOUNT_FROM_UNFAMILIAR);
  if (!toAccount.allowed) {
    await addressCounter.settleSignIn(fromAddress.ticket, false);
    throw tooSoon(toAccount.retryAfterMs);
  }
  const result = await checkPassword();
  await Promise.all([addressCounter.settleSignIn(fromAddress.ticket, true), accountCounter.settleSignIn(toAccount.ticket, true)]);
  return result;
}

/** Sign-ups are counted per address in fixed windows: each one creates an account. */
export async function throttleSignUp(env: Env, ip: string | null) {
  const decision = await hitRateLimit(env, `signup:address:${addressKey(ip)}`, SIGN_UP_PER_ADDRESS, SIGN_UP_WINDOW_MS);
  if (!decision.allowed) {
    const retryAfterSeconds = Math.ceil(decision.resetMs / 1000);
    throw new AppError('RATE_LIMITED', 429, 'Too many attempts; try again later', { retryAfterSeconds });
  }
}
