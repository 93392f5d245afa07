import type { Env } from '../env';
import { directoryRoutedShardDb, workspaceStillPlaced } from '../services/directory-routed';
import {
  countDropped,
  EXPORT_ATTEMPTS,
  EXPORT_NOT_MADE,
  exportRuns,
  isTelemetryMessage,
  retryDelaySeconds,
  type TelemetryMessage,
} from '../services/telemetry-export';

/**
 * The `telemetry-export` consumer: the batch's runs are exported per workspace, one request
 * each (workers/services/telemetry-export.ts). A failed export is retried by the queue after a
 * delay; on its last attempt it is acknowledged and counted as dropped (also when the export
 * could not be made at all), so a collector that is down costs its traces, never a run. A
 * workspace that no longer exists takes its messages with it.
 */
export async function consumeTelemetryExport(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const byWorkspace = new Map<string, Message<TelemetryMessage>[]>();
  for (const message of batch.messages) {
    if (!isTelemetryMessage(message.body)) {
      console.warn(JSON.stringify({ level: 'warn', queue: batch.queue, error: 'malformed telemetry message dropped', id: message.id }));
      message.ack();
      continue;
    }
    const group = byWorkspace.get(message.body.workspaceId) ?? [];
    group.push(message as Message<TelemetryMessage>);
    byWorkspace.set(message.body.workspaceId, group);
  }
  await Promise.all(
    [...byWorkspace].map(async ([workspaceId, messages]) => {
      const final = messages.map((m) => m.attempts >= EXPORT_ATTEMPTS);
      const db = directoryRoutedShardDb(env, workspaceId, messages[0]!.body.shard);
      try {
        if (!(await workspaceStillPlaced(env, workspaceId, messages[0]!.body.shard))) {
          for (const m of messages) m.ack();
          return;
        }
        const outcome = await exportRuns(
          db,
          env,
          workspaceId,
          messages.map((m) => m.body),
          final,
        );
        messages.forEach((m, i) => (outcome.sent || final[i] ? m.ack() : m.retry({ delaySeconds: retryDelaySeconds(m.attempts) })));
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', queue: batch.queue, workspaceId, error: String(error) }));
        const dropped = final.filter(Boolean).length;
        if (dropped > 0) {
          await countDropped(db, workspaceId, dropped, EXPORT_NOT_MADE).catch((failure) =>
            console.error(JSON.stringify({ level: 'error', queue: batch.queue, workspaceId, dropped, error: `not counted: ${String(failure)}` })),
          );
        }
        messages.forEach((m, i) => (final[i] ? m.ack() : m.retry({ delaySeconds: retryDelaySeconds(m.attempts) })));
      }
    }),
  );
}
