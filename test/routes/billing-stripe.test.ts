import { env } from 'cloudflare:workers';
import Stripe from 'stripe';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../workers/app';
import type { Env } from '../../workers/env';
import { AppError } from '../../workers/errors';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { packOffer } from '../../workers/services/billing';
import { checkoutIdempotencyKey, createCheckoutSession } from '../../workers/services/stripe';
import { BASE, call, createKey, expectError, sessionPrincipal, signUp, type TestUser } from '../helpers/api';
import { globalDbOf } from '../../workers/lib/db';

const db = globalDbOf(env);
const WEBHOOK_SECRET = env.STRIPE_WEBHOOK_SECRET!;
const DAY = 86_400_000;

afterEach(() => resetClock());

/** The Worker with some settings changed (the test env's STRIPE_SECRET_KEY is empty, on purpose). */
async function callWith(overrides: Partial<Env>, path: string, init: RequestInit = {}) {
  const response = await createApp().fetch(new Request(`${BASE}${path}`, init), { ...env, ...overrides });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text.startsWith('{') ? JSON.parse(text) : text };
}

const balanceOf = async (user: TestUser): Promise<number> => (await call('/api/v1/billing/balance', { token: user.token })).body.balance;
const tierOf = async (user: TestUser) => (await call('/api/v1/billing/subscription/tier', { token: user.token })).body;

const seconds = (ms: number) => Math.floor(ms / 1000);

function event(type: string, object: Record<string, unknown>, id = `evt_${crypto.randomUUID().replaceAll('-', '')}`) {
  return JSON.stringify({ id, object: 'event', api_version: '2026-10-28.endive', created: seconds(now()), livemode: false, type, data: { object } });
}

const checkoutSession = (user: TestUser, overrides: Record<string, unknown> = {}) => ({
  id: `cs_test_${crypto.randomUUID().replaceAll('-', '')}`,
  object: 'checkout.session',
  mode: 'payment',
  amount_total: 1000,
  currency: 'usd',
  payment_status: 'paid',
  status: 'complete',
  client_reference_id: user.user.id,
  metadata: { userId: user.user.id, packId: 'regular' },
  ...overrides,
});

/** A paid subscription invoice in the current API shape (`parent.subscription_details`). */
const invoice = (userId: string | null, periodEndMs: number, overrides: Record<string, unknown> = {}) => ({
  id: `in_${crypto.randomUUID().replaceAll('-', '')}`,
  object: 'invoice',
  status: 'paid',
  amount_paid: 2900,
  billing_reason: 'subscription_cycle',
  parent: { type: 'subscription_details', quote_details: null, subscription_details: { subscription: 'sub_1', metadata: userId ? { userId } : {} } },
  lines: {
    object: 'list',
    has_more: false,
    data: [{ id: 'il_1', object: 'line_item', amount: 2900, metadata: {}, period: { start: seconds(periodEndMs - 30 * DAY), end: seconds(periodEndMs) } }],
  },
  ...overrides,
});

/** Delivers `payload` to the webhook as Stripe would, signed with `secret` at `timestamp` (seconds). */
async function deliver(payload: string, options: { secret?: string; timestamp?: number; signature?: string | null; body?: string } = {}) {
  const signature =
    options.signature === undefined
      ? await Stripe.webhooks.generateTestHeaderStringAsync({
          payload,
          secret: options.secret ?? WEBHOOK_SECRET,
          timestamp: options.timestamp ?? seconds(now()),
        })
      : options.signature;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== null) headers['stripe-signature'] = signature;
  return call('/api/v1/billing/webhook', { method: 'POST', rawBody: options.body ?? payload, headers });
}

const LIST_PRICES = [
  { id: 'starter', name: 'Starter', dollarinos: 500, priceCents: 500 },
  { id: 'regular', name: 'Regular', dollarinos: 1200, priceCents: 1000 },
  { id: 'plus', name: 'Plus', dollarinos: 3000, priceCents: 2500 },
  { id: 'pro', name: 'Pro', dollarinos: 6500, priceCents: 5000 },
];

