import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/** Where an installed skill came from. */
export const SKILL_SOURCES = ['catalog', 'authored', 'artifact', 'registry', 'archive'] as const;

/** A skill installed into (or authored in) a workspace. Its content and provenance live in its versions. */
export const skills = sqliteTable(
  'skills',
  {
    id: shardIdColumn('skills'),
    workspaceId: shardWorkspaceIdColumn(),
    slug: text('slug').notNull(),
    /** The version the live bundle serves; the skill's content and provenance are that version's. */
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
    id: shardIdColumn('skill_versions'),
    workspaceId: shardWorkspaceIdColumn(),
    skillId: integer('skill_id')
      .notNull()
      .references(() => skills.id, { onDelete: 'cascade' }),
    versionNumber: integer('version_number').notNull(),
    /**
     * Where this version came from: a version held back by the guard carries its own, so the
     * skill shows the provenance of the version that is current, not of the latest write.
     */
    source: text('source', { enum: SKILL_SOURCES }).notNull(),
    /** From the catalog (or a registry or archive); null for authored and artifact versions. */
    repository: text('repository'),
    commitHash: text('commit_hash'),
    contentChecksum: text('content_checksum').notNull(),
    storagePath: text('storage_path').notNull(),
    bundleType: text('bundle_type').notNull(),
    filesCount: integer('files_count').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull(),
    category: text('category').notNull(),
    prompt: text('prompt').notNull(),
    createdBy: text('created_by').notNull(),
    note: text('note'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('skill_versions_number_idx').on(t.skillId, t.versionNumber)],
);

export type SkillRow = typeof skills.$inferSelect;
export type SkillVersionRow = typeof skillVersions.$inferSelect;
