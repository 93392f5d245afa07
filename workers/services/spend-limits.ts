import { and, eq, sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { executions, spendLimits, workspaceSpend, type SpendLimitsRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb, ShardDb } from '../env';
import { AppError } from '../errors';
import { now, toIso } from '../lib/clock';
import { Credits, ds, hundredthsOf } from '../lib/money';
import { recordChange } from './audit';
import { RUN_BUDGET } from './credits';
import { requireCurrentWorkspace, requireOwnedWorkspace } from './workspaces';

/**
 * Spend limits of a workspace and budgets of a run (docs/limits.md). Amounts are stored in
 * hundredths of a Ds, like the ledger, and shown in Ds. What a workspace's runs were charged is
 * counted on its shard per UTC month and day (`workspace_spend`); a working execution counts
 * with its whole turn allowance until its turn is settled. A turn's claim sizes that allowance
 * to the least of the run's budget left, each limit's room and RUN_BUDGET, in the statement
 * that takes its slot, so concurrent starts never share the same room.
 */

/** A run's budget in Ds, as the claim takes it (hundredths); none when not given. */
export const budgetOf = (credits: number | undefined) => (credits === undefined ? undefined : hundredthsOf(credits));

/** A run's budget: the most its turns together may be charged, in Ds. */
export const RunBudget = Credits.optional().describe(
  'The most this run may be charged over all its turns, in Ds: the turn stops with limit_reached when it is spent; a later user.message may raise it',
);

export const SpendLimitsBody = z.object({
  monthly: Credits.nullable().optional().describe('Most the workspace may be charged in a calendar month (UTC), in Ds; null for none'),
  daily: Credits.nullable().optional().describe('Most the workspace may be charged in a day (UTC), in Ds; null for none'),
});
export type SpendLimitsBody = z.infer<typeof SpendLimitsBody>;

const Usage = z.object({ used: z.number(), resetsAt: z.string() });
export const SpendLimits = z.object({
  monthly: z.number().nullable(),
  daily: z.number().nullable(),
  usage: z.object({ month: Usage, day: Usage }).describe('What the workspace was charged this month and today, and when each count starts again'),
});
export type SpendLimits = z.infer<typeof SpendLimits>;

export type LimitKind = 'monthly' | 'daily';
const LIMIT_KINDS: readonly LimitKind[] = ['monthly', 'daily'];

/** The UTC periods `at` falls in: their keys in `workspace_spend` and when each ends. */
export function periodsAt(at: number) {
  const d = new Date(at);
  const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
  const pad = (n: number) => String(n).padStart(2, '0');
  return {
    monthly: { key: `month:${y}-${pad(m + 1)}`, resetsAt: Date.UTC(y, m + 1, 1) },
    daily: { key: `day:${y}-${pad(m + 1)}-${pad(day)}`, resetsAt: Date.UTC(y, m, day + 1) },
  } satisfies Record<LimitKind, { key: string; resetsAt: number }>;
}

const spentIn = (workspaceId: SQL | string, period: string) =>
  sql<number>`COALESCE((SELECT ${workspaceSpend.spent} FROM ${workspaceSpend} WHERE ${workspaceSpend.workspaceId} = ${workspaceId} AND ${workspaceSpend.period} = ${period}), 0)`;

/** What the workspace's working executions may still be charged: their turns' whole allowances. */
const inFlight = (workspaceId: string) =>
  sql<number>`(SELECT COALESCE(SUM(${executions.turnAllowance}), 0) FROM ${executions} WHERE ${executions.workspaceId} = ${workspaceId} AND ${executions.status} = 'working')`;

/** Larger than any amount of hundredths: the room of a limit that is not set. */
const UNLIMITED = 9e15;

/**
 * The turn allowance a claim of an execution of `workspaceId` writes, as one SQL expression
 * over the row being claimed: its budget left (`budget`, or the row's own), each limit's room
 * this period, and RUN_BUDGET, whichever is least. Zero or less: the claim must not take.
 */
export function allowanceSql(workspaceId: string, budget: number | undefined): SQL<number> {
  const periods = periodsAt(now());
  const limitOf = (kind: LimitKind) => sql`(SELECT ${spendLimits[kind]} FROM ${spendLimits} WHERE ${spendLimits.workspaceId} = ${workspaceId})`;
  const room = (kind: LimitKind) => sql`COALESCE(${limitOf(kind)} - ${spentIn(workspaceId, periods[kind].key)} - ${inFlight(workspaceId)}, ${UNLIMITED})`;
  const budgetLeft = sql`COALESCE(${budget ?? null}, ${executions.budget}) - ${executions.cost}`;
  return sql<number>`MIN(${RUN_BUDGET}, COALESCE(${budgetLeft}, ${UNLIMITED}), ${room('monthly')}, ${room('daily')})`;
}

/**
 * Adds a settled turn's charge to its workspace's month and day, for the closing record's batch:
 * each statement adds only while the execution is still in the turn (`open`), and must come
 * before the statement that ends the turn.
 */
export function spendStatements(db: ShardDb, executionId: number, open: SQL | undefined, charged: number) {
  const periods = periodsAt(now());
  return LIMIT_KINDS.map((kind) =>
    db
      .insert(workspaceSpend)
      .select(
        db
          .select({
            workspaceId: executions.workspaceId,
            period: sql<string>`${periods[kind].key}`.as('period'),
            spent: sql<number>`${charged}`.as('spent'),
          })
          .from(executions)
          .where(and(eq(executions.id, executionId), open)),
      )
      .onConflictDoUpdate({ target: [workspaceSpend.workspaceId, workspaceSpend.period], set: { spent: sql`${workspaceSpend.spent} + excluded.spent` } }),
  );
}

/** Deletes counts of periods that ended before `before` (epoch ms): the hourly housekeeping keeps this month and today. */
export async function forgetPastSpend(db: ShardDb, before = now()) {
  const { monthly, daily } = periodsAt(before);
  await db
    .delete(workspaceSpend)
    .where(
      sql`(${workspaceSpend.period} LIKE 'month:%' AND ${workspaceSpend.period} < ${monthly.key}) OR (${workspaceSpend.period} LIKE 'day:%' AND ${workspaceSpend.period} < ${daily.key})`,
    );
}

/** The workspace's limits and what counts against them now (settled charges plus working turns' allowances). */
async function standing(db: ShardDb, workspaceId: string) {
  const periods = periodsAt(now());
  const [[limits], [counted]] = await db.batch([
    db.select().from(spendLimits).where(eq(spendLimits.workspaceId, workspaceId)).limit(1),
    db
      .select({
        // Named, or two subqueries of the same text would share one column of the answer.
        month: spentIn(workspaceId, periods.monthly.key).as('month'),
        day: spentIn(workspaceId, periods.daily.key).as('day'),
        inFlight: inFlight(workspaceId).as('in_flight'),
      })
      .from(sql`(SELECT 1)`),
  ]);
  return { limits, periods, spent: { monthly: counted!.month, daily: counted!.day }, inFlight: counted!.inFlight };
}

const present = (limits: SpendLimitsRow | undefined, state: Awaited<ReturnType<typeof standing>>): SpendLimits => ({
  monthly: limits?.monthly == null ? null : ds(limits.monthly),
  daily: limits?.daily == null ? null : ds(limits.daily),
  usage: {
    month: { used: ds(state.spent.monthly), resetsAt: toIso(state.periods.monthly.resetsAt) },
    day: { used: ds(state.spent.daily), resetsAt: toIso(state.periods.daily.resetsAt) },
  },
});

export async function getSpendLimits(db: ShardDb, globalDb: GlobalDb, principal: Principal, workspace: string): Promise<SpendLimits> {
  const ws = await requireCurrentWorkspace(globalDb, principal, workspace);
  const state = await standing(db, ws.id);
  return present(state.limits, state);
}

/** Sets or clears (null) the limits named in `patch`; owners only. A limit below what is already spent stops new runs until it resets. */
export async function setSpendLimits(db: ShardDb, globalDb: GlobalDb, principal: Principal, workspace: string, patch: SpendLimitsBody): Promise<SpendLimits> {
  const ws = await requireOwnedWorkspace(globalDb, principal, workspace, 'Only the workspace owner can change spend limits');
  const changed = LIMIT_KINDS.filter((kind) => patch[kind] !== undefined);
  if (changed.length > 0) {
    const set = Object.fromEntries(changed.map((kind) => [kind, patch[kind] === null ? null : hundredthsOf(patch[kind]!)]));
    await db.batch([
      db
        .insert(spendLimits)
        .values({ workspaceId: ws.id, ...set, updatedAt: now() })
        .onConflictDoUpdate({ target: spendLimits.workspaceId, set: { ...set, updatedAt: now() } }),
      ...recordChange(db, principal, {
        action: 'workspace.limits_updated',
        resourceType: 'workspace',
        resourceId: ws.id,
        metadata: Object.fromEntries(changed.map((kind) => [kind, patch[kind]])),
        activity: `Spend limits changed: ${changed.map((kind) => `${kind} ${patch[kind] === null ? 'none' : `${patch[kind]} Ds`}`).join(', ')}`,
      }),
    ]);
  }
  const state = await standing(db, ws.id);
  return present(state.limits, state);
}

/**
 * Why a claim of `execution` found no allowance, as the 402 to answer, or null when it has
 * some (the claim failed for another reason). The run's own budget is named first: raising it
 * is the caller's to do.
 */
export async function spendRefusal(
  db: ShardDb,
  execution: { workspaceId: string; cost: number; budget: number | null },
  budget?: number,
): Promise<AppError | null> {
  const runBudget = budget ?? execution.budget;
  if (runBudget !== null && runBudget - execution.cost <= 0)
    return new AppError('INSUFFICIENT_CREDITS', 402, `The run's budget of ${ds(runBudget)} Ds is spent; send a higher budget to continue`, {
      limit: 'budget',
      budget: ds(runBudget),
      used: ds(execution.cost),
    });
  const state = await standing(db, execution.workspaceId);
  for (const kind of LIMIT_KINDS) {
    const limit = state.limits?.[kind];
    if (limit == null || limit - state.spent[kind] - state.inFlight > 0) continue;
    const resetsAt = toIso(state.periods[kind].resetsAt);
    return new AppError(
      'INSUFFICIENT_CREDITS',
      402,
      `The workspace's ${kind} spend limit of ${ds(limit)} Ds is reached (${ds(state.spent[kind])} Ds charged, ${ds(state.inFlight)} Ds held by running work); it resets at ${resetsAt}`,
      { limit: kind, limitAmount: ds(limit), used: ds(state.spent[kind]), held: ds(state.inFlight), resetsAt },
    );
  }
  return null;
}
