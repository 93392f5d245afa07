import type { WebhookEventType } from '../../schema';
import type { Env } from '../env';
import { isoNow } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';

/**
 * Emitting webhook events (docs/webhooks.md). Where something happens (a turn settles, a
 * workflow run ends or suspends, a spend limit refuses a run, a balance runs low) one message
 * goes to the `webhook-deliveries` queue and nothing else: the consumer
 * (workers/queues/webhook-deliveries.ts) finds the workspace's endpoints and delivers. A failed
 * send is logged, never the caller's failure.
 */

/** A thin event: what happened and the ids to fetch the details by. */
export interface WebhookEvent {
  /** `msg_…`, derived from the event's key: the same occurrence emitted twice is one event. */
  id: string;
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, string | number | boolean | null>;
}

/** The queue's messages: an event to fan out to the workspace's endpoints, or a later attempt of one delivery. */
export type WebhookMessage =
  | { kind: 'event'; workspaceId: string; shard: number; event: WebhookEvent }
  | { kind: 'attempt'; workspaceId: string; shard: number; deliveryId: number; attempt: number; manual?: boolean };

/** The event id of an occurrence named by `key` (e.g. `execution:<id>:<turn key>`). */
export const webhookEventId = async (key: string) => `msg_${(await sha256Hex(key)).slice(0, 32)}`;

/** Queues an event of `workspaceId` (on shard `shard`); never throws. */
export async function emitWebhookEvent(
  env: Env,
  target: { workspaceId: string; shard: number },
  key: string,
  type: WebhookEventType,
  data: WebhookEvent['data'],
): Promise<void> {
  try {
    const event: WebhookEvent = { id: await webhookEventId(key), type, timestamp: isoNow(), data };
    await env.WEBHOOK_DELIVERIES.send({ kind: 'event', ...target, event } satisfies WebhookMessage);
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', message: 'webhook event not queued', workspaceId: target.workspaceId, type, error: String(error) }));
  }
}
