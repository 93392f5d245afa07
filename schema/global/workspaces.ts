import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from './users';

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export const workspaces = sqliteTable('workspaces', {
  /** UUIDv7: opaque, ordered by creation. */
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  slug: text('slug').notNull().unique(),
  /** The workspace made at sign-up; session callers default to it. */
  personal: integer('personal', { mode: 'boolean' }).notNull().default(false),
  createdBy: text('created_by')
    .notNull()
    .references(() => users.id),
  createdAt: integer('created_at').notNull(),
});

/** The owning workspace of a tenant row; the row goes when the workspace goes. */
export const workspaceIdColumn = () =>
  text('workspace_id')
    .notNull()
    .references(() => workspaces.id, { onDelete: 'cascade' });

export const members = sqliteTable(
  'workspace_members',
  {
    workspaceId: workspaceIdColumn(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ROLES }).notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId] }), index('members_user_idx').on(t.userId)],
);

export const INVITATION_STATUSES = ['pending', 'accepted', 'revoked'] as const;

export const invitations = sqliteTable(
  'invitations',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspaceId: workspaceIdColumn(),
    /** Lower-cased; only a user signed in with this email can accept. */
    email: text('email').notNull(),
    role: text('role', { enum: ROLES }).notNull(),
    /** SHA-256 of the acceptance token, which is shown once to the inviter. */
    tokenHash: text('token_hash').notNull().unique(),
    status: text('status', { enum: INVITATION_STATUSES }).notNull(),
    invitedBy: text('invited_by')
      .notNull()
      .references(() => users.id),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    acceptedAt: integer('accepted_at'),
  },
  (t) => [index('invitations_workspace_idx').on(t.workspaceId, t.id)],
);

export type WorkspaceRow = typeof workspaces.$inferSelect;
export type MemberRow = typeof members.$inferSelect;
export type InvitationRow = typeof invitations.$inferSelect;
