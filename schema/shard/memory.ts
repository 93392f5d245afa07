import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** One working-memory document per workspace (spec 2.4). A missing row reads as empty. */
export const memory = sqliteTable('memory', {
  workspaceId: text('workspace_id').primaryKey(),
  content: text('content').notNull(),
  updatedBy: text('updated_by').notNull(),
  updatedAt: integer('updated_at').notNull(),
});
