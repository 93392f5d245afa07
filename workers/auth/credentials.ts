import { and, desc, eq, gt, or, sql } from 'drizzle-orm';
import { apiKeys, members, sessions, workspaces } from '../../schema';
import type { Db } from '../env';
import { AppError, forbidden, notFound, unauthorized } from '../errors';
import { now } from '../lib/clock';
import { randomToken, sha256Hex } from '../lib/crypto';
import { apiScopesOf, findAccessToken } from '../services/oauth';
import type { Principal, RequestOrigin } from './principal';
import { WILDCARD } from './scopes';

/**
 * API key format: `sk_live_` + 32 random bytes in base64url (43 characters). The fixed prefix
 * lets leaked-secret scanners match it with `sk_live_[A-Za-z0-9_-]{43}`.
 */
export const API_KEY_PREFIX = 'sk_live_';

export const newApiKey = () => {
  const key = `${API_KEY_PREFIX}${randomToken(32)}`;
  return { key, preview: `${key.slice(0, API_KEY_PREFIX.length + 4)}…${key.slice(-4)}` };
};

/** Credentials are looked up by SHA-256: a database leak yields no usable key or token. */
export const credentialHash = sha256Hex;

/** Sessions last 30 days, sliding; extended at most once a day to spare writes. */
export const SESSION_TTL_MS = 30 * 24 * 3600_000;
const SESSION_SLIDE_STEP_MS = 24 * 3600_000;

export const newSessionToken = () => randomToken(32);

export interface PresentedCredentials {
  apiKey: string | undefined;
  sessionToken: string | undefined;
  /** `Authorization: Bearer …`: an OAuth access token (spec 5.1). */
  bearerToken?: string | undefined;
  /** `x-workspace-id`: honoured for sessions only (spec 5.1). */
  workspaceSelector: string | undefined;
}

async function principalFromApiKey(db: Db, key: string, origin: RequestOrigin, allowUnactivated: boolean): Promise<Principal> {
  const [row] = await db
    .select({
      id: apiKeys.id,
      userId: apiKeys.userId,
      workspaceId: apiKeys.workspaceId,
      scopes: apiKeys.scopes,
      status: apiKeys.status,
      role: members.role,
    })
    .from(apiKeys)
    .leftJoin(members, and(eq(members.workspaceId, apiKeys.workspaceId), eq(members.userId, apiKeys.userId)))
    .where(eq(apiKeys.keyHash, await credentialHash(key)))
    .limit(1);
  if (!row) throw unauthorized('The API key is not valid');
  if (row.status === 'revoked') throw forbidden('This API key has been revoked');
  if (row.status === 'unactivated' && !allowUnactivated) throw forbidden('This API key is not activated yet: approve it in the app first');
  // A key outlives its owner's membership only as a dead credential.
  if (!row.role) throw forbidden('The key owner is no longer a member of its workspace');
  return {
    userId: row.userId,
    workspaceId: row.workspaceId,
    role: row.role,
    credential: { type: 'api_key', apiKeyId: row.id },
    scopes: row.scopes,
    origin,
  };
}

async function principalFromSession(db: Db, token: string, selector: string | undefined, origin: RequestOrigin): Promise<Principal> {
  const sessionId = await credentialHash(token);
  const t = now();
  const [session] = await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, sessionId), gt(sessions.expiresAt, t)))
    .limit(1);
  if (!session) throw unauthorized('The session has expired or was signed out');

  // An explicit selector must name one of the user's workspaces; otherwise the session's chosen
  // workspace wins, falling back to the personal one if the user has since left it.
  const matchesSelector = (value: string) => or(eq(workspaces.id, value), eq(workspaces.slug, value));
  // `personal` marks the workspace made at its creator's sign-up: someone else's personal
  // workspace that the user joined is not theirs.
  const ownPersonal = and(eq(workspaces.personal, true), eq(workspaces.createdBy, session.userId));
  const scope =
    selector !== undefined ? matchesSelector(selector) : session.workspaceId === null ? ownPersonal : or(eq(workspaces.id, session.workspaceId), ownPersonal);
  const membership = db
    .select({ workspaceId: members.workspaceId, role: members.role })
    .from(members)
    .innerJoin(workspaces, eq(workspaces.id, members.workspaceId))
    .where(and(eq(members.userId, session.userId), scope))
    .orderBy(desc(sql`${workspaces.id} = ${session.workspaceId ?? ''}`), workspaces.id)
    .limit(1);
  const [[member]] = await Promise.all([
    membership,
    session.expiresAt - t < SESSION_TTL_MS - SESSION_SLIDE_STEP_MS
      ? db
          .update(sessions)
          .set({ expiresAt: t + SESSION_TTL_MS })
          .where(eq(sessions.id, sessionId))
      : undefined,
  ]);
  if (!member) {
    if (selector !== undefined) throw notFound('Workspace');
    throw unauthorized('The session has no workspace');
  }
  return {
    userId: session.userId,
    workspaceId: member.workspaceId,
    role: member.role,
    credential: { type: 'session', sessionId },
    scopes: [WILDCARD],
    origin,
  };
}

/**
 * RFC 6750: an opaque access token, looked up on every request so revocation is immediate
 * (RFC 7009, spec 5.3 rule 5). Its workspace is the one chosen at consent; its scopes are
 * checked per route like a key's, and OIDC scopes count for nothing there (spec 5.3 rule 6).
 */
async function principalFromAccessToken(db: Db, token: string, origin: RequestOrigin): Promise<Principal> {
  const grant = await findAccessToken(db, token);
  if (!grant && token.startsWith(API_KEY_PREFIX)) {
    throw new AppError(
      'UNAUTHORIZED',
      401,
      'This is an API key: send it in the x-api-key header, not in Authorization: Bearer (which is for OAuth access tokens)',
      {
        header: 'x-api-key',
      },
    );
  }
  if (!grant) throw unauthorized('The access token is not valid, has expired or was revoked');
  if (!grant.role) throw forbidden('The user is no longer a member of the workspace this token is for');
  return {
    userId: grant.userId,
    workspaceId: grant.workspaceId,
    role: grant.role,
    credential: { type: 'oauth', grantId: grant.grantId, clientId: grant.clientId, resource: grant.resource },
    scopes: apiScopesOf(grant.scopes),
    origin,
  };
}

/** The token of an `Authorization: Bearer` header (RFC 6750 2.1), or undefined. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const match = header && /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * Resolves the request's credential. Returns undefined when none is presented; throws 401 for
 * an unknown or expired one and 403 for a revoked or unactivated key.
 */
export async function resolvePrincipal(
  db: Db,
  presented: PresentedCredentials,
  origin: RequestOrigin,
  /** Only the agent routes admit an unactivated key: asking for scopes is how it gets activated (spec 3.5). */
  options: { allowUnactivated?: boolean } = {},
): Promise<Principal | undefined> {
  if (presented.apiKey !== undefined) return principalFromApiKey(db, presented.apiKey, origin, options.allowUnactivated ?? false);
  if (presented.sessionToken !== undefined) return principalFromSession(db, presented.sessionToken, presented.workspaceSelector, origin);
  if (presented.bearerToken !== undefined) return principalFromAccessToken(db, presented.bearerToken, origin);
  return undefined;
}