async function subscribeUntil(user: TestUser, expiresAt: number) {
  await env.DB.prepare('UPDATE credit_accounts SET subscription_expires_at = ? WHERE user_id = ?').bind(expiresAt, user.user.id).run();
}

describe('GET /api/v1/billing/packs', () => {
  it('lists the packs at list price', async () => {
    const user = await signUp();
    const res = await call('/api/v1/billing/packs', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ packs: LIST_PRICES });
  });

  it('takes 20% off while a basedmode subscription is paid up, and not after it lapses', async () => {
    const user = await signUp();
    await subscribeUntil(user, now() + DAY);
    const discounted = (await call('/api/v1/billing/packs', { token: user.token })).body.packs;
    expect(discounted.map((p: { priceCents: number }) => p.priceCents)).toEqual([400, 800, 2000, 4000]);
    expect(discounted.map((p: { dollarinos: number }) => p.dollarinos)).toEqual([500, 1200, 3000, 6500]);
    advanceClock(DAY + 1);
    expect((await call('/api/v1/billing/packs', { token: user.token })).body).toEqual({ packs: LIST_PRICES });
  });
});

describe('POST /api/v1/billing/purchase', () => {
  const valid = {
    packId: 'regular',
    email: 'buyer@example.test',
    successUrl: 'https://app.example.test/paid',
    cancelUrl: 'https://app.example.test/cancelled',
  };

  it('refuses each bad field with 400 INVALID_INPUT naming it', async () => {
    const user = await signUp();
    const cases: [Record<string, unknown>, string][] = [
      [{ ...valid, packId: undefined }, 'packId'],
      [{ ...valid, packId: 12 }, 'packId'],
      [{ ...valid, email: 'not-an-email' }, 'email'],
      [{ ...valid, email: undefined }, 'email'],
      [{ ...valid, successUrl: 'ftp://app.example.test/paid' }, 'successUrl'],
      [{ ...valid, successUrl: 'not a url' }, 'successUrl'],
      [{ ...valid, cancelUrl: 'javascript:alert(1)' }, 'cancelUrl'],
      [{ ...valid, cancelUrl: undefined }, 'cancelUrl'],
    ];
    for (const [body, field] of cases) {
      const error = expectError(await call('/api/v1/billing/purchase', { token: user.token, body }), 400, 'INVALID_INPUT');
      expect(error.details?.field, JSON.stringify(body)).toBe(field);
    }
  });

  it('answers an unknown pack 400 whether or not Stripe is configured', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/billing/purchase', { token: user.token, body: { ...valid, packId: 'gold' } }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'packId', rule: 'unknown_pack' });
    // With a key the pack is still checked first, so this never reaches Stripe.
    const configured = await callWith({ STRIPE_SECRET_KEY: 'sk_test_unused' }, '/api/v1/billing/purchase', {
      method: 'POST',
      headers: { 'x-auth-token': user.token, 'content-type': 'application/json' },
      body: JSON.stringify({ ...valid, packId: 'gold' }),
    });
    expect(configured.status).toBe(400);
    expect(configured.body.error).toMatchObject({ code: 'INVALID_INPUT', details: { field: 'packId' } });
  });

  it('is 503 SERVICE_UNAVAILABLE naming STRIPE_SECRET_KEY without one, and writes nothing', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/billing/purchase', { token: user.token, body: valid }), 503, 'SERVICE_UNAVAILABLE');
    expect(error.details).toEqual({ setting: 'STRIPE_SECRET_KEY' });
    const audit = await call('/api/v1/audit-logs?action=billing.checkout_created', { token: user.token });
    expect(audit.body.data).toEqual([]);
  });

  it('needs profile:write on API keys, and a credential', async () => {
    const user = await signUp();
    const reader = await createKey(user, ['billing:read']);
    const error = expectError(await call('/api/v1/billing/purchase', { apiKey: reader.key, body: valid }), 403, 'FORBIDDEN');
    expect(error.details).toEqual({ scope: 'profile:write' });
    expectError(await call('/api/v1/billing/purchase', { body: valid }), 401, 'UNAUTHORIZED');
  });
});

