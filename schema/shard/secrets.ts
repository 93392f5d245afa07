import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { skills } from './skills';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/** Workspace secrets (spec 4.5). The value is AES-GCM ciphertext under ENCRYPTION_KEY, fresh IV each write. */
export const secrets = sqliteTable(
  'secrets',
  {
    id: shardIdColumn('secrets'),
    workspaceId: shardWorkspaceIdColumn(),
    /** Environment-variable shaped, unique per workspace. */
    name: text('name').notNull(),
    /** base64(iv || ciphertext || tag). */
    ciphertext: text('ciphertext').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('secrets_workspace_name_idx').on(t.workspaceId, t.name)],
);

/** A secret handed to a skill's runs as an environment variable (spec 4.2, skill secret bindings). */
export const skillSecretBindings = sqliteTable(
  'skill_secret_bindings',
  {
    id: shardIdColumn('skill_secret_bindings'),
    workspaceId: shardWorkspaceIdColumn(),
    skillId: integer('skill_id')
      .notNull()
      .references(() => skills.id, { onDelete: 'cascade' }),
    secretId: integer('secret_id')
      .notNull()
      .references(() => secrets.id, { onDelete: 'cascade' }),
    envVar: text('env_var').notNull(),
    /** The origins (`https://host[:port]`) a run may send the value to, in a request header only; none: never sent. */
    origins: text('origins', { mode: 'json' }).$type<string[]>().notNull().default([]),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('bindings_skill_env_idx').on(t.skillId, t.envVar)],
);

export type SecretRow = typeof secrets.$inferSelect;
export type SkillSecretBindingRow = typeof skillSecretBindings.$inferSelect;
