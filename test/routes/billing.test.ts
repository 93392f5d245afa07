import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { grantCredits, settle } from '../../workers/services/credits';
import { reserveCredits } from '../helpers/credits';
import { shardD1 } from '../helpers/shards';
import { call, createKey, expectError, sessionPrincipal, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { globalDbOf } from '../../workers/lib/db';

const db = globalDbOf(env);
const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };

/** Sets the user's credits to exactly `ds` through the ledger: a grant up, a charge down. */
async function setBalance(user: TestUser, ds: number) {
  const current = (await call('/api/v1/billing/balance', { token: user.token })).body.balance;
  const delta = Math.round((ds - current) * 100);
  const ref = `adjust:${crypto.randomUUID()}`;
  if (delta > 0) await grantCredits(db, { userId: user.user.id, amount: delta, description: 'test adjustment', businessKey: ref });
  if (delta < 0) await settle(db, { userId: user.user.id, executionId: ref, cost: -delta, description: 'test adjustment' });
}

describe('balance and transactions', () => {
  it('starts every user with the welcome grant', async () => {
    const user = await signUp();
    expect((await call('/api/v1/billing/balance', { token: user.token })).body).toEqual({ balance: 100, totalSpent: 0, canExecute: true, isAdmin: false });
    expect((await call('/api/v1/billing/transactions', { token: user.token })).body.transactions).toEqual([
      {
        id: expect.any(Number),
        userId: user.user.id,
        amount: 100,
        type: 'purchase',
        description: 'Welcome grant',
        executionId: null,
        paymentSessionId: null,
        createdAt: expect.any(String),
      },
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

  it('shows amounts in Ds with two decimals, signed, and canExecute from what is available', async () => {
    const user = await signUp();
    await settle(db, { userId: user.user.id, executionId: 'exec_77', cost: 5001, description: 'Notes: 1 input and 2 output tokens' });
    expect((await call('/api/v1/billing/balance', { token: user.token })).body).toEqual({
      balance: 49.99,
      totalSpent: 50.01,
      canExecute: false,
      isAdmin: false,
    });
    const [usage] = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    expect(usage).toEqual({
      id: expect.any(Number),
      userId: user.user.id,
      amount: -50.01,
      type: 'usage',
      description: 'Notes: 1 input and 2 output tokens',
      executionId: 'exec_77',
      paymentSessionId: null,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    await grantCredits(db, {
      userId: user.user.id,
      amount: 1,
      description: 'top-up',
      paymentSessionId: 'cs_test_9',
      businessKey: `test:${crypto.randomUUID()}`,
    });
    expect((await call('/api/v1/billing/balance', { token: user.token })).body).toMatchObject({ balance: 50, canExecute: true });
    expect((await call('/api/v1/billing/transactions', { token: user.token })).body.transactions[0]).toMatchObject({
      amount: 0.01,
      type: 'purchase',
      paymentSessionId: 'cs_test_9',
    });
  });

  it('says isAdmin for an account an operator marked so', async () => {
    const user = await signUp();
    await env.DB.prepare('UPDATE credit_accounts SET is_admin = 1 WHERE user_id = ?').bind(user.user.id).run();
    expect((await call('/api/v1/billing/balance', { token: user.token })).body.isAdmin).toBe(true);
  });

  it('lists the 50 most recent transactions, newest first', async () => {
    const user = await signUp();
    for (let i = 1; i <= 60; i++) {
      await grantCredits(db, { userId: user.user.id, amount: i, description: `grant ${i}`, businessKey: `test:${user.user.id}:${i}` });
    }
    const { transactions } = (await call('/api/v1/billing/transactions', { token: user.token })).body;
    expect(transactions).toHaveLength(50);
    expect(transactions.map((t: { description: string }) => t.description)).toEqual(Array.from({ length: 50 }, (_, i) => `grant ${60 - i}`));
    const ids = transactions.map((t: { id: number }) => t.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  it('never shows another user’s transactions', async () => {
    const user = await signUp();
    const other = await signUp();
    await grantCredits(db, { userId: other.user.id, amount: 500, description: 'theirs', businessKey: `test:${crypto.randomUUID()}` });
    const mine = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    expect(mine.map((t: { userId: string; description: string }) => [t.userId, t.description])).toEqual([[user.user.id, 'Welcome grant']]);
    const theirs = (await call('/api/v1/billing/transactions', { token: other.token })).body.transactions;
    expect(theirs.map((t: { userId: string }) => t.userId)).toEqual([other.user.id, other.user.id]);
    expect((await call('/api/v1/billing/balance', { token: user.token })).body.balance).toBe(100);
  });

  it('needs billing:read on API keys', async () => {
    const user = await signUp();
    const without = await createKey(user, ['profile:read']);
    for (const path of ['/api/v1/billing/balance', '/api/v1/billing/transactions']) {
      expect(expectError(await call(path, { apiKey: without.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'billing:read' });
    }
    const reader = await createKey(user, ['billing:read']);
    expect((await call('/api/v1/billing/balance', { apiKey: reader.key })).body.balance).toBe(100);
    expect((await call('/api/v1/billing/transactions', { apiKey: reader.key })).body.transactions).toHaveLength(1);
  });
});

describe('the run gate and limits', () => {
  it('refuses a run below 50 Ds with 402 in the flat legacy shape', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    await setBalance(user, 49.99);
    const res = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'x' } });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({
      error: 'INSUFFICIENT_CREDITS',
      balance: 49.99,
      availableBalance: 49.99,
      minimumRequired: 50,
      details: { serviceCode: 'INSUFFICIENT_CREDITS' },
    });
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
    await setBalance(user, 50);
    expect((await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'x' } })).status).toBe(200);
  });

  it('lets only one of two concurrent runs start when the balance covers one (two workspaces of one user)', async () => {
    const user = await signUp();
    const team = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    const inTeam = { 'x-workspace-id': team.body.id };
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, headers: inTeam, body: SKILL });
    await setBalance(user, 60);
    const runs = await Promise.all([
      call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'One.' } }),
      call('/api/v1/skills/notes/run', { token: user.token, headers: inTeam, body: { input: 'Two.' } }),
    ]);
    expect(runs.map((r) => r.status).sort()).toEqual([200, 402]);
    const refused = runs.find((r) => r.status === 402)!;
    // The first run holds all 60 Ds while it works.
    expect(refused.body).toMatchObject({ error: 'INSUFFICIENT_CREDITS', balance: 60, availableBalance: 0, minimumRequired: 50 });
    const started = runs.find((r) => r.status === 200)!;
    const workspace = started === runs[0] ? {} : inTeam;
    await waitForStatus(user, started.body.executionId, 'completed', workspace);
    expect((await call('/api/v1/billing/balance', { token: user.token })).body.canExecute).toBe(true);
  });

  it('stops a run whose cost passes its hold with limit_reached; the execution is idle and the charge stays within the balance', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Plan it.' } });
    const executionId = Number(created.body.id.slice(5));
    const turnKey = `${created.body.id}:tiny`;
    // What the run route does (claim the execution for the turn), with an empty hold: the local model
    // is so cheap (a whole run costs about 0.01 Ds) that only a zero hold is passed by its first request.
    await (await shardD1(user.workspaceId)).prepare("UPDATE executions SET status = 'working', turn_key = ? WHERE id = ?").bind(turnKey, executionId).run();
    const hold = await reserveCredits(db, { userId: user.user.id, executionId: created.body.id, turnKey, amount: 0 });
    expect(hold).toEqual({ reserved: true, amount: 0 });
    await env.EXECUTION_SESSION.getByName(created.body.id).startTurn({
      executionId,
      actor: sessionPrincipal(user),
      turnKey,
      budget: { amount: 0, limit: 'turn' },
      skillName: 'Notes',
      skillSlug: 'notes',
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
    // The result shows what was charged, which is the usage transaction of this execution.
    const charged = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions.find(
      (t: { executionId: string | null }) => t.executionId === created.body.id,
    );
    expect(events.find((e) => e.type === 'execution.result')!.payload.cost).toBe(-charged.amount);
  });
});
