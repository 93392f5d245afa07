import { z } from 'zod';
import { getTier, listPacks, Pack, SubscriptionInfo, subscriptionInfo, TierResponse } from '../services/billing';
import { ByokStatus, deleteByok, getByok, putByok, PutByokBody } from '../services/byok';
import { BalanceStatus, getBalance, listTransactions, Transaction } from '../services/credits';
import { publishableKey, PurchaseBody, purchasePack } from '../services/stripe';
import { defineCapability, READ_ONLY, type Area } from './capability';

const BILLING_READ = { auth: 'credential', scope: 'billing:read' } as const;
// There is no billing write scope: spending the user's money or storing a key that pays for runs
// is a sensitive profile change.
const PROFILE_WRITE = { auth: 'credential', scope: 'profile:write' } as const;

/**
 * The caller's credits, packs, purchases and tier. Stripe's webhook and the Checkout return page
 * are protocol endpoints, not operations: workers/routes/billing.ts serves them by hand.
 */
export const billingArea: Area = {
  mount: '/api/v1/billing',
  tag: 'Billing',
  capabilities: [
    defineCapability({
      name: 'get-credit-balance',
      title: 'Get credit balance',
      description: 'Shows the caller’s credits in Ds: balance, total spent, whether a run can start (50 Ds available) and whether the account is an admin.',
      access: BILLING_READ,
      input: z.object({}),
      output: BalanceStatus,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/balance', summary: 'Balance, total spent and whether a run can start' },
      run: (ctx) => getBalance(ctx.globalDb, ctx.actor),
    }),
    defineCapability({
      name: 'list-credit-transactions',
      title: 'List credit transactions',
      description: 'The caller’s 50 most recent credit transactions, newest first.',
      access: BILLING_READ,
      input: z.object({}),
      output: z.object({ transactions: z.array(Transaction) }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/transactions', summary: 'The 50 most recent transactions, newest first' },
      mcp: false,
      run: (ctx) => listTransactions(ctx.globalDb, ctx.actor),
    }),
    defineCapability({
      name: 'list-credit-packs',
      title: 'List credit packs',
      description: 'Credit packs at the caller’s prices (20% off while basedmode is paid up).',
      access: BILLING_READ,
      input: z.object({}),
      output: z.object({ packs: z.array(Pack) }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/packs', summary: 'Credit packs at the caller’s prices (20% off while basedmode is paid up)' },
      mcp: false,
      run: (ctx) => listPacks(ctx.globalDb, ctx.actor),
    }),
    defineCapability({
      name: 'purchase-credit-pack',
      title: 'Buy a credit pack',
      description: 'Opens a Stripe Checkout session for a pack; credits arrive with Stripe’s webhook, not the redirect.',
      access: PROFILE_WRITE,
      input: PurchaseBody,
      output: z.object({ checkoutUrl: z.string() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      http: { method: 'POST', path: '/purchase', summary: 'Open a Stripe Checkout session for a pack; credits arrive with the webhook, not the redirect' },
      mcp: false,
      run: (ctx, body) => purchasePack(ctx.globalDb, ctx.env.STRIPE_SECRET_KEY, ctx.actor, body, ctx.idempotencyKey),
    }),
    defineCapability({
      name: 'get-subscription-tier',
      title: 'Get subscription tier',
      description: 'The caller’s derived tier and its mode.',
      access: BILLING_READ,
      input: z.object({}),
      output: TierResponse,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/subscription/tier', summary: 'The caller’s derived tier and its mode' },
      mcp: false,
      run: (ctx) => getTier(ctx.globalDb, ctx.actor, ctx.env.STRIPE_SECRET_KEY),
    }),
    defineCapability({
      name: 'get-subscription-info',
      title: 'Get subscription modes',
      description: 'The modes a user can be in (sitelicense is assigned, not chosen).',
      access: BILLING_READ,
      input: z.object({}),
      output: SubscriptionInfo,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/subscription/info', summary: 'The modes a user can be in (sitelicense is assigned, not chosen)' },
      mcp: false,
      run: async () => subscriptionInfo(),
    }),
    defineCapability({
      name: 'get-publishable-key',
      title: 'Get the Stripe publishable key',
      description: 'The Stripe publishable key for client-side Stripe.js.',
      access: BILLING_READ,
      input: z.object({}),
      output: z.object({ publishableKey: z.string() }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/publishable-key', summary: 'The Stripe publishable key for client-side Stripe.js' },
      mcp: false,
      run: async (ctx) => publishableKey(ctx.env.STRIPE_PUBLISHABLE_KEY),
    }),
  ],
};

/** The caller's own model-provider key: write-only, shown masked. */
export const byokArea: Area = {
  mount: '/api/v1/byok',
  tag: 'BYOK',
  capabilities: [
    defineCapability({
      name: 'get-byok',
      title: 'Get your provider key',
      description: 'Whether the caller has a model-provider key, its masked preview and provider.',
      access: BILLING_READ,
      input: z.object({}),
      output: ByokStatus,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: 'Whether the caller has a key, its masked preview and provider' },
      mcp: false,
      run: (ctx) => getByok(ctx.globalDb, ctx.actor),
    }),
    defineCapability({
      name: 'put-byok',
      title: 'Store your provider key',
      description: 'Stores the caller’s model-provider key (sk-ant-: Anthropic, other sk-: OpenAI-compatible), encrypted at rest.',
      access: PROFILE_WRITE,
      input: PutByokBody,
      output: ByokStatus,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      http: { method: 'PUT', path: '/', summary: 'Store the caller’s key (sk-ant-: Anthropic, other sk-: OpenAI-compatible), encrypted at rest' },
      mcp: false,
      run: (ctx, body) => putByok(ctx.globalDb, ctx.actor, ctx.env.ENCRYPTION_KEY, body),
    }),
    defineCapability({
      name: 'delete-byok',
      title: 'Remove your provider key',
      description: 'Removes the caller’s model-provider key; runs go back to the service’s provider and credits.',
      access: PROFILE_WRITE,
      input: z.object({}),
      output: ByokStatus.pick({ hasKey: true, keyPreview: true }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      http: { method: 'DELETE', path: '/', summary: 'Remove the caller’s key; runs go back to the service’s provider and credits' },
      mcp: false,
      run: (ctx) => deleteByok(ctx.globalDb, ctx.actor),
    }),
  ],
};
