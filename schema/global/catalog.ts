import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { CATEGORIES } from '../categories';

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
    /** The eval results the catalog ships (JSON, workers/lib/catalog-evals.ts `ShippedEvals`), newest first. */
    evals: text('evals').notNull().default('[]'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('catalog_category_idx').on(t.category, t.id)],
);

export type CatalogSkillRow = typeof catalogSkills.$inferSelect;
