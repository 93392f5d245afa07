/**
 * Issue 11, part 4, the faults a test inside workerd can stage: a Stripe webhook replayed ten
 * times grants once, and twenty concurrent runs by one user never overdraw the balance.
 */
import { env } from 'cloudflare:workers';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { now } from '../../workers/lib/clock';
import { grantCredits, MIN_RUN_BALANCE, RUN_BUDGET } from '../../workers/services/credits';
import { call, createKey, signUp, type TestUser } from '../helpers/api';
import { globalDbOf } from '../../workers/lib/db';
import { allShards } from '../helpers/shards';

const db = globalDbOf(env);
const seconds = (ms: number) => Math.floor(ms / 1000);
const id = (prefix: string) => `${prefix}_${crypto.randomUUID().replaceAll('-', '')}`;

const stripeEvent = (type: string, object: Record<string, unknown>) =>
  JSON.stringify({ id: id('evt'), object: 'event', api_version: '2026-10-28.endive', created: seconds(now()), livemode: false, type, data: { object } });

/** Delivers `payload` as Stripe would, freshly signed each time (as Stripe signs every retry). */
async function deliver(payload: string) {
  const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: env.STRIPE_WEBHOOK_SECRET!, timestamp: seconds(now()) });
  return call('/api/v1/billing/webhook', { method: 'POST', rawBody: payload, headers: { 'stripe-signature': signature } });
}

/** The user's account and ledger, straight from D1, in hundredths. */
async function ledger(user: TestUser) {
  const account = await env.DB.prepare('SELECT balance, reserved FROM credit_accounts WHERE user_id = ?')
    .bind(user.user.id)
    .first<{ balance: number; reserved: number }>();
  const { results } = await env.DB.prepare('SELECT amount, type, execution_id, payment_session_id, business_key FROM credit_transactions WHERE user_id = ?')
    .bind(user.user.id)
    .all<{ amount: number; type: string; execution_id: string | null; payment_session_id: string | null; business_key: string }>();
  return { ...account!, transactions: results };
}

describe('a Stripe webhook replayed ten times', () => {
  const paidCheckout = (user: TestUser, packId: string) => ({
    id: id('cs_test'),
    object: 'checkout.session',
    mode: 'payment',
    payment_status: 'paid',
    status: 'complete',
    client_reference_id: user.user.id,
    metadata: { userId: user.user.id, packId },
  });

  it('grants once, delivered one after another or all at once', async () => {
    const user = await signUp();
    const sequential = paidCheckout(user, 'starter');
    const payload = stripeEvent('checkout.session.completed', sequential);
    for (let i = 0; i < 10; i++) expect((await deliver(payload)).body).toEqual({ received: true });

    const concurrent = paidCheckout(user, 'regular');
    const concurrentPayload = stripeEvent('checkout.session.completed', concurrent);
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(concurrentPayload)));
    expect(answers.map((a) => [a.status, a.body])).toEqual(Array(10).fill([200, { received: true }]));

    // Ten invoice.paid replays at once: one subscription grant.
    const invoice = {
      id: id('in'),
      object: 'invoice',
      status: 'paid',
      billing_reason: 'subscription_cycle',
      parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_1', metadata: { userId: user.user.id } } },
      lines: {
        object: 'list',
        has_more: false,
        data: [{ id: 'il_1', object: 'line_item', metadata: {}, period: { start: seconds(now()), end: seconds(now() + 30 * 86_400_000) } }],
      },
    };
    const invoicePayload = stripeEvent('invoice.paid', invoice);
    expect((await Promise.all(Array.from({ length: 10 }, () => deliver(invoicePayload)))).map((a) => a.status)).toEqual(Array(10).fill(200));

    const { balance, transactions } = await ledger(user);
    // Welcome 100 + starter 500 + regular 1200 + basedmode 2000 Ds.
    expect(balance).toBe((100 + 500 + 1200 + 2000) * 100);
    expect(transactions.filter((t) => t.payment_session_id === sequential.id)).toHaveLength(1);
    expect(transactions.filter((t) => t.payment_session_id === concurrent.id)).toHaveLength(1);
    expect(transactions.filter((t) => t.business_key === `invoice:${invoice.id}`)).toHaveLength(1);
    expect(transactions).toHaveLength(4);
    expect((await call('/api/v1/billing/balance', { token: user.token })).body.balance).toBe(3800);
  });
});