describe('createCheckoutSession (Stripe on a fake fetch, no network)', () => {
  const input = { email: 'buyer@example.test', successUrl: 'https://app.example.test/paid', cancelUrl: `${BASE}/api/v1/billing/return/cancel` };

  /** A Stripe client whose every request goes to `handler`. */
  function fakeStripe(handler: (url: string, init: RequestInit) => Response) {
    const requests: { url: string; init: RequestInit }[] = [];
    const fetchFn = async (url: string | URL | Request, init?: RequestInit) => {
      requests.push({ url: String(url), init: init ?? {} });
      return handler(String(url), init ?? {});
    };
    return { stripe: new Stripe('sk_test_fake', { httpClient: Stripe.createFetchHttpClient(fetchFn as typeof fetch) }), requests };
  }

  const sessionResponse = (id: string) =>
    new Response(
      JSON.stringify({
        id,
        object: 'checkout.session',
        mode: 'payment',
        payment_status: 'unpaid',
        status: 'open',
        url: `https://checkout.stripe.com/c/pay/${id}`,
      }),
      {
        status: 200,
        headers: { 'content-type': 'application/json', 'request-id': 'req_fake' },
      },
    );

  it('sends exactly the session the webhook will grant from, with the idempotency key, and records it', async () => {
    const user = await signUp();
    const principal = sessionPrincipal(user);
    const pack = await packOffer(db, principal, 'regular');
    const { stripe, requests } = fakeStripe(() => sessionResponse('cs_test_fake1'));
    const key = await checkoutIdempotencyKey(user.user.id, 'client-retry-1');

    const result = await createCheckoutSession(stripe, db, principal, { ...input, pack }, key);
    expect(result).toEqual({ checkoutUrl: 'https://checkout.stripe.com/c/pay/cs_test_fake1' });

    expect(requests).toHaveLength(1);
    const [{ url, init }] = requests as [{ url: string; init: RequestInit }];
    expect(init.method).toBe('POST');
    expect(url).toBe('https://api.stripe.com/v1/checkout/sessions');
    const headers = new Headers(init.headers);
    expect(headers.get('idempotency-key')).toBe(key);
    expect(headers.get('authorization')).toBe('Bearer sk_test_fake');
    expect(headers.get('content-type')).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(String(init.body)))).toEqual({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '1000',
      'line_items[0][price_data][product_data][name]': 'Regular: 1200 Ds',
      client_reference_id: user.user.id,
      'metadata[userId]': user.user.id,
      'metadata[packId]': 'regular',
      customer_email: 'buyer@example.test',
      success_url: 'https://app.example.test/paid',
      cancel_url: `${BASE}/api/v1/billing/return/cancel`,
    });

    const audit = (await call('/api/v1/audit-logs?action=billing.checkout_created', { token: user.token })).body.data;
    expect(audit).toEqual([
      expect.objectContaining({
        action: 'billing.checkout_created',
        resourceType: 'checkout_session',
        resourceId: 'cs_test_fake1',
        metadata: { packId: 'regular', dollarinos: 1200, priceCents: 1000 },
      }),
    ]);
    expect(await balanceOf(user)).toBe(100); // the checkout itself grants nothing (spec 4.9 rule 2)
  });

  it('charges the discounted price to a basedmode subscriber', async () => {
    const user = await signUp();
    await subscribeUntil(user, now() + DAY);
    const principal = sessionPrincipal(user);
    const { stripe, requests } = fakeStripe(() => sessionResponse('cs_test_fake2'));
    await createCheckoutSession(stripe, db, principal, { ...input, pack: await packOffer(db, principal, 'plus') }, crypto.randomUUID());
    expect(new URLSearchParams(String(requests[0]!.init.body)).get('line_items[0][price_data][unit_amount]')).toBe('2000');
  });

  it('derives the Stripe idempotency key from the caller and their idempotency-key', async () => {
    const a = await checkoutIdempotencyKey('user-a', 'k1');
    expect(await checkoutIdempotencyKey('user-a', 'k1')).toBe(a);
    expect(await checkoutIdempotencyKey('user-b', 'k1')).not.toBe(a);
    expect(await checkoutIdempotencyKey('user-a', 'k2')).not.toBe(a);
    expect(a).toMatch(/^checkout-[0-9a-f]{64}$/);
    const fresh = await checkoutIdempotencyKey('user-a', undefined);
    expect(fresh).toMatch(/^[0-9a-f-]{36}$/);
    expect(await checkoutIdempotencyKey('user-a', undefined)).not.toBe(fresh);
  });

  it('turns a Stripe refusal into 400 INVALID_INPUT "checkout not created", records nothing', async () => {
    const user = await signUp();
    const principal = sessionPrincipal(user);
    const { stripe } = fakeStripe(
      () =>
        new Response(JSON.stringify({ error: { type: 'invalid_request_error', code: 'url_invalid', message: 'Not a valid URL', param: 'success_url' } }), {
          status: 400,
          headers: { 'content-type': 'application/json' },
        }),
    );
    const failure = await createCheckoutSession(
      stripe,
      db,
      principal,
      { ...input, pack: await packOffer(db, principal, 'starter') },
      crypto.randomUUID(),
    ).catch((e) => e);
    expect(failure).toBeInstanceOf(AppError);
    expect(failure).toMatchObject({ code: 'INVALID_INPUT', status: 400, details: { rule: 'checkout_not_created', stripeCode: 'url_invalid' } });
    expect((await call('/api/v1/audit-logs?action=billing.checkout_created', { token: user.token })).body.data).toEqual([]);
  });
});

