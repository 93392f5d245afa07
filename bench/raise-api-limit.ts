/**
 * For the bench Workers only: the per-credential API limit (100 requests a minute, counted in
 * the credential owner's CredentialGate, or in `api:address:*` RateLimiter objects without a valid
 * credential) would turn a throughput bench into a 429 bench. Every request still makes the
 * same call, with the same storage work; only the threshold it is given is raised. Other limits
 * (sign-in attempts, runs per minute) are unchanged.
 */
import type { GateRequest } from '../durable-objects/CredentialGate';
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
    const gates = env.CREDENTIAL_GATE;
    const CREDENTIAL_GATE = {
      getByName(name: string) {
        const stub = gates.getByName(name);
        return { admit: (request: GateRequest) => stub.admit({ ...request, limit: BENCH_API_RATE_LIMIT }), forget: () => stub.forget() };
      },
    } as unknown as Env['CREDENTIAL_GATE'];
    wrapped = { ...env, RATE_LIMITER, CREDENTIAL_GATE };
    raised.set(env, wrapped);
  }
  return wrapped as E;
}
