import type { StepMessage } from '../../durable-objects/WorkflowRun';
import type { Env } from '../env';

/** Redelivery delay after the run's object could not be reached: 2, 4, 8... seconds, at most a minute. */
const retryDelay = (attempts: number) => Math.min(60, 2 ** attempts);

const isStepMessage = (body: unknown): body is StepMessage => {
  const b = body as Partial<StepMessage> | null;
  return typeof b?.runId === 'string' && typeof b.key === 'string' && Number.isInteger(b.attempt);
};

/**
 * The `workflow-steps` consumer: each message is "advance run R at step S" and goes to that
 * run's WorkflowRun object, which decides whether it is still wanted (a duplicate or stale
 * message is acknowledged and does nothing). A message that cannot be delivered to the object
 * is retried; after the queue's max_retries it goes to the dead-letter queue, and the run's own
 * alarm sends the step again.
 */
export async function consumeWorkflowSteps(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      if (!isStepMessage(message.body)) {
        console.warn(JSON.stringify({ level: 'warn', queue: batch.queue, error: 'malformed workflow step message dropped', id: message.id }));
        message.ack();
        return;
      }
      const { runId, key, attempt } = message.body;
      try {
        await env.WORKFLOW_RUN.getByName(runId).advance(key, attempt);
        message.ack();
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', queue: batch.queue, runId, key, error: String(error) }));
        message.retry({ delaySeconds: retryDelay(message.attempts) });
      }
    }),
  );
}
