import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const ACCOUNT_DELETION_STATUSES = ['running', 'completed'] as const;

/**
 * What the job needs of the account until it completes (the users row is scrubbed at the
 * request): whose rows to find, and the email and name to take out of the workspaces the person
 * leaves. Null once the job completed.
 */
export type ErasedAccount = { userId: string; email: string; name: string };

/**
 * An account's deletion (`DELETE /api/v1/profile`; workers/services/account-deletion.ts): each of
 * the workspaces going with it is a workspace deletion job (`workspace_deletions.account_deletion_id`);
 * once they all completed, the job anonymises what stays (account-erasure.ts). No foreign key and
 * no personal data once completed: the record outlives the account. Read with the status token
 * shown once in the answer, since every credential of the account is gone.
 */
export const accountDeletions = sqliteTable(
  'account_deletions',
  {
    /** UUIDv7: the job's public id. */
    id: text('id').primaryKey(),
    /** SHA-256 of the status token (`adel_…`). */
    tokenHash: text('token_hash').notNull().unique(),
    /** What replaces the user id in what stays: the ledger, records of shared workspaces, the deletion audit. */
    anonymousId: text('anonymous_id').notNull().unique(),
    account: text('account', { mode: 'json' }).$type<ErasedAccount>(),
    /** The workspaces deleted with the account (each one a workspace deletion job). */
    workspaceIds: text('workspace_ids', { mode: 'json' }).$type<string[]>().notNull(),
    /** The workspaces the person left (their memberships went with the request): their records there are anonymised. */
    keptWorkspaceIds: text('kept_workspace_ids', { mode: 'json' }).$type<string[]>().notNull(),
    status: text('status', { enum: ACCOUNT_DELETION_STATUSES }).notNull(),
    /** Why the last attempt to finish failed (it is tried again); null once one succeeded. */
    lastError: text('last_error'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    completedAt: integer('completed_at'),
  },
  (t) => [index('account_deletions_status_idx').on(t.status, t.updatedAt)],
);

export type AccountDeletionRow = typeof accountDeletions.$inferSelect;
