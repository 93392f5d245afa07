import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { executions } from './executions';
import { shardWorkspaceIdColumn } from './columns';

/**
 * A workspace's connection to a connector type (issue 10): at most one per type and workspace.
 * The token is AES-GCM ciphertext under ENCRYPTION_KEY bound to the workspace and type; only
 * its last four characters are ever shown. `account` is who the token acts as (GitHub login),
 * read from the provider when the connection was made.
 */
export const connectorConnections = sqliteTable(
  'connector_connections',
  {
    workspaceId: shardWorkspaceIdColumn(),
    connectorType: text('connector_type').notNull(),
    /** base64(iv || ciphertext || tag). */
    ciphertext: text('ciphertext').notNull(),
    tokenPreview: text('token_preview').notNull(),
    account: text('account').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.connectorType] })],
);

/**
 * The connector a skill run was started with (`POST /skills/:slug/run {connector}`), so every
 * turn of the execution, and its reruns, get the same source tools. Never holds a token.
 */
export const executionConnectors = sqliteTable('execution_connectors', {
  executionId: integer('execution_id')
    .primaryKey()
    .references(() => executions.id, { onDelete: 'cascade' }),
  workspaceId: shardWorkspaceIdColumn(),
  connectorType: text('connector_type').notNull(),
  /** `owner/repo` for github; null for remote. */
  repo: text('repo'),
});

export type ConnectorConnectionRow = typeof connectorConnections.$inferSelect;
export type ExecutionConnectorRow = typeof executionConnectors.$inferSelect;
