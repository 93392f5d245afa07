import { env } from 'cloudflare:workers';
import { drizzle } from 'drizzle-orm/d1';
import { describe, expect, it } from 'vitest';
import * as schema from '../../schema';
import { grantCredits, reserveCredits, settleTurn } from '../../workers/services/credits';
import { call, createKey, expectError, signUp, type TestUser, waitForStatus } from '../helpers/api';

const db = drizzle(env.DB, { schema });
const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };

/** Sets the user's credits to exactly `ds` by a correcting transaction, as an operator would. */
async function setBalance(user: TestUser, ds: number) {
  const current = (await call('/api/v1/billing/balance', { token: user.token })).body.balance;
  await env.DB.prepare("INSERT INTO credit_transactions (user_id, amount, type, description, created_at) VALUES (?, ?, 'purchase', 'test adjustment', ?)")
    .bind(user.user.id, Math.round((ds - current) * 100), Date.now())
    .run();
  await env.DB.prepare('UPDATE credit_accounts SET balance = (SELECT SUM(amount) FROM credit_transactions WHERE user_id = ?1) WHERE user_id = ?1').bind(user.user.id).run();
}

describe('balance and transactions', () => {
  it('starts every user with the welcome grant', async () => {
    const user = await signUp();
    expect((await call('/api/v1/billing/balance', { token: user.token })).body).toEqual({ balance: 100, totalSpent: 0, canExecute: true, isAdmin: false });
    expect((await call('/api/v1/billing/transactions', { token: user.token })).body.transactions).toEqual([
      { id: expect.any(Number), userId: user.user.id, amount: 100, type: 'purchase', description: 'Welcome grant', executionId: null, paymentSessionId: null, createdAt: expect.any(String) },
    ]);
  });

  it('charges a completed run: a usage transaction with the execution, newest first', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    const run = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Ship Friday.' } });
    const status = await waitForStatus(user, run.body.executionId, 'completed');
    const { transactions } = (await call('/api/v1/billing/transactions', { token: user.token })).body;
    expect(transactions[0]).toMatchObject({ type: 'usage', executionId: run.body.executionId, amount: -status.cost });
    expect(status.cost).toBeGreaterThan(0);
    const balance = (await call('/api/v1/billing/balance', { token: user.token })).body;
    expect(balance.balance).toBeCloseTo(100 - status.cost, 2);
    expect(balance.totalSpent).toBeCloseTo(status.cost, 2);
  });

  it('shows only the caller’s own transactions and needs billing:read', async () => {
    const user = await signUp();
    const other = await signUp();
    const mine = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    expect(mine.every((t: { userId: string }) => t.userId === user.user.id)).toBe(true);
    expect(mine.map((t: { userId: string }) => t.userId)).not.toContain(other.user.id);
    const key = await createKey(user, ['profile:read']);
    expect(expectError(await call('/api/v1/billing/balance', { apiKey: key.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'billing:read' });
  });
});

describe('the run gate and limits', () => {
  it('refuses a run below 50 Ds with 402 in the flat legacy shape', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    await setBalance(user, 49.99);
    const res = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'x' } });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ error: 'INSUFFICIENT_CREDITS', balance: 49.99, availableBalance: 49.99, minimumRequired: 50, details: { serviceCode: 'INSUFFICIENT_CREDITS' } });
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
    await setBalance(user, 50);
    expect((await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'x' } })).status).toBe(200);
  });

  it('stops a run whose cost passes its hold with limit_reached; the execution is idle and the charge stays within the balance', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Plan it.' } });
    const executionId = Number(created.body.id.slice(5));
    // What the run route does, with an empty hold: the local model is so cheap (a whole run
    // costs about 0.01 Ds) that only a zero hold is passed by its first request.
    await env.DB.prepare("UPDATE executions SET status = 'working' WHERE id = ?").bind(executionId).run();
    const held = await reserveCredits(db, user.user.id, `${created.body.id}:tiny`, 0);
    expect(held).toBe(0);
    await env.EXECUTION_SESSION.getByName(created.body.id).startTurn({
      executionId,
      workspaceId: user.workspaceId,
      userId: user.user.id,
      role: 'owner',
      apiKeyId: null,
      requestId: 'test',
      turnKey: `${created.body.id}:tiny`,
      budget: held,
      skillName: 'Notes',
      system: SKILL.prompt,
      text: 'Plan it.',
    });
    await waitForStatus(user, created.body.id, 'idle');
    const events = await env.EXECUTION_SESSION.getByName(created.body.id).events(0);
    expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', payload: { stop_reason: { type: 'limit_reached' } } });
    const balance = (await call('/api/v1/billing/balance', { token: user.token })).body;
    expect(balance.balance).toBeGreaterThan(99);
    expect(balance.totalSpent).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === 'span.model_request_end')).toHaveLength(1);
  });
});

describe('ledger atomicity', () => {
  it('grants once per business key', async () => {
    const user = await signUp();
    const grant = { userId: user.user.id, amount: 1000, description: 'Pack', businessKey: `test:${crypto.randomUUID()}` };
    expect(await grantCredits(db, grant)).toEqual({ granted: true });
    expect(await grantCredits(db, grant)).toEqual({ granted: false });
    expect((await call('/api/v1/billing/balance', { token: user.token })).body.balance).toBe(110);
  });

  it('lets only one of two concurrent holds take credits that cover one', async () => {
    const user = await signUp();
    const held = await Promise.all([reserveCredits(db, user.user.id, 'a', 8000), reserveCredits(db, user.user.id, 'b', 8000)]);
    expect([...held].sort((x, y) => x - y)).toEqual([2000, 8000]);
  });

  it('settles a turn once, capped at what is available', async () => {
    const user = await signUp();
    await reserveCredits(db, user.user.id, 'turn-1', 5000);
    const settle = () => settleTurn(db, { userId: user.user.id, turnKey: 'turn-1', executionId: 'exec_1', cost: 50_000, description: 'big' });
    await settle();
    await settle();
    const balance = (await call('/api/v1/billing/balance', { token: user.token })).body;
    expect(balance).toMatchObject({ balance: 0, totalSpent: 100, canExecute: false });
    const usage = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions.filter((t: { type: string }) => t.type === 'usage');
    expect(usage).toHaveLength(1);
  });

  it('refuses a negative balance at the database', async () => {
    const user = await signUp();
    await expect(env.DB.prepare('UPDATE credit_accounts SET balance = -1 WHERE user_id = ?').bind(user.user.id).run()).rejects.toThrow(/CHECK constraint failed/);
  });
});
