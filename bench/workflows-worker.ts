/**
 * The service's Worker plus one Cloudflare Workflow, for `bench/workflows.ts` only: the same
 * mapping step repeated as `step.do` calls, so both engines run in one `wrangler dev`. The API
 * limit is raised (bench/raise-api-limit.ts): polling a run's status would otherwise hit it.
 */
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from 'cloudflare:workers';
import service from '../workers/index';
import type { Env } from '../workers/env';
import { withRaisedApiLimit } from './raise-api-limit';

export { ExecutionSession, RateLimiter, WorkflowRun } from '../workers/index';
export * from '../workers/index';

interface Params {
  steps: number;
  name: string;
}

type BenchEnv = Env & { BENCH_WORKFLOW: Workflow<Params> };

/** What the service's mapping step computes, as one durable step each. */
export class MappingSteps extends WorkflowEntrypoint<BenchEnv, Params> {
  override async run(event: WorkflowEvent<Params>, step: WorkflowStep) {
    let value: { greeting: string; name: string; i: number } = { greeting: '', name: event.payload.name, i: -1 };
    for (let i = 0; i < event.payload.steps; i++) {
      const name = value.name;
      value = await step.do(`map-${i}`, async () => ({ greeting: `Hello ${name}`, name, i }));
    }
    return value;
  }
}

export default {
  ...service,
  async fetch(request: Request, env: BenchEnv, ctx: ExecutionContext) {
    const url = new URL(request.url);
    if (url.pathname === '/bench/cf-workflow' && request.method === 'POST') {
      const instance = await env.BENCH_WORKFLOW.create({ params: (await request.json()) as Params });
      return Response.json({ id: instance.id });
    }
    const match = /^\/bench\/cf-workflow\/([^/]+)$/.exec(url.pathname);
    if (match) return Response.json(await (await env.BENCH_WORKFLOW.get(match[1]!)).status());
    return service.fetch(request, withRaisedApiLimit(env), ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
