import { and, asc, desc, eq, gt, inArray, isNull, sql } from 'drizzle-orm';
import { permissionRequests } from '../../schema';
import type { GlobalDb } from '../env';
import { now } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';

/** Spec 5.1: the header an agent may send with the token of a grant. */
export const GRANT_TOKEN_HEADER = 'x-permission-grant';

/** Grant tokens are stored as SHA-256, like every other credential. */
export const grantTokenHash = (token: string) => sha256Hex(`grant:${token}`);

const liveGrant = (apiKeyId: number, scope: string, t: number) =>
  and(
    eq(permissionRequests.apiKeyId, apiKeyId),
    eq(permissionRequests.scope, scope),
    eq(permissionRequests.status, 'granted'),
    gt(permissionRequests.grantExpiresAt, t),
    isNull(permissionRequests.revokedAt),
  );

/** Whether the key holds an unexpired `session` grant of `scope` (spec 5.5: 1 hour). */
export async function hasSessionGrant(db: GlobalDb, apiKeyId: number, scope: string): Promise<boolean> {
  const [row] = await db
    .select({ id: permissionRequests.id })
    .from(permissionRequests)
    .where(and(liveGrant(apiKeyId, scope, now()), eq(permissionRequests.mode, 'session')))
    .limit(1);
  return row !== undefined;
}

/**
 * The scope check's second chance, for a key whose own scopes lack `scope`: an unexpired
 * `session` grant covers the request; otherwise one unused `one_time` grant is consumed by it.
 * Consuming is one conditional UPDATE, so of two requests racing for one grant exactly one
 * claims it. A `x-permission-grant` token picks which one-time grant is spent; a token that is
 * unknown, of another key or already used is ignored.
 */
export async function coveredByGrant(db: GlobalDb, apiKeyId: number, scope: string, token: string | undefined): Promise<boolean> {
  if (await hasSessionGrant(db, apiKeyId, scope)) return true;
  const t = now();
  const preferred = token === undefined ? undefined : await grantTokenHash(token);
  const candidate = db
    .select({ id: permissionRequests.id })
    .from(permissionRequests)
    .where(and(liveGrant(apiKeyId, scope, t), eq(permissionRequests.mode, 'one_time'), isNull(permissionRequests.consumedAt)))
    .orderBy(
      preferred === undefined ? asc(permissionRequests.id) : desc(sql`coalesce(${permissionRequests.grantTokenHash} = ${preferred}, 0)`),
      asc(permissionRequests.id),
    )
    .limit(1);
  const claimed = await db
    .update(permissionRequests)
    .set({ consumedAt: t })
    .where(and(inArray(permissionRequests.id, candidate), isNull(permissionRequests.consumedAt)))
    .returning({ id: permissionRequests.id });
  return claimed.length === 1;
}