describe('twenty concurrent runs by one user', () => {
  it('never overdraw the balance: holds stay within it, each run is settled once, and the ledger adds up', async () => {
    const user = await signUp();
    // Five workspaces (MAX_ACTIVE_EXECUTIONS is per workspace), each with its own key, so the
    // user's session stays under its rate limit; four runs in each.
    const keys = [await createKey(user, ['*'])];
    for (let i = 0; i < 4; i++) {
      const workspace = await call('/api/v1/workspaces', {
        token: user.token,
        body: { name: `Team ${i}`, slug: `faults-${i}-${crypto.randomUUID().slice(0, 8)}` },
      });
      expect(workspace.status).toBe(201);
      const key = await call('/api/v1/api-keys', {
        token: user.token,
        headers: { 'x-workspace-id': workspace.body.id },
        body: { name: `team ${i}`, scopes: ['*'] },
      });
      expect(key.status).toBe(201);
      keys.push(key.body);
    }
    for (const key of keys) {
      const skill = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
      expect((await call('/api/v1/skills/notes', { method: 'PUT', apiKey: key.key, body: skill })).status).toBe(200);
    }
    // 450 Ds: two full holds of RUN_BUDGET and one of MIN_RUN_BALANCE, then nothing is available.
    const start = 2 * RUN_BUDGET + MIN_RUN_BALANCE;
    await grantCredits(db, { userId: user.user.id, amount: start - 100 * 100, description: 'test grant', businessKey: id('grant') });
    expect((await ledger(user)).balance).toBe(start);

    // Watch the account while the runs race.
    const samples: { balance: number; reserved: number }[] = [];
    let racing = true;
    const watcher = (async () => {
      while (racing) {
        const { balance, reserved } = await ledger(user);
        samples.push({ balance, reserved });
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call('/api/v1/skills/notes/run', { apiKey: keys[i % keys.length]!.key, body: { input: `Run ${i}.` } })),
    );

    for (const answer of answers) {
      expect([200, 402, 409], JSON.stringify(answer.body)).toContain(answer.status);
      if (answer.status === 402) expect(answer.body).toMatchObject({ error: 'INSUFFICIENT_CREDITS', minimumRequired: 50 });
      if (answer.status === 409) expect(answer.body).toMatchObject({ error: 'EXECUTION_RUNNING' });
    }
    const started = answers.filter((a) => a.status === 200).map((a) => a.body.executionId as string);
    expect(started.length).toBeGreaterThan(0);
    // Five workspaces could run five at once; the balance covers three holds.
    expect(answers.some((a) => a.status === 402)).toBe(true);

    // Every run ends, and with it its hold.
    for (let i = 0; i < 500; i++) {
      // The five workspaces may sit on different shards: count on every one.
      const { results } = await allShards
        .prepare("SELECT COUNT(*) AS working FROM executions WHERE user_id = ? AND status = 'working'")
        .bind(user.user.id)
        .all<{ working: number }>();
      if (results.every((shard) => shard.working === 0)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    racing = false;
    await watcher;

    // The watcher saw the holds taken while the runs raced.
    expect(Math.max(...samples.map((s) => s.reserved))).toBeGreaterThan(0);
    for (const sample of samples) {
      expect(sample.balance).toBeGreaterThanOrEqual(0);
      expect(sample.reserved).toBeLessThanOrEqual(sample.balance);
    }
    const { balance, reserved, transactions } = await ledger(user);
    const { results: executions } = await allShards
      .prepare('SELECT id, status FROM executions WHERE user_id = ?')
      .bind(user.user.id)
      .all<{ id: number; status: string }>();
    expect(executions.map((e) => `exec_${e.id}`).sort()).toEqual([...started].sort());
    for (const execution of executions) expect(['completed', 'idle']).toContain(execution.status);
    expect(reserved).toBe(0);
    expect(balance).toBeGreaterThanOrEqual(0);
    // One usage transaction per run, and the balance is exactly the start less what they charged.
    const usage = transactions.filter((t) => t.type === 'usage');
    expect(usage.map((t) => t.execution_id).sort()).toEqual([...started].sort());
    const charged = usage.reduce((sum, t) => sum - t.amount, 0);
    expect(charged).toBeLessThanOrEqual(start);
    expect(balance).toBe(start - charged);
    expect(transactions.reduce((sum, t) => sum + t.amount, 0)).toBe(balance);
  });
});
