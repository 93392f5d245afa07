import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from './users';
import { workspaceIdColumn } from './workspaces';

export const API_KEY_STATUSES = ['active', 'unactivated', 'revoked'] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The one workspace the key acts in (spec 5.1); PUT /workspaces/current rebinds it. */
    workspaceId: workspaceIdColumn(),
    name: text('name').notNull(),
    /** SHA-256 of the full key; the key is shown once at creation and never stored. */
    keyHash: text('key_hash').notNull().unique(),
    keyPreview: text('key_preview').notNull(),
    /** JSON array of scope names; `["*"]` for legacy full-access keys. */
    scopes: text('scopes', { mode: 'json' }).$type<string[]>().notNull(),
    status: text('status', { enum: API_KEY_STATUSES }).notNull(),
    createdAt: integer('created_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('api_keys_workspace_idx').on(t.workspaceId, t.id)],
);

export type ApiKeyRow = typeof apiKeys.$inferSelect;
