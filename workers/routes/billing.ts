import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { notFound } from '../errors';
import { appDeepLink, RETURN_OUTCOMES, returnPage, type ReturnOutcome } from '../lib/return-page';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import { getTier, listPacks, Pack, packOffer, SubscriptionInfo, subscriptionInfo, TierResponse } from '../services/billing';
import { BalanceStatus, getBalance, listTransactions, Transaction } from '../services/credits';
import { applyStripeEvent, checkoutIdempotencyKey, createCheckoutSession, publishableKey, PurchaseBody, stripeClient, verifyWebhook } from '../services/stripe';
import { documented, documentedPage } from './openapi';

const isOutcome = (value: string): value is ReturnOutcome => (RETURN_OUTCOMES as readonly string[]).includes(value);

/** The caller's credits, packs, purchases and tier (spec 4.9), plus Stripe's webhook and the Checkout return pages. */
export const billingRoutes = new Hono<AppEnv>()
  .get('/balance', documented('Billing', 'Balance, total spent and whether a run can start', 200, BalanceStatus), async (c) =>
    c.json(await getBalance(c.var.db, principalOf(c))),
  )
  .get(
    '/transactions',
    documented('Billing', 'The 50 most recent transactions, newest first', 200, z.object({ transactions: z.array(Transaction) })),
    async (c) => c.json(await listTransactions(c.var.db, principalOf(c))),
  )
  .get(
    '/packs',
    documented('Billing', 'Credit packs at the caller’s prices (20% off while basedmode is paid up)', 200, z.object({ packs: z.array(Pack) })),
    async (c) => c.json(await listPacks(c.var.db, principalOf(c))),
  )
  .post(
    '/purchase',
    documented(
      'Billing',
      'Open a Stripe Checkout session for a pack; credits arrive with the webhook, not the redirect',
      200,
      z.object({ checkoutUrl: z.string() }),
    ),
    validate('json', PurchaseBody),
    async (c) => {
      const principal = principalOf(c);
      const body = c.req.valid('json');
      // An unknown pack is 400 whether or not Stripe is configured.
      const pack = await packOffer(c.var.db, principal, body.packId);
      const stripe = stripeClient(c.env.STRIPE_SECRET_KEY);
      const idempotencyKey = await checkoutIdempotencyKey(principal.userId, c.req.header('idempotency-key'));
      return c.json(await createCheckoutSession(stripe, c.var.db, principal, { ...body, pack }, idempotencyKey));
    },
  )
  .post(
    '/webhook',
    documented(
      'Billing',
      'Stripe events, verified by stripe-signature: paid checkouts grant their pack, paid basedmode invoices 2000 Ds',
      200,
      z.object({ received: z.literal(true) }),
    ),
    async (c) => {
      // The signature covers the exact bytes, so the body is read raw, never parsed first.
      const event = await verifyWebhook(c.env.STRIPE_WEBHOOK_SECRET, await c.req.text(), c.req.header('stripe-signature'));
      const result = await applyStripeEvent(c.var.db, event);
      if (result.outcome === 'ignored') {
        console.warn(JSON.stringify({ level: 'warn', requestId: c.var.requestId, stripeEvent: event.id, type: event.type, ignored: result.reason }));
      }
      return c.json({ received: true as const });
    },
  )
  .get(
    '/return/:outcome',
    documentedPage('Billing', 'After Checkout: an HTML page opening {APP_SCHEME}://payment-success or payment-cancel', {
      name: 'outcome',
      values: RETURN_OUTCOMES,
    }),
    (c) => {
      const outcome = c.req.param('outcome');
      if (!isOutcome(outcome)) throw notFound('Return page');
      const page = returnPage(appDeepLink(c.env.APP_SCHEME, outcome), outcome);
      return c.body(page, 200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
      });
    },
  )
  .get('/subscription/tier', documented('Billing', 'The caller’s derived tier and its mode', 200, TierResponse), async (c) =>
    c.json(await getTier(c.var.db, principalOf(c), c.env.STRIPE_SECRET_KEY)),
  )
  .get('/subscription/info', documented('Billing', 'The modes a user can be in (sitelicense is assigned, not chosen)', 200, SubscriptionInfo), (c) =>
    c.json(subscriptionInfo()),
  )
  .get('/publishable-key', documented('Billing', 'The Stripe publishable key for client-side Stripe.js', 200, z.object({ publishableKey: z.string() })), (c) =>
    c.json(publishableKey(c.env.STRIPE_PUBLISHABLE_KEY)),
  );
