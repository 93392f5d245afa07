import { desc, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { creditAccounts, creditReservations, creditTransactions, type CreditTransactionRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { AppError } from '../errors';
import { now, toIso } from '../lib/clock';

/** DECISIONS.md: starting a run needs at least 50 Ds available (hundredths here). */
export const MIN_RUN_BALANCE = 5000;
/** What a run holds while it works: its spending limit (hundredths; 200 Ds). */
export const RUN_BUDGET = 20_000;
const TRANSACTIONS_SHOWN = 50;

const ds = (hundredths: number) => hundredths / 100;

/** Recomputes the cached totals from the source tables; part of every change's batch. */
const recompute = (db: Db, userId: string) =>
  db
    .update(creditAccounts)
    .set({
      balance: sql`(SELECT COALESCE(SUM(${creditTransactions.amount}), 0) FROM ${creditTransactions} WHERE ${creditTransactions.userId} = ${userId})`,
      reserved: sql`(SELECT COALESCE(SUM(${creditReservations.amount}), 0) FROM ${creditReservations} WHERE ${creditReservations.userId} = ${userId} AND ${creditReservations.settledAt} IS NULL)`,
      totalSpent: sql`(SELECT COALESCE(-SUM(${creditTransactions.amount}), 0) FROM ${creditTransactions} WHERE ${creditTransactions.userId} = ${userId} AND ${creditTransactions.type} = 'usage')`,
      updatedAt: now(),
    })
    .where(eq(creditAccounts.userId, userId));

const ensureAccount = (db: Db, userId: string) =>
  db.insert(creditAccounts).values({ userId, updatedAt: now() }).onConflictDoNothing();

interface Grant {
  userId: string;
  /** Hundredths of a Ds, positive. */
  amount: number;
  description: string;
  businessKey: string;
  paymentSessionId?: string | null;
}

const grantInsert = (db: Db, grant: Grant) =>
  db
    .insert(creditTransactions)
    .values({
      userId: grant.userId,
      amount: grant.amount,
      type: 'purchase',
      description: grant.description,
      executionId: null,
      paymentSessionId: grant.paymentSessionId ?? null,
      businessKey: grant.businessKey,
      createdAt: now(),
    })
    .onConflictDoNothing({ target: creditTransactions.businessKey })
    .returning({ id: creditTransactions.id });

/** For the sign-up batch: the account and the welcome grant (WELCOME_CREDITS). */
export const welcomeGrantStatements = (db: Db, userId: string, amount: number) =>
  [
    ensureAccount(db, userId),
    grantInsert(db, { userId, amount, description: 'Welcome grant', businessKey: `welcome:${userId}` }),
    recompute(db, userId),
  ] as const;

/** Adds credits once per business key (a replayed webhook grants nothing more). */
export async function grantCredits(db: Db, grant: Grant): Promise<{ granted: boolean }> {
  const [, inserted] = await db.batch([ensureAccount(db, grant.userId), grantInsert(db, grant), recompute(db, grant.userId)]);
  return { granted: inserted.length > 0 };
}

async function account(db: Db, userId: string) {
  const [row] = await db.select().from(creditAccounts).where(eq(creditAccounts.userId, userId)).limit(1);
  return row ?? { balance: 0, reserved: 0, totalSpent: 0, isAdmin: false };
}

/** 402 INSUFFICIENT_CREDITS, with the numbers the skill-run route shows flat (spec 7.3). */
export async function insufficientCredits(db: Db, userId: string): Promise<AppError> {
  const { balance, reserved } = await account(db, userId);
  return new AppError('INSUFFICIENT_CREDITS', 402, `Starting a run needs at least ${ds(MIN_RUN_BALANCE)} Ds available`, {
    balance: ds(balance),
    availableBalance: ds(balance - reserved),
    minimumRequired: ds(MIN_RUN_BALANCE),
  });
}

/** Gives back a hold that was not used (the run did not start). */
export const releaseReservation = (db: Db, userId: string, turnKey: string) =>
  db.batch([db.delete(creditReservations).where(eq(creditReservations.executionId, turnKey)), recompute(db, userId)]);

/**
 * Holds up to `max` of the user's available credits for one turn (`turnKey`): the insert
 * computes the amount from the account in SQL and the recompute runs in the same batch, and
 * D1 runs batches one at a time, so two holds never both take the same credits. Answers the
 * amount held (0 when nothing was available).
 */
export async function reserveCredits(db: Db, userId: string, turnKey: string, max: number): Promise<number> {
  const available = sql`(SELECT ${creditAccounts.balance} - ${creditAccounts.reserved} FROM ${creditAccounts} WHERE ${creditAccounts.userId} = ${userId})`;
  const [, [row]] = await db.batch([
    ensureAccount(db, userId),
    db
      .insert(creditReservations)
      .values({ userId, executionId: turnKey, amount: sql`MAX(0, MIN(${max}, ${available}))`, createdAt: now() })
      .returning({ amount: creditReservations.amount }),
    recompute(db, userId),
  ]);
  return row?.amount ?? 0;
}

/**
 * Ends a turn's hold and charges its cost, capped so the balance never goes below 0. A cost of
 * 0 is still recorded (BYOK runs, later). Idempotent per turn.
 */
export async function settleTurn(
  db: Db,
  settlement: { userId: string; turnKey: string; executionId: string; cost: number; description: string },
): Promise<void> {
  const { userId, turnKey } = settlement;
  const held = sql`COALESCE((SELECT ${creditReservations.amount} FROM ${creditReservations} WHERE ${creditReservations.executionId} = ${turnKey} AND ${creditReservations.settledAt} IS NULL), 0)`;
  const spendable = sql`(SELECT ${creditAccounts.balance} - ${creditAccounts.reserved} FROM ${creditAccounts} WHERE ${creditAccounts.userId} = ${userId}) + ${held}`;
  await db.batch([
    ensureAccount(db, userId),
    db
      .insert(creditTransactions)
      .values({
        userId,
        amount: sql`-MIN(${settlement.cost}, MAX(${spendable}, 0))`,
        type: 'usage',
        description: settlement.description,
        executionId: settlement.executionId,
        paymentSessionId: null,
        businessKey: `usage:${turnKey}`,
        createdAt: now(),
      })
      .onConflictDoNothing({ target: creditTransactions.businessKey }),
    db.update(creditReservations).set({ settledAt: now() }).where(eq(creditReservations.executionId, turnKey)),
    recompute(db, userId),
  ]);
}

export const BalanceStatus = z.object({ balance: z.number(), totalSpent: z.number(), canExecute: z.boolean(), isAdmin: z.boolean() });

export async function getBalance(db: Db, principal: Principal) {
  const { balance, reserved, totalSpent, isAdmin } = await account(db, principal.userId);
  return { balance: ds(balance), totalSpent: ds(totalSpent), canExecute: balance - reserved >= MIN_RUN_BALANCE, isAdmin };
}

export const Transaction = z.object({
  id: z.number().int(),
  userId: z.string(),
  amount: z.number(),
  type: z.enum(['usage', 'purchase']),
  description: z.string(),
  executionId: z.string().nullable(),
  paymentSessionId: z.string().nullable(),
  createdAt: z.string(),
});

const presentTransaction = (row: CreditTransactionRow) => ({
  id: row.id,
  userId: row.userId,
  amount: ds(row.amount),
  type: row.type,
  description: row.description,
  executionId: row.executionId,
  paymentSessionId: row.paymentSessionId,
  createdAt: toIso(row.createdAt),
});

/** Spec 8: the 50 most recent, newest first, no paging; the caller's own (credits belong to users). */
export async function listTransactions(db: Db, principal: Principal) {
  const rows = await db
    .select()
    .from(creditTransactions)
    .where(eq(creditTransactions.userId, principal.userId))
    .orderBy(desc(creditTransactions.id))
    .limit(TRANSACTIONS_SHOWN);
  return { transactions: rows.map(presentTransaction) };
}
