import { z } from 'zod';
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { notFound } from '../errors';
import { appDeepLink, RETURN_OUTCOMES, returnPage, type ReturnOutcome } from '../lib/return-page';
import { applyStripeEvent, verifyWebhook } from '../services/stripe';
import { documented, documentedPage } from './openapi';

const isOutcome = (value: string): value is ReturnOutcome => (RETURN_OUTCOMES as readonly string[]).includes(value);

/**
 * The two billing endpoints written by hand, mounted under the billing area's path beside its
 * operations (workers/capabilities/billing.ts), their access kept in the route table: Stripe's
 * webhook (the raw body and its signature) and the page a browser lands on after Checkout.
 */
export const stripeRoutes = new Hono<AppEnv>()
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
      const result = await applyStripeEvent(c.var.globalDb, event);
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
      return c.html(returnPage(appDeepLink(c.env.APP_SCHEME, outcome), outcome), 200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      });
    },
  );
