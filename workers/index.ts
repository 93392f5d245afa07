import { openDb } from './lib/db';
import { createApp } from './app';
import { reconcileStale } from './services/execution-reconciler';
import type { Env } from './env';
import { deleteExpiredIdempotencyRecords } from './middleware/idempotency';
import { maintainSigningKeys } from './auth/oauth/signing-keys';
import { consumeWorkflowSteps } from './queues/workflow-steps';
import { deleteExpiredSessions } from './services/accounts';
import { deleteExpiredActivations } from './services/device-activation';
import { deleteExpiredToolCalls } from './services/run-tool-calls';
import { deleteExpiredOAuthRecords } from './services/oauth';

export { CredentialGate } from '../durable-objects/CredentialGate';
export { ExecutionSession } from '../durable-objects/ExecutionSession';
export { RateLimiter } from '../durable-objects/RateLimiter';
export { WorkspaceChannel } from '../durable-objects/WorkspaceChannel';
export { WorkflowRun } from '../durable-objects/WorkflowRun';

const app = createApp();

export default {
  fetch: app.fetch,

  /** Hourly housekeeping (wrangler.toml [triggers]), and the run reconciler's sweep. */
  async scheduled(_controller, env, ctx) {
    const db = openDb(env.DB);
    ctx.waitUntil(
      Promise.all([
        deleteExpiredSessions(db),
        deleteExpiredIdempotencyRecords(db),
        deleteExpiredActivations(db),
        deleteExpiredToolCalls(db),
        deleteExpiredOAuthRecords(db),
        maintainSigningKeys(db, env.ENCRYPTION_KEY),
        // Runs a crash left `working` without a live turn: released, so no workspace stays locked.
        reconcileStale(db, env),
      ]),
    );
  },

  /** The workflow-steps consumer: each message advances one run by one step (workers/queues/workflow-steps.ts). */
  async queue(batch, env) {
    await consumeWorkflowSteps(batch, env);
  },
} satisfies ExportedHandler<Env>;
