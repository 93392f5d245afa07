import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { auditColumns } from '../audit-columns';
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
    ...auditColumns(),
    /** The activity line, if the change has one. */
    activity: text('activity'),
  },
  (t) => [index('change_outbox_workspace_idx').on(t.workspaceId, t.id)],
);
