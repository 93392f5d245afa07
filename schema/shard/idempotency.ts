import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Stored responses of POSTs sent with `idempotency-key` (spec 8): per workspace, 24 hours.
 * A row with a null status is a request still in flight.
 */
export const idempotencyRecords = sqliteTable(
  'idempotency_records',
  {
    workspaceId: text('workspace_id').notNull(),
    key: text('key').notNull(),
    /** HMAC-SHA-256 (SIGNING_SECRET) over method, path and body: the same key with another request is a conflict. */
    requestHash: text('request_hash').notNull(),
    status: integer('status'),
    body: text('body'),
    contentType: text('content_type'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.key] })],
);
