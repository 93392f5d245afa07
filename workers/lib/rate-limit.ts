import type { Env } from '../env';
import type { RateDecision } from '../../durable-objects/RateLimiter';

export type { RateDecision };

/** Counts one hit for `subject` in its own RateLimiter object. */
export const hitRateLimit = (env: Env, subject: string, limit: number, windowMs: number): Promise<RateDecision> =>
  env.RATE_LIMITER.getByName(subject).hit(limit, windowMs);

/** Erases `subject`'s object once the subject is gone, so its counts do not outlive it. */
export const eraseRateLimit = (env: Env, subject: string): Promise<void> => env.RATE_LIMITER.getByName(subject).erase();

/** Takes back an allowed hit whose action did not happen, while its window lasts. */
export const giveBackRateLimit = (env: Env, subject: string, decision: RateDecision): Promise<void> =>
  env.RATE_LIMITER.getByName(subject).giveBack(decision.window);
