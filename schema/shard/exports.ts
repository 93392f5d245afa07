import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/**
 * A workspace export (docs/export.md): a job that writes one zip archive of the workspace to R2.
 * The job's WorkspaceExport object writes the archive in slices and renews `lease_until` with
 * each; past it, the hourly housekeeping wakes the object. A ready archive is deleted, with its
 * row, at `expires_at`.
 */
export const workspaceExports = sqliteTable(
  'workspace_exports',
  {
    id: shardIdColumn('workspace_exports'),
    workspaceId: shardWorkspaceIdColumn(),
    status: text('status', { enum: ['pending', 'running', 'ready', 'failed'] }).notNull(),
    requestedBy: text('requested_by').notNull(),
    leaseUntil: integer('lease_until'),
    /** The archive's R2 key, once ready. */
    r2Key: text('r2_key'),
    size: integer('size'),
    error: text('error'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
    expiresAt: integer('expires_at'),
  },
  (t) => [
    index('workspace_exports_workspace_idx').on(t.workspaceId, t.id),
    // The housekeeping's: jobs to wake, and archives past their expiry.
    index('workspace_exports_status_lease_idx').on(t.status, t.leaseUntil),
    index('workspace_exports_expires_idx').on(t.expiresAt),
  ],
);

export type WorkspaceExportRow = typeof workspaceExports.$inferSelect;
