import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { users } from './users';
import { workspaceIdColumn } from './workspaces';

/** The catalog's category ids: lower-case slugs (display names in workers/lib/categories.ts). */
export const CATEGORIES = ['general', 'communication', 'creative', 'design', 'development', 'documents', 'marketing', 'productivity', 'research'] as const;
export type Category = (typeof CATEGORIES)[number];

/** Where an installed skill came from. */
export const SKILL_SOURCES = ['catalog', 'authored', 'artifact', 'registry', 'archive'] as const;

/** The public marketplace (spec 4.1): one row per catalog skill, loaded by the catalog importer. */
export const catalogSkills = sqliteTable(
  'catalog_skills',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    slug: text('slug').notNull().unique(),
    name: text('name').notNull(),
    description: text('description').notNull(),
    category: text('category', { enum: CATEGORIES }).notNull(),
    prompt: text('prompt').notNull(),
    author: text('author').notNull(),
    version: text('version').notNull(),
    /** The public URL of the repository the skill came from; null when it has none. */
    repository: text('repository'),
    commitHash: text('commit_hash').notNull(),
    license: text('license'),
    contentChecksum: text('content_checksum').notNull(),
    /** R2 key of the bundle manifest (`manifests/<checksum>.json`). */
    storagePath: text('storage_path').notNull(),
    filesCount: integer('files_count').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('catalog_category_idx').on(t.category, t.id)],
);

/** A skill installed into (or authored in) a workspace. Its content lives in its versions. */
export const skills = sqliteTable(
  'skills',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspaceId: workspaceIdColumn(),
    slug: text('slug').notNull(),
    source: text('source', { enum: SKILL_SOURCES }).notNull(),
    /** From the catalog (or registry); null for authored skills. */
    repository: text('repository'),
    commitHash: text('commit_hash'),
    /** The version the live bundle serves. */
    activeVersionId: integer('active_version_id'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('skills_workspace_slug_idx').on(t.workspaceId, t.slug)],
);

/** Every write of a skill's content (spec 2.3, skill version record). Never edited. */
export const skillVersions = sqliteTable(
  'skill_versions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspaceId: workspaceIdColumn(),
    skillId: integer('skill_id')
      .notNull()
      .references(() => skills.id, { onDelete: 'cascade' }),
    versionNumber: integer('version_number').notNull(),
    contentChecksum: text('content_checksum').notNull(),
    storagePath: text('storage_path').notNull(),
    bundleType: text('bundle_type').notNull(),
    filesCount: integer('files_count').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull(),
    category: text('category').notNull(),
    prompt: text('prompt').notNull(),
    createdBy: text('created_by')
      .notNull()
      .references(() => users.id),
    note: text('note'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('skill_versions_number_idx').on(t.skillId, t.versionNumber)],
);

export type CatalogSkillRow = typeof catalogSkills.$inferSelect;
export type SkillRow = typeof skills.$inferSelect;
export type SkillVersionRow = typeof skillVersions.$inferSelect;
