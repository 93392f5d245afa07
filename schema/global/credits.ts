import { sql } from 'drizzle-orm';
import { check, index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from './users';

/**
 * Credits belong to users (docs/billing.md). Amounts are integers in hundredths of a Ds.
 * `balance` (the sum of the user's transactions), `reserved` (of their unsettled holds) and
 * `total_spent` (less the sum of their usage) are caches of the two tables below, kept by the
 * triggers of credit-totals.sql (a migration of their own: drizzle cannot declare triggers) in
 * the statement that writes a transaction or a hold, so the service never writes them and a
 * replayed change, which writes no row, cannot drift them. `updated_at`: when the account was
 * made or last had a transaction, hold or settlement (a release leaves it).
 */
export const creditAccounts = sqliteTable(
  'credit_accounts',
  {
    userId: text('user_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    balance: integer('balance').notNull().default(0),
    reserved: integer('reserved').notNull().default(0),
    totalSpent: integer('total_spent').notNull().default(0),
    isAdmin: integer('is_admin', { mode: 'boolean' }).notNull().default(false),
    /** Set by an operator: the user's tier is `sitelicense` (spec 3.7; the billing issue reads it). */
    siteLicense: integer('site_license', { mode: 'boolean' }).notNull().default(false),
    /** Epoch ms; a time in the future makes the tier `basedmode` (set by the billing webhook). */
    subscriptionExpiresAt: integer('subscription_expires_at'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    check('credit_balance_non_negative', sql`${t.balance} >= 0`),
    check('credit_reserved_within_balance', sql`${t.reserved} >= 0 AND ${t.reserved} <= ${t.balance}`),
  ],
);

export const CREDIT_TRANSACTION_TYPES = ['usage', 'purchase'] as const;

/**
 * Append-only. `business_key` makes each grant and settlement happen once. Its insert trigger
 * moves the account's totals, and a usage row `usage:<hold key>` settles that hold.
 */
export const creditTransactions = sqliteTable(
  'credit_transactions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** Signed: purchases positive, usage negative. */
    amount: integer('amount').notNull(),
    type: text('type', { enum: CREDIT_TRANSACTION_TYPES }).notNull(),
    description: text('description').notNull(),
    executionId: text('execution_id'),
    paymentSessionId: text('payment_session_id'),
    businessKey: text('business_key').unique(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('credit_transactions_user_idx').on(t.userId, t.id)],
);

/** Credits held for a running execution until it settles; its triggers keep the account's `reserved`. */
export const creditReservations = sqliteTable('credit_reservations', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  executionId: text('execution_id').notNull().unique(),
  amount: integer('amount').notNull(),
  createdAt: integer('created_at').notNull(),
  settledAt: integer('settled_at'),
  /** The workspace of the run the hold is for: where to ask whether its claim still stands (the hourly sweep of orphaned holds). */
  workspaceId: text('workspace_id'),
});

export type CreditTransactionRow = typeof creditTransactions.$inferSelect;
