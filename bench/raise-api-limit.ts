/**
 * For the bench Workers only: the per-credential API limit (100 requests a minute, counted in
 * `api:*` RateLimiter objects) would turn a throughput bench into a 429 bench. Every request
 * still makes the same RateLimiter call, with the same storage work; only the threshold it is
 * given is raised. Other limits (sign-in attempts, runs per minute) are unchanged.
 */
import type { Env } from '../workers/env';

const BENCH_API_RATE_LIMIT = 1_000_000_000;

const raised = new WeakMap<Env, Env>();

export function withRaisedApiLimit<E extends Env>(env: E): E {
  let wrapped = raised.get(env);
  if (!wrapped) {
    const limiter = env.RATE_LIMITER;
    const RATE_LIMITER = {
      getByName(name: string) {
        const stub = limiter.getByName(name);
        if (!name.startsWith('api:')) return stub;
        return { hit: (_limit: number, windowMs: number) => stub.hit(BENCH_API_RATE_LIMIT, windowMs) };
      },
    } as unknown as Env['RATE_LIMITER'];
    wrapped = { ...env, RATE_LIMITER };
    raised.set(env, wrapped);
  }
  return wrapped as E;
}
