import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { globalIdColumn } from '../row-ids';

/**
 * The audit and activity records of changes made in the global database (keys, members,
 * invitations, grants, billing), written in the same batch as the change, then copied to the
 * workspace's shard under the same id and deleted: before the workspace's audit or activity is
 * read, and by the hourly housekeeping. So a change and its record still land together.
 */
export const changeOutbox = sqliteTable(
  'change_outbox',
  {
    id: globalIdColumn('change_outbox'),
    workspaceId: text('workspace_id').notNull(),
    actorUserId: text('actor_user_id').notNull(),
    actorApiKeyId: integer('actor_api_key_id'),
    action: text('action').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id').notNull(),
    ip: text('ip'),
    userAgent: text('user_agent'),
    requestId: text('request_id').notNull(),
    metadata: text('metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    /** The activity line, if the change has one. */
    activity: text('activity'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('change_outbox_workspace_idx').on(t.workspaceId, t.id)],
);
