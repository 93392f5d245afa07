import { integer, sqliteTable } from 'drizzle-orm/sqlite-core';
import { shardWorkspaceIdColumn } from './columns';

/**
 * A workspace's retention windows, in days, where its owner changed them (docs/operations.md,
 * "Retention"): a null column, or no row, is the kind's default. The hourly sweep deletes what
 * is older than the window.
 */
export const retentionWindows = sqliteTable('retention_windows', {
  workspaceId: shardWorkspaceIdColumn().primaryKey(),
  executionsDays: integer('executions_days'),
  tracesDays: integer('traces_days'),
  workflowRunsDays: integer('workflow_runs_days'),
  activityDays: integer('activity_days'),
  auditDays: integer('audit_days'),
  updatedAt: integer('updated_at').notNull(),
});

export type RetentionWindowsRow = typeof retentionWindows.$inferSelect;
