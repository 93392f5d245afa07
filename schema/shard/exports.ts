import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/**
 * A workspace export (docs/export.md): a job that writes one zip archive of the workspace to R2.
 * An attempt claims the job until `lease_until`; one that died holding it is started again from
 * the beginning by the hourly housekeeping, up to a few times. A ready archive is deleted, with
 * its row, at `expires_at`.
 */
export const workspaceExports = sqliteTable(
  'workspace_exports',
  {
    id: shardIdColumn('workspace_exports'),
    workspaceId: shardWorkspaceIdColumn(),
    status: text('status', { enum: ['pending', 'running', 'ready', 'failed'] }).notNull(),
    requestedBy: text('requested_by').notNull(),
    /** Attempts started so far; each writes its own object, so a late one cannot replace another's archive. */
    attempts: integer('attempts').notNull().default(0),
    leaseUntil: integer('lease_until'),
    /** The R2 multipart upload of the running attempt, aborted when another attempt takes over. */
    uploadId: text('upload_id'),
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
    // The housekeeping's: jobs to start again, and archives past their expiry.
    index('workspace_exports_status_lease_idx').on(t.status, t.leaseUntil),
    index('workspace_exports_expires_idx').on(t.expiresAt),
  ],
);

export type WorkspaceExportRow = typeof workspaceExports.$inferSelect;
