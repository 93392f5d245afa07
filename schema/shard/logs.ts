import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { actorColumns, auditColumns } from '../audit-columns';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/** Every mutation, for security review (spec 2.9: actor, IP, user agent, request id, resource). */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: shardIdColumn('audit_log'),
    workspaceId: shardWorkspaceIdColumn(),
    ...auditColumns(),
  },
  (t) => [
    index('audit_workspace_idx').on(t.workspaceId, t.id),
    index('audit_workspace_action_idx').on(t.workspaceId, t.action, t.id),
    // The retention sweep's: a workspace's rows older than its window.
    index('audit_workspace_created_idx').on(t.workspaceId, t.createdAt),
  ],
);

/** The workspace change log people read: what changed, in a sentence. */
export const activityLog = sqliteTable(
  'activity_log',
  {
    id: shardIdColumn('activity_log'),
    workspaceId: shardWorkspaceIdColumn(),
    ...actorColumns(),
    type: text('type').notNull(),
    summary: text('summary').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    index('activity_workspace_idx').on(t.workspaceId, t.id),
    // The retention sweep's: a workspace's rows older than its window.
    index('activity_workspace_created_idx').on(t.workspaceId, t.createdAt),
  ],
);

export type AuditRow = typeof auditLog.$inferSelect;
export type ActivityRow = typeof activityLog.$inferSelect;
