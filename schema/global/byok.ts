import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from './users';

export const BYOK_PROVIDERS = ['anthropic', 'openai'] as const;

/**
 * A user's own model-provider key (spec 2.7, 4.9 BYOK): one per user. Runs the user starts ride
 * on it and cost 0 Ds; its presence makes the tier `byokmode` (spec 3.7). The key is AES-GCM
 * ciphertext under ENCRYPTION_KEY, bound to the user; only the masked preview is ever shown.
 */
export const byokKeys = sqliteTable('byok_keys', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  provider: text('provider', { enum: BYOK_PROVIDERS }).notNull(),
  /** base64(iv || ciphertext || tag). */
  ciphertext: text('ciphertext').notNull(),
  keyPreview: text('key_preview').notNull(),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
});

export type ByokKeyRow = typeof byokKeys.$inferSelect;
