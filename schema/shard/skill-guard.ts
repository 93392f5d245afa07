import { index, integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { shardWorkspaceIdColumn } from './columns';
import { skillVersions } from './skills';

/**
 * Whether a workspace's owner requires a new version of an authored skill to score at least as
 * well as the version it would replace before it becomes current (docs/skills.md, "Guarding a
 * version"). No row: off.
 */
export const skillGuardSettings = sqliteTable('skill_guard_settings', {
  workspaceId: shardWorkspaceIdColumn().primaryKey(),
  enabled: integer('enabled', { mode: 'boolean' }).notNull(),
  updatedAt: integer('updated_at').notNull(),
});

export const GUARD_STATUSES = ['evaluating', 'accepted', 'refused', 'overridden'] as const;
export type GuardStatus = (typeof GUARD_STATUSES)[number];

/**
 * A version the guard held back when it was written: the eval measuring it (`evalId`) against
 * the version it would replace (`baselineEvalId`, that version's eval on the same cases and
 * model), and the outcome with its numbers once both ended.
 */
export const skillVersionGuards = sqliteTable(
  'skill_version_guards',
  {
    skillVersionId: integer('skill_version_id')
      .primaryKey()
      .references(() => skillVersions.id, { onDelete: 'cascade' }),
    workspaceId: shardWorkspaceIdColumn(),
    /** The version current when it was written: the one it must not score below. */
    previousVersionNumber: integer('previous_version_number').notNull(),
    status: text('status', { enum: GUARD_STATUSES }).notNull(),
    evalId: integer('eval_id').notNull(),
    baselineEvalId: integer('baseline_eval_id').notNull(),
    /** Pass rate with the skill of the new version, and the previous version's it had to reach. */
    passRate: real('pass_rate'),
    required: real('required'),
    /** Why it was refused, or who overrode it. */
    note: text('note'),
    decidedAt: integer('decided_at'),
  },
  (t) => [index('skill_version_guards_status_idx').on(t.workspaceId, t.status)],
);

export type SkillVersionGuardRow = typeof skillVersionGuards.$inferSelect;
