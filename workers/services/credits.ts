import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import type { BatchResponse } from 'drizzle-orm/batch';
import { z } from 'zod';
import { CREDIT_TRANSACTION_TYPES, creditAccounts, creditReservations, creditTransactions, type ByokKeyRow, type CreditTransactionRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { AppError } from '../errors';
import { now, toIso } from '../lib/clock';
import { ds } from '../lib/money';
import { byokKeyExists, byokKeyFromJson, sealedByokKey, sealedByokKeyJson } from './byok';

/**
 * The credit ledger (docs/billing.md; credits belong to users). Every amount
 * here is an integer in hundredths of a Ds; only the presenters and the 402 show Ds. The
 * account's cached totals are kept by triggers (schema/global/credit-totals.sql): the statement
 * that writes a transaction or a hold moves them too, so nothing here writes them, a replayed
 * change (which writes no row) cannot drift them, and nothing needs to be read first.
 */

/** Starting a run needs at least 50 Ds available (5000 hundredths). */
export const MIN_RUN_BALANCE = 5000;
/**
 * Under this available balance (75 Ds: room for a few runs above MIN_RUN_BALANCE) a settlement
 * that crossed it sends the `credits.low` webhook event (docs/webhooks.md).
 */
export const LOW_BALANCE = 7500;
/** What a run turn holds while it works: its spending limit (hundredths; 200 Ds). */
export const RUN_BUDGET = 20_000;
const TRANSACTIONS_SHOWN = 50; // spec 8: the 50 most recent, no paging

/** Money is integers (docs/billing.md): a fractional or negative amount is a bug in the caller. */
function hundredths(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer of hundredths of a Ds, got ${value}`);
  return value;
}

const ensureAccount = (db: GlobalDb, userId: string) => db.insert(creditAccounts).values({ userId, updatedAt: now() }).onConflictDoNothing();

const accountRow = (db: GlobalDb, userId: string) => db.select().from(creditAccounts).where(eq(creditAccounts.userId, userId)).limit(1);

async function account(db: GlobalDb, userId: string) {
  const [row] = await accountRow(db, userId);
  return row ?? { balance: 0, reserved: 0, totalSpent: 0, isAdmin: false };
}

interface Grant {
  userId: string;
  /** Hundredths of a Ds, positive. */
  amount: number;
  description: string;
  /** Makes the grant happen once: `welcome:<userId>`, `checkout:<session id>`, `invoice:<invoice id>`. */
  businessKey: string;
  paymentSessionId?: string | null;
  /**
   * A subscription payment: also moves `subscription_expires_at` to at least this time (epoch
   * ms), in the same batch. Never backwards, so a replayed or late older invoice cannot shorten it.
   */
  subscriptionUntil?: number;
}

const extendSubscription = (db: GlobalDb, userId: string, until: number) =>
  db
    .update(creditAccounts)
    .set({ subscriptionExpiresAt: sql`MAX(COALESCE(${creditAccounts.subscriptionExpiresAt}, 0), ${until})` })
    .where(eq(creditAccounts.userId, userId));

/** The account, the grant (once per business key; its trigger adds it to the balance) and any subscription extension, for one batch. */
const grantStatements = (db: GlobalDb, grant: Grant) =>
  [
    ensureAccount(db, grant.userId),
    db
      .insert(creditTransactions)
      .values({
        userId: grant.userId,
        amount: hundredths(grant.amount, 'amount'),
        type: 'purchase',
        description: grant.description,
        executionId: null,
        paymentSessionId: grant.paymentSessionId ?? null,
        businessKey: grant.businessKey,
        createdAt: now(),
      })
      .onConflictDoNothing({ target: creditTransactions.businessKey })
      .returning({ id: creditTransactions.id }),
    ...(grant.subscriptionUntil === undefined ? [] : [extendSubscription(db, grant.userId, grant.subscriptionUntil)]),
  ] as const;

/** For the sign-up batch: the account and the welcome grant of `amount` hundredths (WELCOME_CREDITS). */
export const welcomeGrantStatements = (db: GlobalDb, userId: string, amount: number) =>
  grantStatements(db, { userId, amount, description: 'Welcome grant', businessKey: `welcome:${userId}` });

/** Adds credits once per business key: a replayed grant adds nothing and answers `{granted: false}`. */
export async function grantCredits(db: GlobalDb, grant: Grant): Promise<{ granted: boolean }> {
  const [, inserted] = await db.batch(grantStatements(db, grant));
  return { granted: inserted.length > 0 };
}

/** What the user can still hold or spend: `balance - reserved`, in hundredths. */
export async function availableBalance(db: GlobalDb, userId: string): Promise<number> {
  const { balance, reserved } = await account(db, userId);
  return balance - reserved;
}

/** 402 INSUFFICIENT_CREDITS with the numbers, in Ds, that the skill-run route shows flat (spec 7.3). */
const insufficient = ({ balance, reserved }: { balance: number; reserved: number }) =>
  new AppError('INSUFFICIENT_CREDITS', 402, `Starting a run needs at least ${ds(MIN_RUN_BALANCE)} Ds available`, {
    balance: ds(balance),
    availableBalance: ds(balance - reserved),
    minimumRequired: ds(MIN_RUN_BALANCE),
  });

/** Throws 402 INSUFFICIENT_CREDITS unless the user has MIN_RUN_BALANCE available. */
export async function assertCanStartRun(db: GlobalDb, userId: string): Promise<void> {
  const current = await account(db, userId);
  if (current.balance - current.reserved < MIN_RUN_BALANCE) throw insufficient(current);
}

/** The same 402 for a hold that was refused, with the user's numbers as they are now. */
export const insufficientCredits = async (db: GlobalDb, userId: string): Promise<AppError> => insufficient(await account(db, userId));

/**
 * Which hold: an execution's, or with `turnKey` one turn of it. An execution that takes several
 * messages runs several turns, each with its own hold and its own settlement (the run route
 * uses `exec_N:<uuid>`). The key is stored in `credit_reservations.execution_id`.
 */
interface HoldRef {
  userId: string;
  executionId: string;
  turnKey?: string;
}

const holdKey = (ref: HoldRef) => ref.turnKey ?? ref.executionId;

const unsettledHold = (ref: HoldRef) =>
  and(eq(creditReservations.executionId, holdKey(ref)), eq(creditReservations.userId, ref.userId), isNull(creditReservations.settledAt));

/**
 * What a hold request answers: the amount held, or what was available when it was refused;
 * `ownKey`: for a hold `waivedByOwnKey`, the user's own model key (or null), as stored.
 */
export type Hold = { reserved: true; amount: number; ownKey?: ByokKeyRow | null } | { reserved: false; available: number };

export type HoldRequest = HoldRef & {
  amount: number;
  minimum?: number;
  /**
   * A run's hold: of nothing when the user has their own model key (BYOK), and answering that
   * key, so the run calls the model with exactly the key that waived its hold.
   */
  waivedByOwnKey?: boolean;
  /** The workspace of the run the hold is for (releaseOrphanedHolds finds its claim there). */
  workspaceId?: string;
};

/**
 * Holds `amount` of the user's available credits. All or nothing, unless `minimum` is given:
 * then it holds as much of `amount` as is available, provided that is at least `minimum`. The
 * hold is one conditional INSERT…SELECT on the account, whose trigger adds it to `reserved` in
 * the same statement, and D1 runs statements one at a time, so two holds never both take the
 * same credits. Asking again for the same hold takes nothing more and answers the first. With
 * `waivedByOwnKey` the same statement finds whether the user has their own model key: the hold
 * is then of nothing, and it answers the key, without a read of its own.
 *
 * This is the hold's statement, for the caller's D1 batch; `holdAnswered` reads its answer.
 */
export function holdStatements(db: GlobalDb, request: HoldRequest) {
  const { userId } = request;
  const amount = hundredths(request.amount, 'amount');
  const minimum = hundredths(request.minimum ?? amount, 'minimum');
  const available = sql<number>`${creditAccounts.balance} - ${creditAccounts.reserved}`;
  const waived = request.waivedByOwnKey ? byokKeyExists(db, userId) : sql`0`;
  // No account is made here: every user has one from sign-up, and a hold reads it anyway.
  return [
    db
      .insert(creditReservations)
      .select(
        db
          .select({
            id: sql<number>`NULL`.as('id'),
            userId: creditAccounts.userId,
            executionId: sql<string>`${holdKey(request)}`.as('execution_id'),
            amount: sql<number>`CASE WHEN ${waived} THEN 0 ELSE MIN(${amount}, ${available}) END`.as('amount'),
            createdAt: sql<number>`${now()}`.as('created_at'),
            settledAt: sql<number | null>`NULL`.as('settled_at'),
            workspaceId: sql<string | null>`${request.workspaceId ?? null}`.as('workspace_id'),
          })
          .from(creditAccounts)
          .where(and(eq(creditAccounts.userId, userId), sql`(${waived} OR ${available} >= ${minimum})`)),
      )
      .onConflictDoNothing({ target: creditReservations.executionId })
      .returning({ amount: creditReservations.amount, ownKey: request.waivedByOwnKey ? sealedByokKeyJson(userId) : sql<null>`NULL` }),
  ] as const;
}

/** What the hold's statement answered: the hold, else the same hold asked for before, else the refusal. */
export const holdAnswered = async (db: GlobalDb, request: HoldRequest, [[held]]: BatchResponse<ReturnType<typeof holdStatements>>): Promise<Hold> =>
  held ? { reserved: true, amount: held.amount, ...(request.waivedByOwnKey ? { ownKey: byokKeyFromJson(held.ownKey) } : {}) } : earlierHold(db, request);

/** A hold that took nothing: the same hold asked for before, else the refusal with what is available. */
async function earlierHold(db: GlobalDb, request: HoldRequest): Promise<Hold> {
  const [earlier] = await db.select({ amount: creditReservations.amount }).from(creditReservations).where(unsettledHold(request)).limit(1);
  if (earlier)
    return { reserved: true, amount: earlier.amount, ...(request.waivedByOwnKey ? { ownKey: (await sealedByokKey(db, request.userId))[0] ?? null } : {}) };
  return { reserved: false, available: await availableBalance(db, request.userId) };
}

/** The user whose credits the unsettled hold under `key` took (a turn's hold is its starter's), if there is one. */
export const holdOwner = async (db: GlobalDb, key: string): Promise<string | undefined> =>
  (
    await db
      .select({ userId: creditReservations.userId })
      .from(creditReservations)
      .where(and(eq(creditReservations.executionId, key), isNull(creditReservations.settledAt)))
      .limit(1)
  )[0]?.userId;

/** Gives back a hold that was never used (the run did not start); its trigger takes it off `reserved`. Settled holds stay as they are. */
export async function releaseReservation(db: GlobalDb, ref: HoldRef): Promise<{ released: boolean }> {
  const deleted = await db.delete(creditReservations).where(unsettledHold(ref)).returning({ id: creditReservations.id });
  return { released: deleted.length > 0 };
}

/** The business key of the ledger row that settles a hold (the trigger finds the hold by it), and that row. */
const usageKey = (ref: HoldRef) => `usage:${holdKey(ref)}`;
const settlementRow = (ref: HoldRef) => eq(creditTransactions.businessKey, usageKey(ref));

/** A settlement: which hold it ends, what the run cost (hundredths of a Ds) and how the ledger describes it. */
export type Settlement = HoldRef & { cost: number; description: string };

/**
 * Ends a hold and charges `cost` as a `usage` transaction of `-cost` on `executionId`, capped so
 * the balance never goes below 0 nor below the user's other holds. A cost of 0 is still recorded
 * (BYOK runs). Once per hold: the business key is `usage:<turnKey or executionId>`, and a replay
 * changes nothing and answers `settled: false` with what the first settlement charged, so a run
 * resumed after its settlement landed shows the cost it was charged. `charged` is after the cap.
 *
 * The settlement is the usage INSERT alone: its trigger ends the hold and moves the totals in
 * the same statement, and a replay, which inserts nothing, changes nothing. One D1 batch on the
 * ledger, with the read of the totals it left (a RETURNING clause sees the account as it was
 * before the triggers ran); a turn's close sends the run's record to its shard after it.
 */
export async function settle(db: GlobalDb, settlement: Settlement): Promise<{ settled: boolean; charged: number; available: number | undefined }> {
  const [[inserted], [account]] = await db.batch([settlementStatement(db, settlement), accountRow(db, settlement.userId)]);
  // What the user can still hold or spend once this settled (or, on a replay, now).
  const available = account && account.balance - account.reserved;
  return inserted
    ? { settled: true, charged: Math.abs(inserted.amount), available }
    : // The row is there: the conflict that skipped the insert was with it.
      { settled: false, charged: (await settledCharge(db, settlement))!, available };
}

function settlementStatement(db: GlobalDb, settlement: Settlement) {
  const { userId } = settlement;
  // The cap: what the user could spend with this hold given back, read in the same statement.
  const held = sql`COALESCE((SELECT ${creditReservations.amount} FROM ${creditReservations} WHERE ${unsettledHold(settlement)}), 0)`;
  const spendable = sql`(SELECT ${creditAccounts.balance} - ${creditAccounts.reserved} FROM ${creditAccounts} WHERE ${creditAccounts.userId} = ${userId}) + ${held}`;
  return db
    .insert(creditTransactions)
    .values({
      userId,
      amount: sql`-MIN(${hundredths(settlement.cost, 'cost')}, MAX(${spendable}, 0))`,
      type: 'usage',
      description: settlement.description,
      executionId: settlement.executionId,
      paymentSessionId: null,
      businessKey: usageKey(settlement),
      createdAt: now(),
    })
    .onConflictDoNothing({ target: creditTransactions.businessKey })
    .returning({ amount: creditTransactions.amount });
}

/** What the settlement of a hold charged, once it has landed; undefined before. */
export async function settledCharge(db: GlobalDb, ref: HoldRef): Promise<number | undefined> {
  const [row] = await db.select({ amount: creditTransactions.amount }).from(creditTransactions).where(settlementRow(ref));
  return row && Math.abs(row.amount);
}

export const BalanceStatus = z.object({ balance: z.number(), totalSpent: z.number(), canExecute: z.boolean(), isAdmin: z.boolean() });

/** Spec 2.7's balance status, in Ds; `canExecute` when MIN_RUN_BALANCE is available. */
export async function getBalance(db: GlobalDb, principal: Principal): Promise<z.infer<typeof BalanceStatus>> {
  const { balance, reserved, totalSpent, isAdmin } = await account(db, principal.userId);
  return { balance: ds(balance), totalSpent: ds(totalSpent), canExecute: balance - reserved >= MIN_RUN_BALANCE, isAdmin };
}

export const Transaction = z.object({
  id: z.number().int(),
  userId: z.string(),
  amount: z.number(),
  type: z.enum(CREDIT_TRANSACTION_TYPES),
  description: z.string(),
  executionId: z.string().nullable(),
  paymentSessionId: z.string().nullable(),
  createdAt: z.string(),
});

const presentTransaction = (row: CreditTransactionRow): z.infer<typeof Transaction> => ({
  id: row.id,
  userId: row.userId,
  amount: ds(row.amount),
  type: row.type,
  description: row.description,
  executionId: row.executionId,
  paymentSessionId: row.paymentSessionId,
  createdAt: toIso(row.createdAt),
});

/** Spec 8: the 50 most recent, newest first, no paging; the caller's own, whichever workspace it acts in. */
export async function listTransactions(db: GlobalDb, principal: Principal) {
  const rows = await db
    .select()
    .from(creditTransactions)
    .where(eq(creditTransactions.userId, principal.userId))
    .orderBy(desc(creditTransactions.id))
    .limit(TRANSACTIONS_SHOWN);
  return { transactions: rows.map(presentTransaction) };
}
