import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../workers/errors';
import {
  assertCanStartRun,
  availableBalance,
  grantCredits,
  listTransactions,
  MIN_RUN_BALANCE,
  releaseReservation,
  welcomeGrantStatements,
} from '../../workers/services/credits';
import { sessionPrincipal, signUp } from '../helpers/api';
import { reserveCredits } from '../helpers/credits';
import { settle } from '../../workers/services/credits';
import { globalDbOf } from '../../workers/lib/db';

const db = globalDbOf(env);

/**
 * A fresh user (the welcome grant leaves 100 Ds, 10000 hundredths) and a maker of execution ids
 * of their own: holds and settlements are keyed by execution id, unique across users.
 */
async function newUser() {
  const user = await signUp();
  const userId = user.user.id;
  return { user, userId, exec: (name: string | number) => `exec_${name}_${userId}` };
}

const accountOf = async (userId: string) =>
  (await env.DB.prepare('SELECT balance, reserved, total_spent AS totalSpent FROM credit_accounts WHERE user_id = ?').bind(userId).first()) as {
    balance: number;
    reserved: number;
    totalSpent: number;
  };

const rowsOf = async (userId: string) =>
  (
    await env.DB.prepare(
      'SELECT amount, type, description, execution_id AS executionId, business_key AS businessKey FROM credit_transactions WHERE user_id = ? ORDER BY id',
    )
      .bind(userId)
      .all()
  ).results;

const key = () => `test:${crypto.randomUUID()}`;

describe('the welcome grant', () => {
  it('opens every account with one purchase of WELCOME_CREDITS, once', async () => {
    const { userId } = await newUser();
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 0, totalSpent: 0 });
    await db.batch(welcomeGrantStatements(db, userId, 10_000));
    expect(await rowsOf(userId)).toEqual([
      { amount: 10_000, type: 'purchase', description: 'Welcome grant', executionId: null, businessKey: `welcome:${userId}` },
    ]);
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 0, totalSpent: 0 });
  });
});

describe('grantCredits', () => {
  it('grants once per business key', async () => {
    const { userId } = await newUser();
    const grant = { userId, amount: 2500, description: 'Pack', paymentSessionId: 'cs_test_1', businessKey: `test:${crypto.randomUUID()}` };
    expect(await grantCredits(db, grant)).toEqual({ granted: true });
    expect(await grantCredits(db, grant)).toEqual({ granted: false });
    expect((await rowsOf(userId)).filter((t) => t.description === 'Pack')).toHaveLength(1);
    expect((await accountOf(userId)).balance).toBe(12_500);
  });

  it('refuses amounts that are not whole hundredths', async () => {
    const { userId } = await newUser();
    await expect(grantCredits(db, { userId, amount: 1.5, description: 'x', businessKey: key() })).rejects.toThrow(/integer/);
    await expect(grantCredits(db, { userId, amount: -100, description: 'x', businessKey: key() })).rejects.toThrow(/integer/);
  });
});

