import type { Env } from '../env';
import { directoryRoutedShardDb, workspaceStillPlaced } from '../services/directory-routed';
import { attemptDelivery, CLAIM_LEASE_MS, fanOut } from '../services/webhook-delivery';
import type { WebhookMessage } from '../services/webhook-events';

/** Redelivery delay of a message whose handling failed (its shard unreachable): the queue's max_retries bounds these. */
const FAILURE_RETRY_SECONDS = 30;

export const isWebhookMessage = (body: unknown): body is WebhookMessage => {
  const b = body as Partial<WebhookMessage> | null;
  if (typeof b?.workspaceId !== 'string' || !Number.isInteger(b.shard)) return false;
  return b.kind === 'event' ? typeof b.event?.id === 'string' : b.kind === 'attempt' && Number.isInteger(b.deliveryId) && Number.isInteger(b.attempt);
};

/**
 * The `webhook-deliveries` consumer: an `event` message is fanned out to the workspace's
 * endpoints and attempted at once; an `attempt` message is a retry (or a manual redelivery) of
 * one delivery. An HTTP failure is the delivery's to schedule (workers/services/webhook-delivery.ts);
 * only a failure to handle the message at all retries it, and so does an attempt another
 * consumer has claimed and not yet recorded (a duplicate delivery of the message), until it is
 * recorded or the claim has lapsed. A workspace that no longer exists takes its messages with it.
 */
export async function consumeWebhookDeliveries(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      const body = message.body;
      if (!isWebhookMessage(body)) {
        console.warn(JSON.stringify({ level: 'warn', queue: batch.queue, error: 'malformed webhook message dropped', id: message.id }));
        message.ack();
        return;
      }
      try {
        if (await workspaceStillPlaced(env, body.workspaceId, body.shard)) {
          const db = directoryRoutedShardDb(env, body.workspaceId, body.shard);
          const handled = await (body.kind === 'event' ? fanOut(db, env, body, body.event) : attemptDelivery(db, env, body));
          if (handled === 'held') return message.retry({ delaySeconds: CLAIM_LEASE_MS / 1000 });
        }
        message.ack();
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', queue: batch.queue, workspaceId: body.workspaceId, kind: body.kind, error: String(error) }));
        message.retry({ delaySeconds: FAILURE_RETRY_SECONDS });
      }
    }),
  );
}
