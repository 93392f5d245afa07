import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { shardWorkspaceIdColumn } from './columns';

/**
 * A workspace's spend limits (docs/limits.md), in hundredths of a Ds; a null column, or no
 * row, is no limit. Kept with the workspace: a run's claim checks them in the same statement
 * that takes its slot.
 */
export const spendLimits = sqliteTable('spend_limits', {
  workspaceId: shardWorkspaceIdColumn().primaryKey(),
  monthly: integer('monthly'),
  daily: integer('daily'),
  updatedAt: integer('updated_at').notNull(),
});

export type SpendLimitsRow = typeof spendLimits.$inferSelect;

/**
 * What a workspace's runs were charged in one calendar period (UTC): `month:2026-11` or
 * `day:2026-11-28`. Added to by each turn's closing record, in its batch and only while the
 * execution is still in that turn, so a closing sent again adds nothing. Every run counts,
 * whoever launched it, so a limit set mid-month counts what was already spent.
 */
export const workspaceSpend = sqliteTable(
  'workspace_spend',
  {
    workspaceId: shardWorkspaceIdColumn(),
    period: text('period').notNull(),
    /** Hundredths of a Ds. */
    spent: integer('spent').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.period] })],
);
