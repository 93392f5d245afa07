import { eq } from 'drizzle-orm';
import Stripe from 'stripe';
import { z } from 'zod';
import { users } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { AppError, invalidInput } from '../errors';
import { now } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';
import { recordChangeAfter } from './audit';
import { findPack, type Pack, packOffer, SUBSCRIPTION_GRANT } from './billing';
import { grantCredits } from './credits';

/**
 * Stripe Checkout for packs and the webhook that grants credits (docs/billing.md;
 * credits belong to users). The SDK runs on its fetch client and SubtleCrypto, so
 * nothing here needs Node; tests hand `createCheckoutSession` a Stripe built on a fake fetch.
 */

const HttpUrl = z.url({ protocol: /^https?$/ }).max(2048);

export const PurchaseBody = z.object({
  packId: z.string().min(1).max(64),
  email: z.email().max(254),
  successUrl: HttpUrl,
  cancelUrl: HttpUrl,
});
export type PurchaseBody = z.infer<typeof PurchaseBody>;

/** No subscription period on the invoice: a basedmode month lasts this long from payment. */
const FALLBACK_PERIOD_MS = 31 * 86_400_000;

const missingSetting = (name: string, purpose: string) => new AppError('SERVICE_UNAVAILABLE', 503, `${name} is not configured: ${purpose}`, { setting: name });

const setting = (value: string | undefined) => value?.trim() || undefined;

/** The client for the configured account; 503 naming STRIPE_SECRET_KEY without one. */
export function stripeClient(secretKey: string | undefined): Stripe {
  const key = setting(secretKey);
  if (!key) throw missingSetting('STRIPE_SECRET_KEY', 'purchases are turned off');
  return new Stripe(key, { httpClient: Stripe.createFetchHttpClient() });
}

export function publishableKey(value: string | undefined): { publishableKey: string } {
  const key = setting(value);
  if (!key) throw missingSetting('STRIPE_PUBLISHABLE_KEY', 'clients cannot load Stripe');
  return { publishableKey: key };
}

/**
 * The key Stripe deduplicates session creation on: a client retrying with the same
 * `idempotency-key` gets the same session back. Hashed with the user id, so two users' keys
 * never meet and any header value fits Stripe's 255 characters.
 */
export const checkoutIdempotencyKey = async (userId: string, header: string | undefined) =>
  header === undefined ? crypto.randomUUID() : `checkout-${await sha256Hex(`${userId}\n${header}`)}`;

/**
 * Opens Checkout for a pack at the caller's price. An unknown pack is 400 whether or not Stripe
 * is configured; the caller's Idempotency-Key, if any, makes retries open the same session.
 */
export async function purchasePack(db: GlobalDb, secretKey: string | undefined, principal: Principal, body: PurchaseBody, idempotencyHeader?: string) {
  const pack = await packOffer(db, principal, body.packId);
  const stripe = stripeClient(secretKey);
  return createCheckoutSession(stripe, db, principal, { ...body, pack }, await checkoutIdempotencyKey(principal.userId, idempotencyHeader));
}

/**
 * Opens a Checkout session for `pack` at the price already decided for the caller. Any Stripe
 * failure is 400 "checkout not created" (spec 4.9 rule 1); its message is logged, not sent,
 * since it can describe the account's configuration. The start is recorded in the audit log.
 */
export async function createCheckoutSession(
  stripe: Stripe,
  db: GlobalDb,
  principal: Principal,
  input: { pack: Pack; email: string; successUrl: string; cancelUrl: string },
  idempotencyKey: string,
): Promise<{ checkoutUrl: string }> {
  const { pack } = input;
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.checkout.sessions.create(
      {
        mode: 'payment',
        line_items: [
          {
            quantity: 1,
            price_data: { currency: 'usd', unit_amount: pack.priceCents, product_data: { name: `${pack.name}: ${pack.dollarinos} Ds` } },
          },
        ],
        client_reference_id: principal.userId,
        metadata: { userId: principal.userId, packId: pack.id },
        customer_email: input.email,
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
      },
      { idempotencyKey },
    );
  } catch (error) {
    if (!(error instanceof Stripe.errors.StripeError)) throw error;
    console.warn(JSON.stringify({ level: 'warn', requestId: principal.origin.requestId, checkout: 'not created', stripe: error.type, message: error.message }));
    throw new AppError('INVALID_INPUT', 400, 'The checkout was not created', { rule: 'checkout_not_created', stripeCode: error.code ?? null });
  }
  if (!session.url) throw new AppError('INVALID_INPUT', 400, 'The checkout was not created', { rule: 'checkout_not_created', stripeCode: null });
  await recordChangeAfter(db, principal, {
    action: 'billing.checkout_created',
    resourceType: 'checkout_session',
    resourceId: session.id,
    metadata: { packId: pack.id, dollarinos: pack.dollarinos, priceCents: pack.priceCents },
  });
  return { checkoutUrl: session.url };
}

const cryptoProvider = Stripe.createSubtleCryptoProvider();

/** What applyStripeEvent reads of every event. */
const EventShape = z.object({ id: z.string(), type: z.string(), data: z.object({ object: z.record(z.string(), z.unknown()) }) });

/**
 * The event, if `payload` carries a valid `stripe-signature` from the endpoint's secret and is
 * recent (Stripe's 5-minute tolerance, on the service clock). 400 otherwise; 503 naming
 * STRIPE_WEBHOOK_SECRET without one.
 */
