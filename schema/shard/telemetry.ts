import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { shardWorkspaceIdColumn } from './columns';

/**
 * A workspace's OpenTelemetry destination (docs/telemetry.md): the OTLP/HTTP traces endpoint its
 * runs are exported to and the headers sent with each export. The headers (often an API key)
 * are one JSON object sealed with AES-GCM under ENCRYPTION_KEY, bound to the workspace; only
 * their names are shown. The counts say how many traces went out and how many were dropped
 * after their last attempt failed.
 */
export const telemetryDestinations = sqliteTable('telemetry_destinations', {
  workspaceId: shardWorkspaceIdColumn().primaryKey(),
  endpoint: text('endpoint').notNull(),
  headerNames: text('header_names', { mode: 'json' }).$type<string[]>().notNull(),
  headers: text('headers').notNull(),
  exported: integer('exported').notNull().default(0),
  dropped: integer('dropped').notNull().default(0),
  lastError: text('last_error'),
  lastErrorAt: integer('last_error_at'),
  updatedAt: integer('updated_at').notNull(),
});

export type TelemetryDestinationRow = typeof telemetryDestinations.$inferSelect;