describe('POST /api/v1/billing/webhook: signatures', () => {
  it('needs no credential, only a valid signature', async () => {
    const user = await signUp();
    const res = await deliver(event('checkout.session.completed', checkoutSession(user)));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect(await balanceOf(user)).toBe(1300);
  });

  it('refuses a tampered body, a wrong secret, a missing or malformed header and a stale timestamp with 400, granting nothing', async () => {
    const user = await signUp();
    const payload = event('checkout.session.completed', checkoutSession(user));
    const tampered = payload.replace('"regular"', '"pro"');
    expect(tampered).not.toBe(payload);
    const refusals = [
      await deliver(payload, { body: tampered }),
      await deliver(payload, { secret: 'whsec_someone_else' }),
      await deliver(payload, { signature: null }),
      await deliver(payload, { signature: 'not-a-signature' }),
      await deliver(payload, { timestamp: seconds(now()) - 10 * 60 }),
    ];
    for (const res of refusals) {
      expect(expectError(res, 400, 'INVALID_INPUT').details).toMatchObject({ field: 'stripe-signature' });
    }
    expect(await balanceOf(user)).toBe(100);
    expect((await call('/api/v1/billing/transactions', { token: user.token })).body.transactions).toHaveLength(1);
  });

  it('is 503 SERVICE_UNAVAILABLE naming STRIPE_WEBHOOK_SECRET without one', async () => {
    const user = await signUp();
    const payload = event('checkout.session.completed', checkoutSession(user));
    const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: WEBHOOK_SECRET });
    const res = await callWith({ STRIPE_WEBHOOK_SECRET: undefined }, '/api/v1/billing/webhook', {
      method: 'POST',
      headers: { 'stripe-signature': signature, 'content-type': 'application/json' },
      body: payload,
    });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { setting: 'STRIPE_WEBHOOK_SECRET' } });
    expect(await balanceOf(user)).toBe(100);
  });
});

