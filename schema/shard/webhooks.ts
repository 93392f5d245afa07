import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/** The event types an endpoint may subscribe to (docs/webhooks.md). */
export const WEBHOOK_EVENT_TYPES = [
  'execution.completed',
  'execution.failed',
  'execution.limit_reached',
  'workflow_run.succeeded',
  'workflow_run.failed',
  'workflow_run.suspended',
  'credits.limit_reached',
  'credits.low',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * A workspace's webhook endpoint (docs/webhooks.md): where its events go and which. The signing
 * secrets (`whsec_…`) are AES-GCM ciphertext under ENCRYPTION_KEY, bound to the workspace; after
 * a rotation the previous one keeps signing beside the new one until `previous_expires_at`.
 */
export const webhookEndpoints = sqliteTable(
  'webhook_endpoints',
  {
    id: shardIdColumn('webhook_endpoints'),
    workspaceId: shardWorkspaceIdColumn(),
    url: text('url').notNull(),
    events: text('events', { mode: 'json' }).$type<WebhookEventType[]>().notNull(),
    description: text('description'),
    enabled: integer('enabled', { mode: 'boolean' }).notNull(),
    /** Why the service disabled it (persistent failure); null when enabled or disabled by a person. */
    disabledReason: text('disabled_reason'),
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    previousExpiresAt: integer('previous_expires_at'),
    /** When the first failed attempt since the last successful one was made; null after a success. */
    failingSince: integer('failing_since'),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('webhook_endpoints_workspace_idx').on(t.workspaceId, t.id)],
);

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;

/**
 * One event for one endpoint: the payload as first signed (every attempt sends the same bytes
 * under the same `webhook-id`), how many attempts were made and when the next is due.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: shardIdColumn('webhook_deliveries'),
    workspaceId: shardWorkspaceIdColumn(),
    endpointId: integer('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    /** The `webhook-id` (`msg_…`): the same for every attempt and every endpoint the event goes to. */
    eventId: text('event_id').notNull(),
    eventType: text('event_type').$type<WebhookEventType>().notNull(),
    payload: text('payload').notNull(),
    status: text('status', { enum: WEBHOOK_DELIVERY_STATUSES }).notNull(),
    /** Attempts taken up: the last one is claimed before it is sent, so a message delivered twice sends it once. */
    attempts: integer('attempts').notNull().default(0),
    /** When the last attempt was claimed, while it is not yet recorded; a claim older than the lease is the consumer's that died. */
    claimedAt: integer('claimed_at'),
    nextAttemptAt: integer('next_attempt_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('webhook_deliveries_endpoint_event_idx').on(t.endpointId, t.eventId), index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.id)],
);

/**
 * Events emitted and not yet on the queue (docs/webhooks.md): written with (or before) the change
 * they announce, deleted once the queue has taken the event; the housekeeping sweep sends again
 * what is older than a minute, so a failed send or an emitter cut off in between loses nothing.
 */
export const webhookOutbox = sqliteTable(
  'webhook_outbox',
  {
    /** The `webhook-id` (`msg_…`): an event written twice is one row. */
    eventId: text('event_id').primaryKey(),
    workspaceId: shardWorkspaceIdColumn(),
    /** The event as the queue message carries it: what happened and the ids to fetch the details by. */
    event: text('event', { mode: 'json' })
      .$type<{ id: string; type: WebhookEventType; timestamp: string; data: Record<string, string | number | boolean | null> }>()
      .notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('webhook_outbox_created_idx').on(t.createdAt)],
);

/** One HTTP attempt of a delivery: what the receiver answered (or why there was no answer) and how long it took. */
export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    id: shardIdColumn('webhook_attempts'),
    workspaceId: shardWorkspaceIdColumn(),
    deliveryId: integer('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    /** The receiver's HTTP status; null when none came (timeout, refused address, network error). */
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    error: text('error'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId, t.id)],
);

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;
export type WebhookOutboxRow = typeof webhookOutbox.$inferSelect;
