/**
 * The service's Worker for `bench/memory.ts` and `bench/traces.ts`: the same Worker, with the
 * per-credential API limit raised (bench/raise-api-limit.ts) so load is not answered 429.
 */
import service from '../workers/index';
import type { Env } from '../workers/env';
import { withRaisedApiLimit } from './raise-api-limit';

export * from '../workers/index';

export default {
  ...service,
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => service.fetch(request, withRaisedApiLimit(env), ctx),
} satisfies ExportedHandler<Env>;
