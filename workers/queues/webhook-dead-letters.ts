import type { Env } from '../env';
import { directoryRoutedShardDb, workspaceStillPlaced } from '../services/directory-routed';
import { failDeadLettered } from '../services/webhook-delivery';
import { isWebhookMessage } from './webhook-deliveries';

/** Redelivery delay of a dead letter whose shard could not be reached: the queue's max_retries bounds these. */
const FAILURE_RETRY_SECONDS = 300;

/**
 * The `webhook-deliveries-dlq` consumer: a message lands here when its handling failed through
 * all its retries (its workspace's shard unreachable, say). The attempt it carried is logged as
 * never made and its delivery ends `failed` (workers/services/webhook-delivery.ts), so the
 * deliveries list does not show it `pending` forever; redeliver sends it again.
 */
export async function consumeWebhookDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      const body = message.body;
      if (!isWebhookMessage(body)) return message.ack();
      try {
        if (await workspaceStillPlaced(env, body.workspaceId, body.shard))
          await failDeadLettered(directoryRoutedShardDb(env, body.workspaceId, body.shard), body);
        message.ack();
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', queue: batch.queue, workspaceId: body.workspaceId, kind: body.kind, error: String(error) }));
        message.retry({ delaySeconds: FAILURE_RETRY_SECONDS });
      }
    }),
  );
}