describe('POST /api/v1/billing/webhook: pack grants', () => {
  it('grants a paid completed checkout once: a purchase transaction carrying the session id', async () => {
    const user = await signUp();
    const session = checkoutSession(user, { metadata: { userId: user.user.id, packId: 'plus' } });
    expect((await deliver(event('checkout.session.completed', session))).status).toBe(200);
    expect(await balanceOf(user)).toBe(3100);
    const [latest] = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    expect(latest).toMatchObject({
      userId: user.user.id,
      amount: 3000,
      type: 'purchase',
      description: 'Plus pack: 3000 Ds',
      paymentSessionId: session.id,
      executionId: null,
    });
  });

  it('grants nothing for an unpaid completed checkout, then the pack once its async payment succeeds', async () => {
    const user = await signUp();
    const session = checkoutSession(user, { payment_status: 'unpaid' });
    expect((await deliver(event('checkout.session.completed', session))).body).toEqual({ received: true });
    expect(await balanceOf(user)).toBe(100);
    expect((await deliver(event('checkout.session.async_payment_succeeded', { ...session, payment_status: 'paid' }))).status).toBe(200);
    expect(await balanceOf(user)).toBe(1300);
  });

  it('grants once for a replayed event, a duplicate event id, and completed followed by async_payment_succeeded', async () => {
    const user = await signUp();
    const session = checkoutSession(user);
    const payload = event('checkout.session.completed', session);
    for (const res of [
      await deliver(payload),
      await deliver(payload),
      await deliver(event('checkout.session.completed', session)),
      await deliver(event('checkout.session.async_payment_succeeded', session)),
    ]) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    expect(await balanceOf(user)).toBe(1300);
    const purchases = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions.filter(
      (t: { paymentSessionId: string | null }) => t.paymentSessionId === session.id,
    );
    expect(purchases).toHaveLength(1);
  });

  it('falls back to client_reference_id when the metadata has no userId', async () => {
    const user = await signUp();
    await deliver(event('checkout.session.completed', checkoutSession(user, { metadata: { packId: 'starter' } })));
    expect(await balanceOf(user)).toBe(600);
  });

  it('answers 200 and writes nothing for an unknown user, an unknown pack or another event type', async () => {
    const user = await signUp();
    const ghost = { ...user, user: { ...user.user, id: crypto.randomUUID() } };
    const ignored = [
      await deliver(event('checkout.session.completed', checkoutSession(ghost))),
      await deliver(event('checkout.session.completed', checkoutSession(user, { metadata: { userId: user.user.id, packId: 'gold' } }))),
      await deliver(event('checkout.session.completed', checkoutSession(user, { metadata: { packId: 'starter' }, client_reference_id: null }))),
      await deliver(event('checkout.session.expired', checkoutSession(user))),
      await deliver(event('payment_intent.succeeded', { id: 'pi_1', object: 'payment_intent', metadata: { userId: user.user.id, packId: 'regular' } })),
    ];
    for (const res of ignored) expect([res.status, res.body]).toEqual([200, { received: true }]);
    expect(await balanceOf(user)).toBe(100);
    const ghostRows = await env.DB.prepare('SELECT COUNT(*) AS n FROM credit_accounts WHERE user_id = ?').bind(ghost.user.id).first<{ n: number }>();
    expect(ghostRows?.n).toBe(0);
  });

  it('answers 500 when D1 fails, so Stripe retries, and the retry grants', async () => {
    const user = await signUp();
    const payload = event('checkout.session.completed', checkoutSession(user));
    await env.DB.exec('ALTER TABLE credit_transactions RENAME TO credit_transactions_away');
    try {
      expectError(await deliver(payload), 500, 'INTERNAL_ERROR');
    } finally {
      await env.DB.exec('ALTER TABLE credit_transactions_away RENAME TO credit_transactions');
    }
    expect(await balanceOf(user)).toBe(100);
    expect((await deliver(payload)).status).toBe(200);
    expect(await balanceOf(user)).toBe(1300);
  });
});

