import { integer, sqliteTable } from 'drizzle-orm/sqlite-core';
import { shardWorkspaceIdColumn } from './columns';

/**
 * The shard's own word that it holds a workspace and that no move fences its writes: what a
 * Durable Object checks, on the shard it last wrote to, before trusting that shard again, so a
 * long run asks the global directory nothing after its start (workers/services/directory-routed.ts).
 * A row vouches only for the shard named in it (`shard`): a move's copy carries the source's
 * row to the target, where it vouches for nothing until the flip writes the target's own.
 */
export const workspacePlacement = sqliteTable('workspace_placement', {
  workspaceId: shardWorkspaceIdColumn().primaryKey(),
  shard: integer('shard').notNull(),
  /** Set when a move raises its fence (before it waits out the objects' trust); the row is deleted with the source's rows. */
  fenced: integer('fenced', { mode: 'boolean' }).notNull().default(false),
  updatedAt: integer('updated_at').notNull(),
});
