import { createApp } from './app';
import type { Env } from './env';
import { consumeTelemetryDeadLetters } from './queues/telemetry-dead-letters';
import { consumeTelemetryExport } from './queues/telemetry-export';
import { consumeWebhookDeadLetters } from './queues/webhook-dead-letters';
import { consumeWebhookDeliveries } from './queues/webhook-deliveries';
import { consumeWorkflowSteps } from './queues/workflow-steps';
import { housekeeping } from './services/housekeeping';

export { CredentialGate } from '../durable-objects/CredentialGate';
export { ExecutionSession } from '../durable-objects/ExecutionSession';
export { RateLimiter } from '../durable-objects/RateLimiter';
export { SkillEval } from '../durable-objects/SkillEval';
export { WorkspaceChannel } from '../durable-objects/WorkspaceChannel';
export { WorkflowRun } from '../durable-objects/WorkflowRun';
export { WorkflowSchedule } from '../durable-objects/WorkflowSchedule';
export { WorkspaceDeletion } from '../durable-objects/WorkspaceDeletion';
export { WorkspaceExport } from '../durable-objects/WorkspaceExport';

const app = createApp();

export default {
  fetch: app.fetch,

  /** Hourly housekeeping (wrangler.toml [triggers]) on every database, and the run reconciler's sweep. */
  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(housekeeping(env));
  },

  /**
   * The queue consumers: workflow-steps advances one run by one step per message
   * (workers/queues/workflow-steps.ts); webhook-deliveries delivers webhook events
   * (workers/queues/webhook-deliveries.ts) and webhook-deliveries-dlq ends what it gave up on
   * (workers/queues/webhook-dead-letters.ts); telemetry-export exports ended runs to OpenTelemetry
   * collectors (workers/queues/telemetry-export.ts) and telemetry-export-dlq counts what it never
   * answered for as dropped (workers/queues/telemetry-dead-letters.ts).
   */
  async queue(batch, env) {
    if (batch.queue === 'webhook-deliveries') await consumeWebhookDeliveries(batch, env);
    else if (batch.queue === 'webhook-deliveries-dlq') await consumeWebhookDeadLetters(batch, env);
    else if (batch.queue === 'telemetry-export') await consumeTelemetryExport(batch, env);
    else if (batch.queue === 'telemetry-export-dlq') await consumeTelemetryDeadLetters(batch, env);
    else await consumeWorkflowSteps(batch, env);
  },
} satisfies ExportedHandler<Env>;
