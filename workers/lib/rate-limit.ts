import type { Env } from '../env';
import type { RateDecision } from '../../durable-objects/RateLimiter';

export type { RateDecision };

/** Counts one hit for `subject` in its own RateLimiter object. */
export const hitRateLimit = (env: Env, subject: string, limit: number, windowMs: number): Promise<RateDecision> =>
  env.RATE_LIMITER.getByName(subject).hit(limit, windowMs);
