import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * The MCP endpoint is stateless (a fresh server per request), so the level a client sets with
 * `logging/setLevel` is kept per credential: `api_key:<id>`, `oauth:<grant>` or `session:<id>`.
 */
export const mcpLogLevels = sqliteTable('mcp_log_levels', {
  credential: text('credential').primaryKey(),
  level: text('level', { enum: ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] }).notNull(),
  updatedAt: integer('updated_at').notNull(),
});