describe('POST /api/v1/billing/webhook: basedmode invoices', () => {
  it('grants 2000 Ds once per invoice and makes the tier basedmode until the period end', async () => {
    const user = await signUp();
    const periodEnd = seconds(now() + 30 * DAY) * 1000;
    const paid = invoice(user.user.id, periodEnd);
    const payload = event('invoice.paid', paid);
    expect((await deliver(payload)).body).toEqual({ received: true });
    expect((await deliver(payload)).status).toBe(200);
    expect((await deliver(event('invoice.paid', paid))).status).toBe(200);
    expect(await balanceOf(user)).toBe(2100);
    const [latest] = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    expect(latest).toMatchObject({ amount: 2000, type: 'purchase', paymentSessionId: paid.id });
    expect(await tierOf(user)).toEqual({
      tier: 'basedmode',
      info: { name: 'Based', priceCents: 2900, priceDisplay: '$29/month', monthlyCredits: 2000, packDiscount: 0.2 },
      subscriptionExpiresAt: new Date(periodEnd).toISOString(),
      isTestMode: true,
    });
  });

  it('never moves the expiry backwards when an older invoice arrives late', async () => {
    const user = await signUp();
    const later = seconds(now() + 60 * DAY) * 1000;
    await deliver(event('invoice.paid', invoice(user.user.id, later)));
    await deliver(event('invoice.paid', invoice(user.user.id, seconds(now() + 30 * DAY) * 1000)));
    expect(await balanceOf(user)).toBe(4100);
    expect((await tierOf(user)).subscriptionExpiresAt).toBe(new Date(later).toISOString());
  });

  it('reads the user from older API versions’ subscription_details, or from the lines, and falls back to 31 days', async () => {
    const legacy = await signUp();
    await deliver(
      event(
        'invoice.paid',
        invoice(null, now() + 30 * DAY, { parent: undefined, subscription: 'sub_legacy', subscription_details: { metadata: { userId: legacy.user.id } } }),
      ),
    );
    expect(await balanceOf(legacy)).toBe(2100);

    const byLines = await signUp();
    const before = now();
    await deliver(
      event(
        'invoice.paid',
        invoice(null, 0, { lines: { object: 'list', has_more: false, data: [{ id: 'il_2', metadata: { userId: byLines.user.id }, period: null }] } }),
      ),
    );
    expect(await balanceOf(byLines)).toBe(2100);
    const expires = Date.parse((await tierOf(byLines)).subscriptionExpiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 31 * DAY);
    expect(expires).toBeLessThanOrEqual(now() + 31 * DAY);
  });

  it('ignores an invoice that is not for a subscription, or whose user is unknown', async () => {
    const user = await signUp();
    for (const res of [
      await deliver(event('invoice.paid', invoice(user.user.id, now() + 30 * DAY, { parent: { type: 'quote_details', subscription_details: null } }))),
      await deliver(event('invoice.paid', invoice(crypto.randomUUID(), now() + 30 * DAY))),
      await deliver(event('invoice.paid', invoice(null, now() + 30 * DAY))),
    ]) {
      expect([res.status, res.body]).toEqual([200, { received: true }]);
    }
    expect(await balanceOf(user)).toBe(100);
    expect((await tierOf(user)).tier).toBe('paygmode');
  });
});

describe('GET /api/v1/billing/subscription/tier', () => {
  it('moves paygmode → byokmode → basedmode → byokmode (lapsed) → sitelicense', async () => {
    const user = await signUp();
    expect(await tierOf(user)).toEqual({
      tier: 'paygmode',
      info: { name: 'Pay as you go', priceCents: 0, priceDisplay: 'Free', monthlyCredits: 0, packDiscount: 0 },
      subscriptionExpiresAt: null,
      isTestMode: true,
    });

    // A stored BYOK key (written here directly; the /byok routes are tested on their own).
    await env.DB.prepare('INSERT INTO byok_keys (user_id, provider, ciphertext, key_preview, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)')
      .bind(user.user.id, 'openai', 'not-a-real-ciphertext', 'sk-…abcd', now(), now())
      .run();
    expect((await tierOf(user)).tier).toBe('byokmode');

    const until = now() + DAY;
    await subscribeUntil(user, until);
    expect(await tierOf(user)).toMatchObject({ tier: 'basedmode', subscriptionExpiresAt: new Date(until).toISOString() });

    advanceClock(DAY + 1);
    expect(await tierOf(user)).toMatchObject({ tier: 'byokmode', subscriptionExpiresAt: new Date(until).toISOString() });

    // An operator's licence outranks everything.
    await env.DB.prepare('UPDATE credit_accounts SET site_license = 1 WHERE user_id = ?').bind(user.user.id).run();
    expect(await tierOf(user)).toMatchObject({
      tier: 'sitelicense',
      info: { name: 'Site license', priceCents: 0, priceDisplay: 'Licensed', monthlyCredits: 0, packDiscount: 0 },
    });
  });

  it('says isTestMode false only with a live key', async () => {
    const user = await signUp();
    const headers = { 'x-auth-token': user.token };
    for (const [key, testMode] of [
      ['sk_live_abc', false],
      ['rk_live_abc', false],
      ['sk_test_abc', true],
    ] as const) {
      const res = await callWith({ STRIPE_SECRET_KEY: key }, '/api/v1/billing/subscription/tier', { headers });
      expect(res.body.isTestMode, key).toBe(testMode);
    }
  });
});