describe('reserveCredits', () => {
  it('holds what is available and refuses more, reporting what is available', async () => {
    const { userId, exec } = await newUser();
    expect(await reserveCredits(db, { userId, executionId: exec(1), amount: 6000 })).toEqual({ reserved: true, amount: 6000 });
    expect(await availableBalance(db, userId)).toBe(4000);
    expect(await reserveCredits(db, { userId, executionId: exec(2), amount: 4001 })).toEqual({ reserved: false, available: 4000 });
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 6000, totalSpent: 0 });
  });

  it('answers the first hold again when the same hold is asked twice', async () => {
    const { userId, exec } = await newUser();
    await reserveCredits(db, { userId, executionId: exec(1), amount: 3000 });
    expect(await reserveCredits(db, { userId, executionId: exec(1), amount: 3000 })).toEqual({ reserved: true, amount: 3000 });
    expect((await accountOf(userId)).reserved).toBe(3000);
  });

  it('with a minimum, holds as much of the amount as is available', async () => {
    const { userId, exec } = await newUser();
    expect(await reserveCredits(db, { userId, executionId: exec(1), turnKey: `${exec(1)}:a`, amount: 20_000, minimum: MIN_RUN_BALANCE })).toEqual({
      reserved: true,
      amount: 10_000,
    });
    expect(await reserveCredits(db, { userId, executionId: exec(1), turnKey: `${exec(1)}:b`, amount: 20_000, minimum: MIN_RUN_BALANCE })).toEqual({
      reserved: false,
      available: 0,
    });
  });

  it('lets exactly one of two concurrent holds through when the balance covers one', async () => {
    const { userId, exec } = await newUser();
    const results = await Promise.all([
      reserveCredits(db, { userId, executionId: exec('a'), amount: 6000 }),
      reserveCredits(db, { userId, executionId: exec('b'), amount: 6000 }),
    ]);
    expect(results.filter((r) => r.reserved)).toHaveLength(1);
    expect(results.filter((r) => !r.reserved)).toEqual([{ reserved: false, available: 4000 }]);
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 6000, totalSpent: 0 });
  });

  it('never over-commits under a wider race', async () => {
    const { userId, exec } = await newUser();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => reserveCredits(db, { userId, executionId: exec(i), amount: 3000 })));
    expect(results.filter((r) => r.reserved)).toHaveLength(3);
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 9000, totalSpent: 0 });
  });
});

describe('settle', () => {
  it('charges the cost, ends the hold, and charges once; a replay answers what was charged', async () => {
    const { userId, exec } = await newUser();
    await reserveCredits(db, { userId, executionId: exec(1), amount: 6000 });
    const settleOnce = () => settle(db, { userId, executionId: exec(1), cost: 1234, description: 'Notes: 10 input and 20 output tokens' });
    expect(await settleOnce()).toEqual({ settled: true, charged: 1234, available: 8766 });
    expect(await accountOf(userId)).toEqual({ balance: 8766, reserved: 0, totalSpent: 1234 });
    expect(await settleOnce()).toEqual({ settled: false, charged: 1234, available: 8766 });
    expect(await accountOf(userId)).toEqual({ balance: 8766, reserved: 0, totalSpent: 1234 });
    expect((await rowsOf(userId)).filter((t) => t.type === 'usage')).toEqual([
      { amount: -1234, type: 'usage', description: 'Notes: 10 input and 20 output tokens', executionId: exec(1), businessKey: `usage:${exec(1)}` },
    ]);
  });

  it('caps the cost so the balance never goes below 0', async () => {
    const { userId, exec } = await newUser();
    await reserveCredits(db, { userId, executionId: exec(1), amount: 5000 });
    expect(await settle(db, { userId, executionId: exec(1), cost: 50_000, description: 'big' })).toEqual({ settled: true, charged: 10_000, available: 0 });
    expect(await accountOf(userId)).toEqual({ balance: 0, reserved: 0, totalSpent: 10_000 });
    expect(await settle(db, { userId, executionId: exec(1), cost: 50_000, description: 'big' })).toEqual({ settled: false, charged: 10_000, available: 0 });
  });

  it('leaves other holds covered when it caps', async () => {
    const { userId, exec } = await newUser();
    await reserveCredits(db, { userId, executionId: exec(1), amount: 3000 });
    await reserveCredits(db, { userId, executionId: exec(2), amount: 2000 });
    expect(await settle(db, { userId, executionId: exec(1), cost: 50_000, description: 'big' })).toEqual({ settled: true, charged: 8000, available: 0 });
    expect(await accountOf(userId)).toEqual({ balance: 2000, reserved: 2000, totalSpent: 8000 });
  });

  it('records a cost of 0', async () => {
    const { userId, exec } = await newUser();
    expect(await settle(db, { userId, executionId: exec(9), cost: 0, description: 'BYOK run' })).toEqual({ settled: true, charged: 0, available: 10_000 });
    expect((await rowsOf(userId)).filter((t) => t.type === 'usage')).toEqual([
      { amount: 0, type: 'usage', description: 'BYOK run', executionId: exec(9), businessKey: `usage:${exec(9)}` },
    ]);
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 0, totalSpent: 0 });
  });

  it('settles each turn of an execution on its own', async () => {
    const { userId, exec } = await newUser();
    for (const turnKey of [`${exec(1)}:a`, `${exec(1)}:b`]) {
      await reserveCredits(db, { userId, executionId: exec(1), turnKey, amount: 1000 });
      await settle(db, { userId, executionId: exec(1), turnKey, cost: 100, description: 'turn' });
    }
    expect(await accountOf(userId)).toEqual({ balance: 9800, reserved: 0, totalSpent: 200 });
    expect((await rowsOf(userId)).filter((t) => t.type === 'usage').map((t) => t.businessKey)).toEqual([`usage:${exec(1)}:a`, `usage:${exec(1)}:b`]);
  });
});