export async function verifyWebhook(secret: string | undefined, payload: string, signature: string | undefined): Promise<Stripe.Event> {
  const key = setting(secret);
  if (!key) throw missingSetting('STRIPE_WEBHOOK_SECRET', 'Stripe events cannot be verified');
  let event: Stripe.Event;
  try {
    event = await Stripe.webhooks.constructEventAsync(payload, signature ?? '', key, undefined, cryptoProvider, now());
  } catch (error) {
    if (error instanceof Stripe.errors.StripeSignatureVerificationError || error instanceof SyntaxError) {
      throw invalidInput('stripe-signature', 'signature', 'The stripe-signature header does not verify this body');
    }
    throw error;
  }
  // The SDK parses any JSON it verifies; a signed `null` or an event without data.object is refused, not a 500.
  if (!EventShape.safeParse(event).success) throw invalidInput('body', 'event', 'The body is not a Stripe event');
  return event;
}

// Only the fields the grants read, parsed rather than trusted to the SDK's types: an event's
// shape follows the webhook endpoint's API version, which may differ from the SDK's.
const Metadata = z.record(z.string(), z.string()).nullish();

const CheckoutSession = z.object({
  id: z.string(),
  payment_status: z.string(),
  client_reference_id: z.string().nullish(),
  metadata: Metadata,
});

const SubscriptionDetails = z.object({ metadata: Metadata }).nullish();

const Invoice = z.object({
  id: z.string(),
  /** API versions from 2025-03-31: the subscription's metadata is under `parent`. */
  parent: z.object({ subscription_details: SubscriptionDetails }).nullish(),
  /** Older API versions: the same, at the top level, beside the subscription id. */
  subscription_details: SubscriptionDetails,
  subscription: z.unknown().optional(),
  lines: z.object({ data: z.array(z.object({ metadata: Metadata, period: z.object({ end: z.number() }).nullish() })) }).nullish(),
});

export type WebhookOutcome = { outcome: 'granted' | 'already_granted' } | { outcome: 'ignored'; reason: string };

const ignored = (reason: string): WebhookOutcome => ({ outcome: 'ignored', reason });

async function userExists(db: GlobalDb, userId: string): Promise<boolean> {
  const [row] = await db.select({ id: users.id }).from(users).where(eq(users.id, userId)).limit(1);
  return row !== undefined;
}

/** A paid checkout: the pack's Ds to the user in its metadata, once per session however many events report it. */
async function grantPack(db: GlobalDb, type: string, object: unknown): Promise<WebhookOutcome> {
  const parsed = CheckoutSession.safeParse(object);
  if (!parsed.success) return ignored('not a checkout session');
  const session = parsed.data;
  if (type === 'checkout.session.completed' && session.payment_status !== 'paid') return ignored(`payment_status is ${session.payment_status}`);
  const userId = session.metadata?.userId ?? session.client_reference_id;
  const pack = findPack(session.metadata?.packId ?? '');
  if (!pack) return ignored('unknown pack');
  if (!userId || !(await userExists(db, userId))) return ignored('unknown user');
  const { granted } = await grantCredits(db, {
    userId,
    amount: pack.dollarinos * 100,
    description: `${pack.name} pack: ${pack.dollarinos} Ds`,
    businessKey: `checkout:${session.id}`,
    paymentSessionId: session.id,
  });
  return { outcome: granted ? 'granted' : 'already_granted' };
}

/**
 * A paid basedmode invoice: 2000 Ds and the subscription extended to the end of the period it
 * pays for, once per invoice. The user is `metadata.userId` of the subscription (set it with
 * `subscription_data.metadata` when subscribing), read from the invoice itself or from its
 * subscription lines, which mirror it; the customer object is not fetched.
 */
async function grantSubscription(db: GlobalDb, object: unknown): Promise<WebhookOutcome> {
  const parsed = Invoice.safeParse(object);
  if (!parsed.success) return ignored('not an invoice');
  const invoice = parsed.data;
  const details = invoice.parent?.subscription_details ?? invoice.subscription_details;
  if (!details && !invoice.subscription) return ignored('not a subscription invoice');
  const lines = invoice.lines?.data ?? [];
  const userId = details?.metadata?.userId ?? lines.find((line) => line.metadata?.userId)?.metadata?.userId;
  if (!userId || !(await userExists(db, userId))) return ignored('unknown user');
  // The subscription line's period is the month being paid for; other lines end no later.
  const periodEnd = Math.max(0, ...lines.map((line) => (line.period?.end ?? 0) * 1000));
  const { granted } = await grantCredits(db, {
    userId,
    amount: SUBSCRIPTION_GRANT,
    description: 'basedmode: monthly Ds',
    businessKey: `invoice:${invoice.id}`,
    paymentSessionId: invoice.id,
    subscriptionUntil: periodEnd > now() ? periodEnd : now() + FALLBACK_PERIOD_MS,
  });
  return { outcome: granted ? 'granted' : 'already_granted' };
}

/**
 * Applies a verified event. Grants are one D1 batch each and keyed by the business object
 * (session or invoice), so a replayed event, or two events about the same payment, grant once.
 * Anything else is ignored; the caller still answers 200 so Stripe stops sending it.
 */
export function applyStripeEvent(db: GlobalDb, event: Stripe.Event): Promise<WebhookOutcome> {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return grantPack(db, event.type, event.data.object);
    case 'invoice.paid':
      return grantSubscription(db, event.data.object);
    default:
      return Promise.resolve(ignored('event type not handled'));
  }
}