describe('GET /api/v1/billing/subscription/info and /publishable-key', () => {
  it('lists the three modes a user can be in, without sitelicense', async () => {
    const user = await signUp();
    const res = await call('/api/v1/billing/subscription/info', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      modes: {
        byokmode: { name: 'BYOK', priceCents: 0, priceDisplay: 'Free', monthlyCredits: 0, packDiscount: 0 },
        paygmode: { name: 'Pay as you go', priceCents: 0, priceDisplay: 'Free', monthlyCredits: 0, packDiscount: 0 },
        basedmode: { name: 'Based', priceCents: 2900, priceDisplay: '$29/month', monthlyCredits: 2000, packDiscount: 0.2 },
      },
    });
  });

  it('answers the publishable key, or 503 naming STRIPE_PUBLISHABLE_KEY without one', async () => {
    const user = await signUp();
    expect((await call('/api/v1/billing/publishable-key', { token: user.token })).body).toEqual({ publishableKey: env.STRIPE_PUBLISHABLE_KEY });
    const res = await callWith({ STRIPE_PUBLISHABLE_KEY: undefined }, '/api/v1/billing/publishable-key', { headers: { 'x-auth-token': user.token } });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { setting: 'STRIPE_PUBLISHABLE_KEY' } });
  });

  it('needs billing:read on API keys for every billing read', async () => {
    const user = await signUp();
    const without = await createKey(user, ['profile:read', 'profile:write']);
    const reader = await createKey(user, ['billing:read']);
    for (const path of ['/api/v1/billing/packs', '/api/v1/billing/subscription/tier', '/api/v1/billing/subscription/info', '/api/v1/billing/publishable-key']) {
      expect(expectError(await call(path, { apiKey: without.key }), 403, 'FORBIDDEN').details, path).toEqual({ scope: 'billing:read' });
      expect((await call(path, { apiKey: reader.key })).status, path).toBe(200);
    }
  });
});

describe('GET /api/v1/billing/return/:outcome', () => {
  for (const outcome of ['success', 'cancel'] as const) {
    it(`hands ${outcome} over to the app without a credential`, async () => {
      const res = await call(`/api/v1/billing/return/${outcome}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-store');
      const html = String(res.body);
      expect(html).toContain(`<meta http-equiv="refresh" content="0;url=workspaceskills://payment-${outcome}"`);
      expect(html).toContain(`<a href="workspaceskills://payment-${outcome}">Return to the app</a>`);
      expect(html).toContain(`<title>Payment ${outcome === 'success' ? 'received' : 'cancelled'} · Workspace AI Skills</title>`);
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    });
  }

  it('uses APP_SCHEME, and refuses one that is not a URI scheme', async () => {
    const custom = await callWith({ APP_SCHEME: 'my-app.beta+1' }, '/api/v1/billing/return/success');
    expect(custom.text).toContain('content="0;url=my-app.beta+1://payment-success"');
    const injected = await callWith({ APP_SCHEME: '"><script>alert(1)</script>' }, '/api/v1/billing/return/cancel');
    expect(injected.status).toBe(503);
    expect(injected.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { setting: 'APP_SCHEME' } });
    expect(injected.text).not.toContain('<script>');
  });

  it('answers any other outcome 404 in the envelope', async () => {
    for (const outcome of ['done', 'SUCCESS', 'success.html']) {
      expectError(await call(`/api/v1/billing/return/${outcome}`), 404, 'NOT_FOUND');
    }
  });
});
