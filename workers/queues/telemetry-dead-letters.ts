import type { Env } from '../env';
import { directoryRoutedShardDb, workspaceStillPlaced } from '../services/directory-routed';
import { countDropped, EXPORT_NOT_MADE, isTelemetryMessage, type TelemetryMessage } from '../services/telemetry-export';

/** Redelivery delay of a dead letter whose shard could not be reached: the queue's max_retries bounds these. */
const FAILURE_RETRY_SECONDS = 300;

/**
 * The `telemetry-export-dlq` consumer: a message lands here when the consumer stopped without
 * answering for it through all its attempts (cut off, say; an export that failed is answered and
 * counted by the consumer itself). Its trace is dropped and counted in the workspace's `dropped`,
 * so the count tells every trace that never went out.
 */
export async function consumeTelemetryDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const byWorkspace = new Map<string, Message<TelemetryMessage>[]>();
  for (const message of batch.messages) {
    if (!isTelemetryMessage(message.body)) {
      message.ack();
      continue;
    }
    byWorkspace.set(message.body.workspaceId, [...(byWorkspace.get(message.body.workspaceId) ?? []), message as Message<TelemetryMessage>]);
  }
  await Promise.all(
    [...byWorkspace].map(async ([workspaceId, messages]) => {
      try {
        if (await workspaceStillPlaced(env, workspaceId, messages[0]!.body.shard)) {
          await countDropped(directoryRoutedShardDb(env, workspaceId, messages[0]!.body.shard), workspaceId, messages.length, EXPORT_NOT_MADE);
        }
        for (const m of messages) m.ack();
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', queue: batch.queue, workspaceId, error: String(error) }));
        for (const m of messages) m.retry({ delaySeconds: FAILURE_RETRY_SECONDS });
      }
    }),
  );
}
