import { index, integer, sqliteTable } from 'drizzle-orm/sqlite-core';
import { workspaceIdColumn } from './workspaces';

/**
 * The directory: which shard database holds each workspace's rows. Written when the workspace is
 * made (in the same batch), and when it moves. While `moving_to` is set the workspace's writes
 * are fenced: they answer 503 until the move flips `shard` (docs/operations.md).
 */
export const workspaceShards = sqliteTable(
  'workspace_shards',
  {
    workspaceId: workspaceIdColumn().primaryKey(),
    shard: integer('shard').notNull(),
    movingTo: integer('moving_to'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('workspace_shards_shard_idx').on(t.shard)],
);

/**
 * How full each shard is, as the number of workspaces placed on it (kept with every directory
 * change): a new workspace goes to the bound shard with the fewest. A shard with no row yet
 * holds none, so a newly bound shard takes new workspaces first. `closed` shards take none.
 */
export const shardLoads = sqliteTable('shard_loads', {
  shard: integer('shard').primaryKey(),
  workspaces: integer('workspaces').notNull(),
  closed: integer('closed', { mode: 'boolean' }).notNull().default(false),
});

export type WorkspaceShardRow = typeof workspaceShards.$inferSelect;
