/**
 * The account's cached totals (balance, reserved, total spent) are kept by triggers on the
 * ledger's tables (schema/global/credit-totals.sql): whatever writes a transaction or a hold
 * moves them in the same statement, and after any sequence of changes and replays they equal
 * the sums over the source rows, as GET /api/v1/billing/balance shows them.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import triggersSql from '../../schema/global/credit-totals.sql?raw';
import { globalDbOf } from '../../workers/lib/db';
import { grantCredits, releaseReservation, settle } from '../../workers/services/credits';
import { call, signUp, type TestUser } from '../helpers/api';
import { reserveCredits } from '../helpers/credits';

const db = globalDbOf(env);

/** The cached totals, and the same three summed over the user's source rows. */
async function totals(userId: string) {
  const row = await env.DB.prepare(
    `SELECT a.balance, a.reserved, a.total_spent AS totalSpent,
       (SELECT COALESCE(SUM(t.amount), 0) FROM credit_transactions t WHERE t.user_id = a.user_id) AS summedBalance,
       (SELECT COALESCE(SUM(r.amount), 0) FROM credit_reservations r WHERE r.user_id = a.user_id AND r.settled_at IS NULL) AS summedReserved,
       (SELECT COALESCE(-SUM(t.amount), 0) FROM credit_transactions t WHERE t.user_id = a.user_id AND t.type = 'usage') AS summedSpent
     FROM credit_accounts a WHERE a.user_id = ?`,
  )
    .bind(userId)
    .first<{ balance: number; reserved: number; totalSpent: number; summedBalance: number; summedReserved: number; summedSpent: number }>();
  const { balance, reserved, totalSpent, summedBalance, summedReserved, summedSpent } = row!;
  return { cached: { balance, reserved, totalSpent }, summed: { balance: summedBalance, reserved: summedReserved, totalSpent: summedSpent } };
}

/** The totals equal the sums, and the balance route shows them. */
async function expectExactTotals(user: TestUser) {
  const { cached, summed } = await totals(user.user.id);
  expect(cached).toEqual(summed);
  expect((await call('/api/v1/billing/balance', { token: user.token })).body).toMatchObject({
    balance: cached.balance / 100,
    totalSpent: cached.totalSpent / 100,
    canExecute: cached.balance - cached.reserved >= 5000,
  });
  return cached;
}

describe('the triggers', () => {
  it('are in the migrated database as schema/global/credit-totals.sql declares them', async () => {
    const declared = triggersSql
      .split('--> statement-breakpoint')
      .map((statement) =>
        statement
          .replace(/^--.*$/gm, '')
          .trim()
          .replace(/;$/, '')
          .replace(/\s+/g, ' '),
      )
      .filter((statement) => statement.startsWith('CREATE TRIGGER'));
    const { results } = await env.DB.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name LIKE 'credit_%' ORDER BY name").all<{
      sql: string;
    }>();
    expect(declared).toHaveLength(4);
    // SQLite quotes a table's name in its triggers' text when the table is renamed (a test of a
    // failing ledger renames credit_transactions away and back): the same trigger either way.
    const unquoted = (statement: string) => statement.replace(/\s+/g, ' ').replace(/"/g, '');
    expect(results.map((row) => unquoted(row.sql)).sort()).toEqual(declared.map(unquoted).sort());
  });

  it('keep the totals when the rows are written directly, and a replayed write moves nothing', async () => {
    const user = await signUp();
    const userId = user.user.id;
    const hold = `exec_direct_${userId}`;
    const at = Date.now();
    const transaction = (amount: number, type: string, key: string) =>
      env.DB.prepare(
        'INSERT INTO credit_transactions (user_id, amount, type, description, business_key, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      )
        .bind(userId, amount, type, 'direct', key, at)
        .run();
    const reservation = (key: string, amount: number) =>
      env.DB.prepare('INSERT INTO credit_reservations (user_id, execution_id, amount, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING')
        .bind(userId, key, amount, at)
        .run();

    await transaction(2500, 'purchase', `direct:${userId}`);
    await transaction(2500, 'purchase', `direct:${userId}`);
    expect((await expectExactTotals(user)).balance).toBe(12_500);

    await reservation(hold, 4000);
    await reservation(hold, 4000);
    await reservation(`${hold}:released`, 1000);
    await reservation(`${hold}:settled`, 500);
    expect(await expectExactTotals(user)).toEqual({ balance: 12_500, reserved: 5500, totalSpent: 0 });

    await env.DB.prepare('DELETE FROM credit_reservations WHERE execution_id = ?').bind(`${hold}:released`).run();
    await env.DB.prepare('UPDATE credit_reservations SET settled_at = ? WHERE execution_id = ?').bind(at, `${hold}:settled`).run();
    await env.DB.prepare('UPDATE credit_reservations SET settled_at = ? WHERE execution_id = ?')
      .bind(at + 1, `${hold}:settled`)
      .run();
    await env.DB.prepare('DELETE FROM credit_reservations WHERE execution_id = ?').bind(`${hold}:settled`).run();
    expect(await expectExactTotals(user)).toEqual({ balance: 12_500, reserved: 4000, totalSpent: 0 });

    // A usage row named for a hold settles it; written again, it is refused and moves nothing.
    await transaction(-3000, 'usage', `usage:${hold}`);
    await transaction(-3000, 'usage', `usage:${hold}`);
    expect(await expectExactTotals(user)).toEqual({ balance: 9500, reserved: 0, totalSpent: 3000 });
    const settled = await env.DB.prepare('SELECT settled_at AS settledAt FROM credit_reservations WHERE execution_id = ?').bind(hold).first();
    expect(settled).toEqual({ settledAt: at });
  });
});

/** A small seeded generator (mulberry32): `next(n)` is in [0, n), the same sequence for the same seed. */
function random(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * below);
  };
}

