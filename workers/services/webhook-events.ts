import { asc, inArray, lte } from 'drizzle-orm';
import { webhookOutbox, type WebhookEventType, type WebhookOutboxRow } from '../../schema';
import type { Env, ShardDb } from '../env';
import { isoNow, now } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';

/**
 * Emitting webhook events (docs/webhooks.md), at least once. Where something happens (a turn
 * settles, a workflow run ends or suspends, a spend limit refuses a run, a balance runs low) the
 * event is written to the shard's `webhook_outbox` with, or before, the change it announces;
 * then one message goes to the `webhook-deliveries` queue and the row is deleted. A send that
 * failed, or an emitter cut off before it, leaves the row, and the housekeeping sweep sends it
 * again. The consumer (workers/queues/webhook-deliveries.ts) finds the workspace's endpoints and
 * delivers; an event sent twice has one id, so it is delivered once per endpoint.
 */

/** A thin event: what happened and the ids to fetch the details by. */
export type WebhookEvent = WebhookOutboxRow['event'];

/** The queue's messages: an event to fan out to the workspace's endpoints, or a later attempt of one delivery. */
export type WebhookMessage =
  | { kind: 'event'; workspaceId: string; shard: number; event: WebhookEvent }
  | { kind: 'attempt'; workspaceId: string; shard: number; deliveryId: number; attempt: number; manual?: boolean };

type Target = { workspaceId: string; shard: number };

/** An event and the workspace it is for, as the outbox holds it. */
export interface PendingWebhookEvent {
  workspaceId: string;
  event: WebhookEvent;
}

/** The event id of an occurrence named by `key` (e.g. `execution:<id>:<turn key>`). */
export const webhookEventId = async (key: string) => `msg_${(await sha256Hex(key)).slice(0, 32)}`;

/** The event of an occurrence named by `key`, happening now (or at `timestamp`). */
export const webhookEvent = async (
  workspaceId: string,
  key: string,
  type: WebhookEventType,
  data: WebhookEvent['data'],
  timestamp = isoNow(),
): Promise<PendingWebhookEvent> => ({ workspaceId, event: { id: await webhookEventId(key), type, timestamp, data } });

/** The outbox row of an event, to write in the same batch as the change it announces. */
export const outboxInsert = (db: ShardDb, { workspaceId, event }: PendingWebhookEvent) =>
  db.insert(webhookOutbox).values({ eventId: event.id, workspaceId, event, createdAt: now() }).onConflictDoNothing();

/** Events per queue send and per delete (its ids are bound parameters, at most 100 a statement). */
const SEND_BATCH = 50;

/** Queues outbox events of shard `shard`, then deletes their rows; a failure is logged and leaves them for the sweep. */
export async function sendWebhookEvents(db: ShardDb, env: Env, shard: number, pending: PendingWebhookEvent[]): Promise<void> {
  for (let i = 0; i < pending.length; i += SEND_BATCH) {
    const chunk = pending.slice(i, i + SEND_BATCH);
    try {
      await env.WEBHOOK_DELIVERIES.sendBatch(
        chunk.map(({ workspaceId, event }) => ({ body: { kind: 'event', workspaceId, shard, event } satisfies WebhookMessage })),
      );
      await db.delete(webhookOutbox).where(
        inArray(
          webhookOutbox.eventId,
          chunk.map((p) => p.event.id),
        ),
      );
    } catch (error) {
      const events = chunk.map((p) => p.event.id);
      console.error(JSON.stringify({ level: 'error', message: 'webhook events not queued; the sweep sends them again', events, error: String(error) }));
    }
  }
}

/** Writes an event of `target` to its shard's outbox and queues it; never throws (an event the outbox did not take is still sent). */
export async function emitWebhookEvent(db: ShardDb, env: Env, target: Target, key: string, type: WebhookEventType, data: WebhookEvent['data']): Promise<void> {
  const pending = await webhookEvent(target.workspaceId, key, type, data);
  try {
    await outboxInsert(db, pending);
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', message: 'webhook event not recorded', workspaceId: target.workspaceId, type, error: String(error) }));
  }
  await sendWebhookEvents(db, env, target.shard, [pending]);
}

/** How long an outbox row waits for its emitter's own send before the sweep sends it. */
export const OUTBOX_GRACE_MS = 60_000;
/** Rows one sweep of a shard sends at most; the next sweep takes the rest. */
const SWEEP_LIMIT = 1_000;

/** The housekeeping sweep of shard `shard`: sends again the outbox events older than OUTBOX_GRACE_MS. */
export async function resendWebhookEvents(db: ShardDb, env: Env, shard: number): Promise<void> {
  const stale = await db
    .select()
    .from(webhookOutbox)
    .where(lte(webhookOutbox.createdAt, now() - OUTBOX_GRACE_MS))
    .orderBy(asc(webhookOutbox.createdAt))
    .limit(SWEEP_LIMIT);
  await sendWebhookEvents(
    db,
    env,
    shard,
    stale.map((row) => ({ workspaceId: row.workspaceId, event: row.event })),
  );
}
