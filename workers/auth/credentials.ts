import { and, desc, eq, gt, or, sql } from 'drizzle-orm';
import { apiKeys, members, sessions, workspaceShards, workspaces } from '../../schema';
import type { GlobalDb } from '../env';
import { AppError, forbidden, notFound, unauthorized } from '../errors';
import { now } from '../lib/clock';
import { randomToken, sha256Hex } from '../lib/crypto';
import { apiScopesOf, findAccessTokenByHash } from '../services/oauth';
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

/** The kinds of credential a request can present, each looked up by its hash. */
export type CredentialKind = Principal['credential']['type'];

/** A resolved credential: the principal without the request's origin, and until when it holds. */
export interface Resolution {
  principal: Omit<Principal, 'origin'>;
  /** When the credential expires (sessions, access tokens); null for API keys. */
  expiresAt: number | null;
}

/**
 * The shard the directory names for a credential's workspace (read in the credential's own
 * query), and whether a move fences its writes.
 */
const placed = (shard: number | null, movingTo: number | null): Pick<Principal, 'shard' | 'fenced'> => {
  if (shard === null) throw new AppError('SERVICE_UNAVAILABLE', 503, 'This workspace is not placed on a database yet; try again shortly.');
  return movingTo === null ? { shard } : { shard, fenced: true };
};

async function principalFromApiKey(db: GlobalDb, keyHash: string, allowUnactivated: boolean): Promise<Resolution> {
  const [row] = await db
    .select({
      id: apiKeys.id,
      userId: apiKeys.userId,
      workspaceId: apiKeys.workspaceId,
      scopes: apiKeys.scopes,
      status: apiKeys.status,
      role: members.role,
      shard: workspaceShards.shard,
      movingTo: workspaceShards.movingTo,
    })
    .from(apiKeys)
    .leftJoin(members, and(eq(members.workspaceId, apiKeys.workspaceId), eq(members.userId, apiKeys.userId)))
    .leftJoin(workspaceShards, eq(workspaceShards.workspaceId, apiKeys.workspaceId))
    .where(eq(apiKeys.keyHash, keyHash))
    .limit(1);
  if (!row) throw unauthorized('The API key is not valid');
  if (row.status === 'revoked') throw forbidden('This API key has been revoked');
  if (row.status === 'unactivated' && !allowUnactivated) throw forbidden('This API key is not activated yet: approve it in the app first');
  // A key outlives its owner's membership only as a dead credential.
  if (!row.role) throw forbidden('The key owner is no longer a member of its workspace');
  return {
    principal: {
      userId: row.userId,
      workspaceId: row.workspaceId,
      ...placed(row.shard, row.movingTo),
      role: row.role,
      credential: { type: 'api_key', apiKeyId: row.id },
      scopes: row.scopes,
    },
    expiresAt: null,
  };
}

async function principalFromSession(db: GlobalDb, sessionId: string, selector: string | undefined): Promise<Resolution> {
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
    .select({ workspaceId: members.workspaceId, role: members.role, shard: workspaceShards.shard, movingTo: workspaceShards.movingTo })
    .from(members)
    .innerJoin(workspaces, eq(workspaces.id, members.workspaceId))
    .leftJoin(workspaceShards, eq(workspaceShards.workspaceId, members.workspaceId))
    .where(and(eq(members.userId, session.userId), scope))
    .orderBy(desc(sql`${workspaces.id} = ${session.workspaceId ?? ''}`), workspaces.id)
    .limit(1);
  const slide = session.expiresAt - t < SESSION_TTL_MS - SESSION_SLIDE_STEP_MS;
  const [[member]] = await Promise.all([
    membership,
    slide
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
    principal: {
      userId: session.userId,
      workspaceId: member.workspaceId,
      ...placed(member.shard, member.movingTo),
      role: member.role,
      credential: { type: 'session', sessionId },
      scopes: [WILDCARD],
    },
    expiresAt: slide ? t + SESSION_TTL_MS : session.expiresAt,
  };
}

/**
 * RFC 6750: an opaque access token, looked up in D1 (its user's CredentialGate remembers the
 * answer until a revocation makes it forget, so revocation is immediate: RFC 7009, spec 5.3 rule 5). Its workspace is the one chosen at consent; its scopes are
 * checked per route like a key's, and OIDC scopes count for nothing there (spec 5.3 rule 6).
 */
async function principalFromAccessToken(db: GlobalDb, tokenHash: string, apiKeyShaped: boolean): Promise<Resolution> {
  const grant = await findAccessTokenByHash(db, tokenHash);
  if (!grant && apiKeyShaped) {
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
    principal: {
      userId: grant.userId,
      workspaceId: grant.workspaceId,
      ...placed(grant.shard, grant.movingTo),
      role: grant.role,
      credential: { type: 'oauth', grantId: grant.grantId, clientId: grant.clientId, resource: grant.resource },
      scopes: apiScopesOf(grant.scopes),
    },
    expiresAt: grant.expiresAt,
  };
}

/** The token of an `Authorization: Bearer` header (RFC 6750 2.1), or undefined. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const match = header && /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/** A presented credential by its hash: what the credential gate and D1 lookups take, never the secret. */
export interface HashedCredential {
  kind: CredentialKind;
  hash: string;
  /** `x-workspace-id`, for sessions only. */
  selector: string | undefined;
  /** A bearer token in the API key format: its refusal says to send it as `x-api-key`. */
  apiKeyShaped: boolean;
}

/** The one credential a request presents (a key first, then a session, then a bearer token), hashed. */
export async function hashPresented(presented: PresentedCredentials): Promise<HashedCredential | undefined> {
  const [kind, secret] =
    presented.apiKey !== undefined
      ? (['api_key', presented.apiKey] as const)
      : presented.sessionToken !== undefined
        ? (['session', presented.sessionToken] as const)
        : presented.bearerToken !== undefined
          ? (['oauth', presented.bearerToken] as const)
          : [];
  if (kind === undefined) return undefined;
  return {
    kind,
    hash: await credentialHash(secret),
    selector: kind === 'session' ? presented.workspaceSelector : undefined,
    apiKeyShaped: kind === 'oauth' && secret.startsWith(API_KEY_PREFIX),
  };
}

/**
 * Resolves a hashed credential from D1; throws 401 for an unknown or expired one and 403 for a
 * revoked or unactivated key.
 */
export function resolveCredential(
  db: GlobalDb,
  credential: HashedCredential,
  /** Only the agent routes admit an unactivated key: asking for scopes is how it gets activated (spec 3.5). */
  options: { allowUnactivated?: boolean } = {},
): Promise<Resolution> {
  if (credential.kind === 'api_key') return principalFromApiKey(db, credential.hash, options.allowUnactivated ?? false);
  if (credential.kind === 'session') return principalFromSession(db, credential.hash, credential.selector);
  return principalFromAccessToken(db, credential.hash, credential.apiKeyShaped);
}

/**
 * Resolves the request's credential from D1. Returns undefined when none is presented; throws
 * as `resolveCredential`.
 */
export async function resolvePrincipal(
  db: GlobalDb,
  presented: PresentedCredentials,
  origin: RequestOrigin,
  options: { allowUnactivated?: boolean } = {},
): Promise<Principal | undefined> {
  const credential = await hashPresented(presented);
  if (!credential) return undefined;
  const { principal } = await resolveCredential(db, credential, options);
  return { ...principal, origin };
}
