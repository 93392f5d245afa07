import { and, eq, gt, lte } from 'drizzle-orm';
import { z } from 'zod';
import { agentConsents, apiKeys, type ApiKeyRow, permissionRequests } from '../../schema';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import { isKnownScope } from '../auth/scopes';
import type { GlobalDb } from '../env';
import { notFound } from '../errors';
import { toIso } from '../lib/clock';
import { randomToken } from '../lib/crypto';

/**
 * What an agent's two asks of its key's owner share: a consent (connect, agent-consents.ts) and
 * a permission request (one scope, permission-requests.ts) are both made by the calling key,
 * wait the same window for the person, and are listed to them the same way.
 */

/** Spec 5.5 and 8: a consent or request waits 5 minutes for its decision. */
export const DECISION_WINDOW_MS = 5 * 60_000;
/** Spec 5.5: at most 280 characters, shown verbatim. */
export const MAX_REASON_LENGTH = 280;

/** A scope an agent may ask for: a known one, never the legacy `*` (spec 5.4). */
export const RequestableScope = z.string().max(100).refine(isKnownScope, { message: 'unknown scope' });

/** The query of the app's lists of consents and of permission requests. */
export const DecisionsQuery = z.object({
  status: z.enum(['pending', 'granted', 'denied', 'expired']).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after_id: z.string().min(1).max(64).optional(),
  before_id: z.string().min(1).max(64).optional(),
});
export type DecisionsQuery = z.infer<typeof DecisionsQuery>;

/** The calling key's row. Agent routes admit unactivated keys, so this is read fresh. */
export async function callingKey(db: GlobalDb, principal: Principal): Promise<ApiKeyRow> {
  const id = apiKeyIdOf(principal);
  const [row] = id === null ? [] : await db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
  if (!row) throw notFound('API key');
  return row;
}

export const newGrantToken = () => `pgt_${randomToken(32)}`;

export const approvalUrl = (baseUrl: string, linkCode: string) => `${baseUrl}/approve?code=${linkCode}`;

export const isoOrNull = (ms: number | null) => (ms === null ? null : toIso(ms));

/** Rows the signed-in person may decide: those of their own keys in the current workspace. */
export const decidable = <T extends typeof agentConsents | typeof permissionRequests>(table: T, principal: Principal) =>
  and(eq(table.workspaceId, principal.workspaceId), eq(table.userId, principal.userId));

/** A status as the lists show it: a pending decision whose window has passed is `expired`. */
export const statusFilter = <T extends typeof agentConsents | typeof permissionRequests>(table: T, status: DecisionsQuery['status'], t: number) => {
  switch (status) {
    case undefined:
      return undefined;
    case 'pending':
      return and(eq(table.status, 'pending'), gt(table.expiresAt, t));
    case 'expired':
      return and(eq(table.status, 'pending'), lte(table.expiresAt, t));
    default:
      return eq(table.status, status);
  }
};
