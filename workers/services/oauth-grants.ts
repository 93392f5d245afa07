import { and, eq, inArray, isNotNull, isNull, lt, max, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import { mcpLogLevels, oauthClients, oauthGrants, oauthTokens, workspaces } from '../../schema';
import { isMetadataClientId } from '../auth/oauth/client-metadata';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUuid, parseUuidCursor } from '../lib/ids';
import { type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { recordChange } from './audit';
import { grantLiveUntil } from './oauth';

/**
 * The apps a person let in through the OAuth consent page (docs/auth.md, Connected apps): each
 * grant is the token family one consent started, for one workspace. The person sees and revokes
 * their own, across their workspaces; nobody else's exists for them.
 */

export const OAuthGrantRecord = z.object({
  id: z.string().describe('The grant id'),
  clientId: z.string(),
  /** As the client named itself (RFC 7591 `client_name`, or its metadata document's): claimed, not verified. */
  clientName: z.string().describe('The name the app gave itself (claimed, not verified)'),
  clientUri: z.string().nullable().describe("The https address the app is known by (its metadata document's URL); null for a registered app"),
  workspace: z.object({ id: z.string(), name: z.string() }),
  scopes: z.array(z.string()),
  createdAt: z.string().describe('When the person consented'),
  lastTokenAt: z.string().nullable().describe('When the app last got a token (its sign-in or its latest refresh); each call it makes is not recorded'),
  expiresAt: z.string().nullable().describe('When its last live token expires, unless the app refreshes; null once revoked or expired'),
  revokedAt: z.string().nullable(),
});
export type OAuthGrantRecord = z.infer<typeof OAuthGrantRecord>;

const grantRows = (db: GlobalDb) =>
  db
    .select({
      grant: oauthGrants,
      clientName: oauthClients.name,
      workspaceName: workspaces.name,
      liveUntil: sql<number | null>`(${grantLiveUntil(db)})`,
      lastTokenAt: sql<number | null>`(${db
        .select({ at: max(oauthTokens.createdAt) })
        .from(oauthTokens)
        .where(eq(oauthTokens.grantId, oauthGrants.id))})`,
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(workspaces, eq(workspaces.id, oauthGrants.workspaceId));

type GrantRow = Awaited<ReturnType<ReturnType<typeof grantRows>['limit']>>[number];

const present = (row: GrantRow): OAuthGrantRecord => ({
  id: row.grant.id,
  clientId: row.grant.clientId,
  clientName: row.clientName,
  clientUri: isMetadataClientId(row.grant.clientId) ? row.grant.clientId : null,
  workspace: { id: row.grant.workspaceId, name: row.workspaceName },
  scopes: row.grant.scopes,
  createdAt: toIso(row.grant.createdAt),
  lastTokenAt: row.lastTokenAt === null ? null : toIso(row.lastTokenAt),
  expiresAt: row.grant.revokedAt === null && row.liveUntil !== null ? toIso(row.liveUntil) : null,
  revokedAt: row.grant.revokedAt === null ? null : toIso(row.grant.revokedAt),
});

/**
 * The person's grants that still hold, newest first. One whose tokens have all expired lets the
 * app in no more and is left out (an app signed in without offline_access lasts an hour).
 */
export async function listOAuthGrants(db: GlobalDb, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    {
      column: oauthGrants.id,
      parseCursor: parseUuidCursor,
      fetch: (where, orderBy, limit) => grantRows(db).where(where).orderBy(orderBy).limit(limit),
      publicId: (row) => row.grant.id,
    },
    and(eq(oauthGrants.userId, principal.userId), isNull(oauthGrants.revokedAt), isNotNull(sql`(${grantLiveUntil(db)})`)),
  );
  return mapPage(page, present);
}

/**
 * Revokes one of the person's grants: its refresh and access tokens stop at once (the person's
 * CredentialGate forgets what it read), as when the app revokes its refresh token (RFC 7009).
 * Revoking a revoked grant answers it as it is.
 */
export async function revokeOAuthGrant(db: GlobalDb, gates: CredentialGates, principal: Principal, grantId: string): Promise<OAuthGrantRecord> {
  const own = (id: string) => and(eq(oauthGrants.id, id), eq(oauthGrants.userId, principal.userId));
  const [row] = isUuid(grantId) ? await grantRows(db).where(own(grantId)).limit(1) : [];
  if (!row) throw notFound('OAuth grant');
  if (row.grant.revokedAt !== null) return present(row);
  const revokedAt = now();
  await db.batch([
    db
      .update(oauthGrants)
      .set({ revokedAt })
      .where(and(own(grantId), isNull(oauthGrants.revokedAt))),
    // Recorded in the workspace the grant acted in.
    ...recordChange(
      db,
      { ...principal, workspaceId: row.grant.workspaceId },
      {
        action: 'oauth_grant.revoked',
        resourceType: 'oauth_grant',
        resourceId: grantId,
        metadata: { clientId: row.grant.clientId, clientName: row.clientName },
        activity: `Connected app "${row.clientName}" was disconnected`,
      },
    ),
  ]);
  await credentialsChanged(gates, principal.userId);
  return present({ ...row, grant: { ...row.grant, revokedAt } });
}

/**
 * How long a grant is kept once it ended (revoked, or its last token expired): the person can
 * still revoke it again and find it named by id in the audit log, then it is deleted.
 */
export const ENDED_GRANT_KEPT_MS = 30 * 24 * 3600_000;

/**
 * Housekeeping: deletes the grants that ended more than ENDED_GRANT_KEPT_MS ago, with what is
 * keyed to them: their tokens (foreign key) and the MCP log level set through them.
 */
export async function deleteEndedOAuthGrants(db: GlobalDb): Promise<void> {
  const before = now() - ENDED_GRANT_KEPT_MS;
  const ended = or(lt(oauthGrants.revokedAt, before), lt(oauthGrants.tokensExpireAt, before));
  await db.batch([
    db.delete(mcpLogLevels).where(
      inArray(
        mcpLogLevels.credential,
        db
          .select({ credential: sql<string>`'oauth:' || ${oauthGrants.id}` })
          .from(oauthGrants)
          .where(ended),
      ),
    ),
    db.delete(oauthGrants).where(ended),
  ]);
}