describe('the cached totals', () => {
  it.each([1, 2, 3])('equal the sums over the ledger after a random sequence of changes and replays (seed %i)', async (seed) => {
    const user = await signUp();
    const userId = user.user.id;
    const next = random(seed);
    const pick = <T>(items: T[]) => items[next(items.length)]!;
    const grants: string[] = [];
    const holds: string[] = [];
    const hold = (key: string) => ({ userId, executionId: key.split(':')[0]!, turnKey: key });
    const grant = (businessKey: string) => grantCredits(db, { userId, amount: 1 + next(4000), description: 'grant', businessKey });
    const newGrant = () => {
      const businessKey = `test:${seed}:${grants.length}:${userId}`;
      grants.push(businessKey);
      return grant(businessKey);
    };
    const newHold = (amount: number, minimum?: number) => {
      const key = `exec_${seed}_${userId}:${holds.length}`;
      holds.push(key);
      return reserveCredits(db, { ...hold(key), amount, ...(minimum === undefined ? {} : { minimum }) });
    };
    const settleHold = (key: string) => settle(db, { ...hold(key), cost: next(12_000), description: 'run' });

    // Each kind of change once, in order: a hold refused, one released, one settled and settled again.
    expect(await newHold(10_001)).toEqual({ reserved: false, available: 10_000 });
    expect(await newHold(3000)).toEqual({ reserved: true, amount: 3000 });
    expect(await releaseReservation(db, hold(holds[1]!))).toEqual({ released: true });
    expect(await newHold(4000)).toEqual({ reserved: true, amount: 4000 });
    expect((await settleHold(holds[2]!)).settled).toBe(true);
    expect((await settleHold(holds[2]!)).settled).toBe(false);
    await expectExactTotals(user);

    // Then the same kinds at random, a few at once as concurrent requests would make them.
    const steps: Array<() => Promise<unknown>> = [
      newGrant,
      () => newHold(1 + next(8000), next(2) ? 1000 : undefined),
      async () => holds.length && releaseReservation(db, hold(pick(holds))),
      async () => holds.length && settleHold(pick(holds)),
      async () => grants.length && grant(pick(grants)),
      async () => holds.length && reserveCredits(db, { ...hold(pick(holds)), amount: 1 + next(8000) }),
    ];
    for (let round = 0; round < 20; round++) {
      await Promise.all(Array.from({ length: 1 + next(4) }, () => pick(steps)()));
      await expectExactTotals(user);
    }
  });
});
