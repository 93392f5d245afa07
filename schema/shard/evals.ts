import { index, integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';
import { skills } from './skills';

export const EVAL_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'stopped'] as const;
export type EvalStatus = (typeof EVAL_STATUSES)[number];

/**
 * Eval jobs of a skill version (docs/skills.md, Evals): each case run with the skill and without
 * it, graded. The job's `SkillEval` object drives it and writes this row at every change;
 * `report` is the per-case result (JSON), the other columns its totals.
 */
export const skillEvals = sqliteTable(
  'skill_evals',
  {
    id: shardIdColumn('skill_evals'),
    workspaceId: shardWorkspaceIdColumn(),
    skillId: integer('skill_id')
      .notNull()
      .references(() => skills.id, { onDelete: 'cascade' }),
    skillSlug: text('skill_slug').notNull(),
    skillVersionId: integer('skill_version_id').notNull(),
    versionNumber: integer('version_number').notNull(),
    /** Who started it: the runs are theirs and charged to them. */
    userId: text('user_id').notNull(),
    status: text('status', { enum: EVAL_STATUSES }).notNull(),
    /** Why a `failed` or `stopped` job ended (`budget` for the budget spent). */
    stopReason: text('stop_reason'),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    repetitions: integer('repetitions').notNull(),
    /** Most the job may be charged (hundredths of a Ds), when its starter set one. */
    budget: integer('budget'),
    casesCount: integer('cases_count').notNull(),
    /** SHA-256 of the cases and their run inputs: two evals with the same one measured the same thing. */
    casesChecksum: text('cases_checksum').notNull(),
    /** Fraction of graded runs that passed, with and without the skill; null until one is graded. */
    passRateWith: real('pass_rate_with'),
    passRateWithout: real('pass_rate_without'),
    /** Totals over every run of the job, graders included: hundredths of a Ds, tokens, milliseconds. */
    cost: integer('cost').notNull().default(0),
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    elapsedMs: integer('elapsed_ms').notNull().default(0),
    report: text('report').notNull().default('[]'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
  },
  (t) => [index('skill_evals_skill_idx').on(t.workspaceId, t.skillId, t.id), index('skill_evals_version_idx').on(t.skillVersionId, t.id)],
);

export type SkillEvalRow = typeof skillEvals.$inferSelect;
