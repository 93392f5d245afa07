import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import worker from '../../workers/index';

/** The hourly housekeeping, as its cron trigger runs it, waited for to the end. */
export async function runHousekeeping() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: '17 * * * *' }), env, ctx);
  await waitOnExecutionContext(ctx);
}
