import { and, eq, gt, type SQL, sql } from 'drizzle-orm';
import type { BatchItem } from 'drizzle-orm/batch';
import { agentConsents, deviceActivations, permissionRequests } from '../../schema';
import type { GlobalDb } from '../env';
import { AppError, conflict } from '../errors';
import { now } from '../lib/clock';
import { isConstraintFailure, isUniqueViolation } from '../lib/db-errors';
import { newUserCode, normalizeUserCode, userCodeHash } from '../lib/user-codes';

/**
 * A pending decision: something a person approves or denies within a window, identified to them
 * by a short human code. Agent consents, permission requests and device activations are all
 * one: created with a fresh code, decided once (a racing second decision changes nothing),
 * polled by the agent, and expired when the window closes undecided.
 */

type DecisionTable = typeof agentConsents | typeof permissionRequests | typeof deviceActivations;

interface Windowed<S extends string> {
  status: S;
  expiresAt: number;
}

/** A row's state as people see it: a pending row past its window is `expired`. */
export const decisionOf = <S extends string>(row: Windowed<S>): S | 'expired' => (row.status === 'pending' && row.expiresAt <= now() ? 'expired' : row.status);

/** 410 EXPIRED: the window closed before anyone decided. */
export const expiredDecision = (what: string) => new AppError('EXPIRED', 410, `This ${what} timed out before it was decided`);

/** 409 for a decision already taken, 410 once the window closed. */
export function requirePending(row: Windowed<string>, what: string): void {
  const decision = decisionOf(row);
  if (decision === 'expired') throw expiredDecision(what);
  if (decision !== 'pending') throw conflict(`This ${what} is no longer pending: it was ${decision}`, { status: decision });
}

/**
 * Creates a row keyed by a fresh human code (shown as `XXXX-XXXX`, stored hashed), drawing
 * another code on the rare collision with a live one. Answers `insert`'s result and the code.
 */
export async function withFreshCode<T>(insert: (codeHash: string) => Promise<T>): Promise<{ code: string; result: T }> {
  for (let attempt = 0; ; attempt++) {
    const code = newUserCode();
    try {
      return { code, result: await insert(await userCodeHash(normalizeUserCode(code)!)) };
    } catch (error) {
      if (attempt < 2 && isUniqueViolation(error)) continue;
      throw error;
    }
  }
}

interface Decide<S extends string> {
  table: DecisionTable;
  id: string | number;
  /** The decided status, the decision's time and the other columns the decision sets. */
  status: S;
  t: number;
  set?: Record<string, unknown>;
  /**
   * The audit (and activity) rows of the decision, given their resource id: a subquery that
   * finds the row only if this very decision landed, so a lost race makes it NULL.
   */
  audit: (resourceId: SQL) => BatchItem<'sqlite'>[];
  /** What the decision changes elsewhere (a key's scopes), in the same batch. */
  effects?: BatchItem<'sqlite'>[];
  /** What the row is, for messages ("consent"). */
  what: string;
  /** Throws the answer when another decision won the race; by default 409 naming its outcome, or 410. */
  lost?: () => Promise<never>;
}

async function lostRace(db: GlobalDb, { table, id, what }: Decide<string>): Promise<never> {
  const [current] = await db
    .select({ status: table.status, expiresAt: table.expiresAt })
    .from(table as typeof agentConsents)
    .where(eq(table.id, id as never));
  requirePending(current!, what);
  throw conflict(`This ${what} was decided by another request`);
}

/**
 * Takes a decision exactly once: one batch with the conditional update (still pending, window
 * open), the audit rows and the effects. When a racing decision won, the audit row's resource
 * id is NULL, its NOT NULL constraint (change_outbox.resource_id) fails and the whole batch rolls back, so a decision is
 * taken, applied and audited once.
 */
export async function decideOnce<S extends string>(db: GlobalDb, decision: Decide<S>): Promise<void> {
  const { table, id, status, t } = decision;
  const won = sql`(SELECT CAST(${table.id} AS TEXT) FROM ${table} WHERE ${table.id} = ${id} AND ${table.status} = ${status} AND ${table.decidedAt} = ${t})`;
  // The three tables share these columns; drizzle cannot type an update over their union.
  const update = db
    .update(table as typeof agentConsents)
    .set({ ...decision.set, status, decidedAt: t } as never)
    .where(and(eq(table.id, id as never), eq(table.status, 'pending'), gt(table.expiresAt, t)));
  try {
    await db.batch([update, ...decision.audit(won), ...(decision.effects ?? [])]);
  } catch (error) {
    if (isConstraintFailure(error, 'NOT NULL', 'change_outbox.resource_id')) await (decision.lost ?? (() => lostRace(db, decision)))();
    throw error;
  }
}
