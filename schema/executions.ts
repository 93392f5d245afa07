import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { workspaceIdColumn } from './workspaces';

export const EXECUTION_STATUSES = ['idle', 'working', 'completed', 'failed'] as const;

/**
 * The executions index (spec 2.2). The columns here are what install and uninstall need to
 * see a running execution; the executions issue (4) adds the rest with its own migration.
 */
export const executions = sqliteTable(
  'executions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspaceId: workspaceIdColumn(),
    userId: text('user_id').notNull(),
    skillSlug: text('skill_slug').notNull(),
    status: text('status', { enum: EXECUTION_STATUSES }).notNull(),
    startedAt: integer('started_at').notNull(),
  },
  (t) => [index('executions_workspace_status_idx').on(t.workspaceId, t.status)],
);

/** Files a run produced (DECISIONS.md, Artifacts); the bytes live in R2 under `r2Key`. */
export const artifacts = sqliteTable(
  'artifacts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspaceId: workspaceIdColumn(),
    executionId: integer('execution_id'),
    name: text('name').notNull(),
    contentType: text('content_type').notNull(),
    size: integer('size').notNull(),
    r2Key: text('r2_key').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('artifacts_workspace_idx').on(t.workspaceId, t.id)],
);

export type ArtifactRow = typeof artifacts.$inferSelect;
