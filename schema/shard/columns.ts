import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Which shard this database is: one row, written when the database is migrated
 * (scripts/migrate.ts), read by every shard row's id (schema/row-ids.ts). A database without it
 * refuses new rows.
 */
export const shardIdentity = sqliteTable('shard_identity', {
  only: integer('only').primaryKey(),
  shard: integer('shard').notNull(),
});

/** The owning workspace of a shard row (its directory entry and the workspace itself live in the global database). */
export const shardWorkspaceIdColumn = () => text('workspace_id').notNull();