describe('releaseReservation', () => {
  it('gives back a hold that was never used, once, and leaves settled holds alone', async () => {
    const { userId, exec } = await newUser();
    await reserveCredits(db, { userId, executionId: exec(1), amount: 6000 });
    expect(await releaseReservation(db, { userId, executionId: exec(1) })).toEqual({ released: true });
    expect(await releaseReservation(db, { userId, executionId: exec(1) })).toEqual({ released: false });
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 0, totalSpent: 0 });
    await reserveCredits(db, { userId, executionId: exec(2), amount: 6000 });
    await settle(db, { userId, executionId: exec(2), cost: 500, description: 'run' });
    expect(await releaseReservation(db, { userId, executionId: exec(2) })).toEqual({ released: false });
    expect(await accountOf(userId)).toEqual({ balance: 9500, reserved: 0, totalSpent: 500 });
  });
});

describe('assertCanStartRun', () => {
  it('refuses 49.99 Ds available with the numbers in Ds, and accepts 50', async () => {
    const { userId, exec } = await newUser();
    await settle(db, { userId, executionId: exec('spent'), cost: 5001, description: 'spent' });
    const refusal = await assertCanStartRun(db, userId).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(AppError);
    expect(refusal).toMatchObject({ code: 'INSUFFICIENT_CREDITS', status: 402, details: { balance: 49.99, availableBalance: 49.99, minimumRequired: 50 } });
    await grantCredits(db, { userId, amount: 1, description: 'top-up', businessKey: key() });
    await expect(assertCanStartRun(db, userId)).resolves.toBeUndefined();
  });

  it('counts held credits as unavailable', async () => {
    const { userId, exec } = await newUser();
    await reserveCredits(db, { userId, executionId: exec(1), amount: 5001 });
    await expect(assertCanStartRun(db, userId)).rejects.toMatchObject({ details: { balance: 100, availableBalance: 49.99, minimumRequired: 50 } });
  });
});

describe('listTransactions', () => {
  it('lists the user’s own transactions whichever workspace the credential acts in', async () => {
    const owner = await newUser();
    const member = await newUser();
    const inOwnersWorkspace = { ...sessionPrincipal(member.user), workspaceId: owner.user.workspaceId };
    const { transactions } = await listTransactions(db, inOwnersWorkspace);
    expect(transactions.map((t) => t.userId)).toEqual([member.userId]);
  });
});

describe('the CHECK constraints', () => {
  it('refuse a negative balance, a negative hold and holds beyond the balance', async () => {
    const { userId } = await newUser();
    const update = (set: string) => env.DB.prepare(`UPDATE credit_accounts SET ${set} WHERE user_id = ?`).bind(userId).run();
    await expect(update('balance = -1')).rejects.toThrow(/CHECK constraint failed/);
    await expect(update('reserved = -1')).rejects.toThrow(/CHECK constraint failed/);
    await expect(update('reserved = balance + 1')).rejects.toThrow(/CHECK constraint failed/);
    expect(await accountOf(userId)).toEqual({ balance: 10_000, reserved: 0, totalSpent: 0 });
  });
});
