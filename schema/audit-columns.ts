import { integer, text } from 'drizzle-orm/sqlite-core';

/** Who did it: a user through a session or OAuth token, or through one of their API keys. */
export const actorColumns = () => ({
  actorUserId: text('actor_user_id').notNull(),
  actorApiKeyId: integer('actor_api_key_id'),
});

/**
 * An audit record (spec 2.9: actor, IP, user agent, request id, resource): the shard's
 * `audit_log` row, and the global `change_outbox` row that becomes one.
 */
export const auditColumns = () => ({
  ...actorColumns(),
  action: text('action').notNull(),
  resourceType: text('resource_type').notNull(),
  resourceId: text('resource_id').notNull(),
  ip: text('ip'),
  userAgent: text('user_agent'),
  requestId: text('request_id').notNull(),
  metadata: text('metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  createdAt: integer('created_at').notNull(),
});
