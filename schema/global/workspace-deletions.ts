import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { auditColumns } from '../audit-columns';
import { globalIdColumn } from '../row-ids';

/**
 * What a workspace deletion does, in order (workers/services/workspace-erasure.ts): each step is
 * done again whole after a crash, so the job records only the step it is at (and, in `objects`,
 * how far through the workspace's objects it got).
 */
export const DELETION_STEPS = ['credentials', 'cancel', 'directory', 'objects', 'storage', 'rows', 'records', 'done'] as const;
export type DeletionStep = (typeof DELETION_STEPS)[number];

export const DELETION_STATUSES = ['running', 'completed'] as const;

/**
 * A workspace's deletion (`DELETE /api/v1/workspaces/:id`): the job and its progress. In the
 * global database and without a foreign key, so it outlives the workspace and every row of it;
 * the person who asked reads it at `GET /api/v1/workspaces/:id/deletion`.
 */
export const workspaceDeletions = sqliteTable(
  'workspace_deletions',
  {
    /** UUIDv7: the job's public id. */
    id: text('id').primaryKey(),
    workspaceId: text('workspace_id').notNull().unique(),
    /** The workspace's name when the deletion was asked for (the confirmation typed back). */
    workspaceName: text('workspace_name').notNull(),
    /** The shard the directory named then: its rows are found there once the directory row is gone. */
    shard: integer('shard').notNull(),
    /** The person who asked; for a workspace deleted with an account, that account's anonymous id. */
    requestedBy: text('requested_by').notNull(),
    /** The account deletion this job is part of (`account_deletions.id`), if any: it goes on when the job completes. */
    accountDeletionId: text('account_deletion_id'),
    /** The members when the deletion was asked for (their memberships went then): whose credential gates forget. */
    memberIds: text('member_ids', { mode: 'json' }).$type<string[]>().notNull(),
    status: text('status', { enum: DELETION_STATUSES }).notNull(),
    step: text('step', { enum: DELETION_STEPS }).notNull(),
    /** In `objects`: the last execution id, then the last workflow run id, schedule id, trigger id, whose object was erased. */
    cursor: text('cursor', { mode: 'json' }).$type<{ execution?: number; run?: string; schedule?: string; trigger?: string }>(),
    /** Why the last attempt at a step failed (it is tried again); null once one succeeded. */
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    completedAt: integer('completed_at'),
  },
  (t) => [index('workspace_deletions_status_idx').on(t.status, t.updatedAt), index('workspace_deletions_account_idx').on(t.accountDeletionId)],
);

/**
 * The audit records of workspace deletions (`workspace.deletion_requested`, then
 * `workspace.deleted`) and of account deletions (`account.deletion_requested`, then
 * `account.deleted`, under the account's anonymous id in `workspace_id`): a workspace's own
 * audit log is on its shard and goes with it, so these are kept here, with the same columns, for
 * as long as the ledger is.
 */
export const workspaceDeletionAudit = sqliteTable(
  'workspace_deletion_audit',
  {
    id: globalIdColumn('workspace_deletion_audit'),
    workspaceId: text('workspace_id').notNull(),
    ...auditColumns(),
  },
  (t) => [index('workspace_deletion_audit_workspace_idx').on(t.workspaceId, t.id)],
);

export type WorkspaceDeletionRow = typeof workspaceDeletions.$inferSelect;
