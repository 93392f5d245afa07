import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { byokKeys, creditAccounts, users } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { invalidInput } from '../errors';
import { now, toIso } from '../lib/clock';

/**
 * Packs, subscription modes and the derived tier (spec 2.7, 3.7, 4.9). 1 Ds is 1 US cent at list
 * price; the larger packs add a bonus on top.
 */

export const Pack = z.object({ id: z.string(), name: z.string(), dollarinos: z.number().int(), priceCents: z.number().int() });
export type Pack = z.infer<typeof Pack>;

/** List prices; `priceCents` is what Checkout charges before the basedmode discount. */
export const PACKS: readonly Pack[] = [
  { id: 'starter', name: 'Starter', dollarinos: 500, priceCents: 500 },
  { id: 'regular', name: 'Regular', dollarinos: 1200, priceCents: 1000 },
  { id: 'plus', name: 'Plus', dollarinos: 3000, priceCents: 2500 },
  { id: 'pro', name: 'Pro', dollarinos: 6500, priceCents: 5000 },
];

export const TIERS = ['sitelicense', 'basedmode', 'byokmode', 'paygmode'] as const;
export type Tier = (typeof TIERS)[number];

export const ModeInfo = z.object({
  name: z.string(),
  priceCents: z.number().int(),
  priceDisplay: z.string(),
  monthlyCredits: z.number().int(),
  packDiscount: z.number(),
});
export type ModeInfo = z.infer<typeof ModeInfo>;

/** Spec 4.9 rule 5. `sitelicense` is assigned by an operator (credit_accounts.site_license) and has no discount. */
const MODES: Record<Tier, ModeInfo> = {
  byokmode: { name: 'BYOK', priceCents: 0, priceDisplay: 'Free', monthlyCredits: 0, packDiscount: 0 },
  paygmode: { name: 'Pay as you go', priceCents: 0, priceDisplay: 'Free', monthlyCredits: 0, packDiscount: 0 },
  basedmode: { name: 'Based', priceCents: 2900, priceDisplay: '$29/month', monthlyCredits: 2000, packDiscount: 0.2 },
  sitelicense: { name: 'Site license', priceCents: 0, priceDisplay: 'Licensed', monthlyCredits: 0, packDiscount: 0 },
};

/** What each paid basedmode month grants, in hundredths of a Ds (the ledger's unit). */
export const SUBSCRIPTION_GRANT = MODES.basedmode.monthlyCredits * 100;

export const findPack = (packId: string): Pack | undefined => PACKS.find((pack) => pack.id === packId);

interface AccountFacts {
  siteLicense: boolean;
  subscriptionExpiresAt: number | null;
  hasByokKey: boolean;
}

async function accountFacts(db: GlobalDb, userId: string): Promise<AccountFacts> {
  const [row] = await db
    .select({ siteLicense: creditAccounts.siteLicense, subscriptionExpiresAt: creditAccounts.subscriptionExpiresAt, byokUser: byokKeys.userId })
    .from(users)
    .leftJoin(creditAccounts, eq(creditAccounts.userId, users.id))
    .leftJoin(byokKeys, eq(byokKeys.userId, users.id))
    .where(eq(users.id, userId))
    .limit(1);
  return { siteLicense: row?.siteLicense ?? false, subscriptionExpiresAt: row?.subscriptionExpiresAt ?? null, hasByokKey: Boolean(row?.byokUser) };
}

const subscribed = (facts: AccountFacts) => facts.subscriptionExpiresAt !== null && facts.subscriptionExpiresAt > now();

/** Spec 3.7, with `sitelicense` first: an operator's licence outranks everything the user can change. */
const tierOf = (facts: AccountFacts): Tier =>
  facts.siteLicense ? 'sitelicense' : subscribed(facts) ? 'basedmode' : facts.hasByokKey ? 'byokmode' : 'paygmode';

/** A paid-up subscription discounts packs, whatever outranks it in the tier. */
const priced = (pack: Pack, facts: AccountFacts): Pack =>
  subscribed(facts) ? { ...pack, priceCents: Math.round(pack.priceCents * (1 - MODES.basedmode.packDiscount)) } : pack;

/** Spec 4.9: the packs at the caller's prices. */
export async function listPacks(db: GlobalDb, principal: Principal): Promise<{ packs: Pack[] }> {
  const facts = await accountFacts(db, principal.userId);
  return { packs: PACKS.map((pack) => priced(pack, facts)) };
}

/** The pack the caller asked for, at their price; an unknown id is 400 INVALID_INPUT (spec 4.9 rule 1). */
export async function packOffer(db: GlobalDb, principal: Principal, packId: string): Promise<Pack> {
  const pack = findPack(packId);
  if (!pack) throw invalidInput('packId', 'unknown_pack', `There is no pack "${packId}"`, { packs: PACKS.map((p) => p.id) });
  return priced(pack, await accountFacts(db, principal.userId));
}

/** Test mode unless a live key (secret or restricted) is configured. */
export const isTestMode = (secretKey: string | undefined) => !/^[sr]k_live_/.test(secretKey?.trim() ?? '');

export const TierResponse = z.object({
  tier: z.enum(TIERS),
  info: ModeInfo,
  subscriptionExpiresAt: z.string().nullable(),
  isTestMode: z.boolean(),
});

export async function getTier(db: GlobalDb, principal: Principal, secretKey: string | undefined): Promise<z.infer<typeof TierResponse>> {
  const facts = await accountFacts(db, principal.userId);
  const tier = tierOf(facts);
  return {
    tier,
    info: MODES[tier],
    subscriptionExpiresAt: facts.subscriptionExpiresAt === null ? null : toIso(facts.subscriptionExpiresAt),
    isTestMode: isTestMode(secretKey),
  };
}

export const SubscriptionInfo = z.object({ modes: z.object({ byokmode: ModeInfo, paygmode: ModeInfo, basedmode: ModeInfo }) });

/** Spec 4.9: the modes a user can choose between; `sitelicense` is not one of them. */
export const subscriptionInfo = (): z.infer<typeof SubscriptionInfo> => ({
  modes: { byokmode: MODES.byokmode, paygmode: MODES.paygmode, basedmode: MODES.basedmode },
});
