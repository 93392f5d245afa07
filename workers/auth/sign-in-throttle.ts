import type { Env } from '../env';
import { AppError } from '../errors';
import { addressKey } from '../lib/client-address';
import { hitRateLimit } from '../lib/rate-limit';

/** Password guessing is slowed per account and per address (an IPv6 /64; docs/auth.md). */
const SIGN_IN_WINDOW_MS = 15 * 60_000;
const SIGN_IN_PER_ACCOUNT = 10;
const SIGN_IN_PER_IP = 60;
const SIGN_UP_PER_IP = 20;

async function throttle(env: Env, subject: string, limit: number) {
  const decision = await hitRateLimit(env, subject, limit, SIGN_IN_WINDOW_MS);
  if (!decision.allowed) {
    const retryAfterSeconds = Math.ceil(decision.resetMs / 1000);
    throw new AppError('RATE_LIMITED', 429, 'Too many attempts; try again later', { retryAfterSeconds });
  }
}

/** The API and the sign-in pages count attempts together. */
export async function throttleSignIn(env: Env, ip: string | null, email: string) {
  await throttle(env, `signin:address:${addressKey(ip)}`, SIGN_IN_PER_IP);
  await throttle(env, `signin:account:${email}`, SIGN_IN_PER_ACCOUNT);
}

export const throttleSignUp = (env: Env, ip: string | null) => throttle(env, `signup:address:${addressKey(ip)}`, SIGN_UP_PER_IP);
