import { and, eq, gt, isNull, lt, max, or } from 'drizzle-orm';
import { z } from 'zod';
import { members, oauthClients, oauthCodes, oauthGrants, oauthTokens, users, workspaceShards, workspaces, type OAuthClientRow } from '../../schema';
import { sha256Hex as credentialHash } from '../lib/crypto';
import { ACCESS_TOKEN_TTL_S, CODE_TTL_S, issuerOf, mcpResourceOf, OIDC_SCOPES, REFRESH_TOKEN_TTL_S } from '../auth/oauth/metadata';
import { ClientFields, ClientMetadataError, fetchClientMetadata, isMetadataClientId, type MetadataFetchOptions } from '../auth/oauth/client-metadata';
import { applicationTypeOf, redirectMatches, redirectUrisProblem } from '../auth/oauth/redirect-uris';
import { signIdToken } from '../auth/oauth/signing-keys';
import type { Principal } from '../auth/principal';
import { DEFAULT_KEY_SCOPES, isKnownScope, isSensitiveScope } from '../auth/scopes';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { GlobalDb } from '../env';
import { now } from '../lib/clock';
import { base64url, randomToken, timingSafeEqual } from '../lib/crypto';
import { uuidv7 } from '../lib/ids';

/**
 * The OAuth 2.1 authorization server (spec 5.3). Checklist: RFC 9700 (Security BCP), RFC 8414
 * (metadata), RFC 7591 (registration), RFC 7009 (revocation), RFC 9728 (resource metadata), the
 * MCP authorization spec. Each check names the rule it enforces.
 */

/** A protocol error in RFC 6749 5.2 / RFC 7591 3.2.2 shape: `{error, error_description}`. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status: 400 | 401 | 403 | 429 = 400,
    /** With 429: when to try again (the `Retry-After` header). */
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  toBody() {
    return { error: this.error, error_description: this.description };
  }
}

export const ACCESS_TOKEN_PREFIX = 'oat_';
export const REFRESH_TOKEN_PREFIX = 'ort_';

const isOidcScope = (s: string) => (OIDC_SCOPES as readonly string[]).includes(s);
/** The scopes that count at the API: OIDC ones grant nothing there (spec 5.3 rule 6). */
export const apiScopesOf = (scopes: readonly string[]) => scopes.filter((s) => !isOidcScope(s));

// ---------------------------------------------------------------------------------------------
// Registration (RFC 7591)

/** `token_endpoint_auth_method` is read and replaced: every client is registered as public. */
export const RegisterBody = ClientFields.extend({ token_endpoint_auth_method: z.string().optional() });
export type RegisterBody = z.infer<typeof RegisterBody>;

/**
 * RFC 7591 3: registers a public client. Open to anyone: stock MCP clients register before any
 * person signs in. A registration grants nothing by itself: every token still needs a person's
 * consent.
 */
export async function registerClient(db: GlobalDb, raw: unknown) {
  const parsed = RegisterBody.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.') || 'body';
    const error = field.startsWith('redirect_uris') ? 'invalid_redirect_uri' : 'invalid_client_metadata';
    throw new OAuthError(error, `${field}: ${issue.message}`);
  }
  const body = parsed.data;
  const applicationType = applicationTypeOf(body.application_type, body.redirect_uris);
  const problem = redirectUrisProblem(body.redirect_uris, applicationType, (uri) => `"${uri}"`);
  if (problem) throw new OAuthError('invalid_redirect_uri', problem);
  const client = {
    id: randomToken(18),
    name: body.client_name ?? 'Unnamed client',
    redirectUris: [...new Set(body.redirect_uris)],
    grantTypes: [...new Set(body.grant_types ?? ['authorization_code'])],
    applicationType,
    createdBy: null,
    createdAt: now(),
  };
  await db.insert(oauthClients).values(client);
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes,
    response_types: ['code'],
    // Public clients only: PKCE stands in for a secret (OAuth 2.1 2.1; MCP authorization spec).
    // A client that asked for another method is answered with the one assigned, as RFC 7591
    // 3.2.1 allows, rather than refused: the SDKs' examples ask for client_secret_basic and
    // use what the answer says.
    token_endpoint_auth_method: 'none',
    application_type: client.applicationType,
  };
}

/** Registrations and cached metadata documents nobody signed in with are deleted after this. */
export const UNUSED_CLIENT_TTL_MS = 24 * 3600_000;

/**
 * A metadata document client, from the cache while it is fresh, else fetched (and cached in
 * the clients table, so codes and grants reference it like any client).
 */
async function metadataDocumentClient(db: GlobalDb, clientId: string, options: MetadataFetchOptions): Promise<OAuthClientRow> {
  const [cached] = await db.select().from(oauthClients).where(eq(oauthClients.id, clientId)).limit(1);
  if (cached && (cached.metadataExpiresAt ?? 0) > now()) return cached;
  const { metadata, ttlSeconds } = await fetchClientMetadata(clientId, options);
  const applicationType = applicationTypeOf(metadata.application_type, metadata.redirect_uris);
  // Named by position: an error never quotes what a fetched document holds.
  const problem = redirectUrisProblem(metadata.redirect_uris, applicationType, (_, index) => `redirect_uris[${index}]`);
  if (problem) throw new ClientMetadataError(`The client metadata document has a redirect URI this server refuses: ${problem}.`);
  const changes = {
    name: metadata.client_name ?? new URL(clientId).host,
    redirectUris: [...new Set(metadata.redirect_uris)],
    grantTypes: [...new Set(metadata.grant_types ?? ['authorization_code'])],
    applicationType,
    metadataExpiresAt: now() + ttlSeconds * 1000,
  };
  const [stored] = await db
    .insert(oauthClients)
    .values({ id: clientId, ...changes, createdAt: now() })
    .onConflictDoUpdate({ target: oauthClients.id, set: changes })
    .returning();
  return stored!;
}

// ---------------------------------------------------------------------------------------------
// Authorization (RFC 6749 4.1.1, RFC 7636, RFC 9207)

export interface AuthorizeParams {
  client_id?: string;
  redirect_uri?: string;
  response_type?: string;
  scope?: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  nonce?: string;
  resource?: string;
}

export const AUTHORIZE_PARAM_NAMES = [
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'resource',
] as const;

/**
 * A request that can go on to sign-in and consent, or why not: a refused request is told to the
 * person on a page, never redirected to the client (RFC 9700 4.11.2: registration is open, so a
 * redirect URI is no proof of a trustworthy client, and an error redirect would make this
 * endpoint an open redirector). `error` is the RFC 6749 4.1.2.1 (or RFC 8707) code, shown on the page.
 */
export type AuthorizeOutcome = { ok: true; request: ValidAuthorizeRequest } | { ok: false; error: string; message: string };

export interface ValidAuthorizeRequest {
  client: OAuthClientRow;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
  codeChallenge: string;
  nonce: string | undefined;
  resource: string | null;
}

const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** `mcpStartingScopes`: what a request for the MCP endpoint that names no scope asks for (workers/mcp/challenge.ts). */
export async function validateAuthorize(
  db: GlobalDb,
  base: string,
  params: AuthorizeParams,
  metadataOptions: MetadataFetchOptions,
  mcpStartingScopes: readonly string[],
): Promise<AuthorizeOutcome> {
  const fail = (error: string, message: string): AuthorizeOutcome => ({ ok: false, error, message });
  if (!params.client_id) return fail('invalid_request', 'The request names no client (client_id is missing).');
  let client: OAuthClientRow | undefined;
  try {
    client = isMetadataClientId(params.client_id)
      ? await metadataDocumentClient(db, params.client_id, metadataOptions)
      : (await db.select().from(oauthClients).where(eq(oauthClients.id, params.client_id)).limit(1))[0];
  } catch (error) {
    if (error instanceof ClientMetadataError) return fail('invalid_request', error.message);
    throw error;
  }
  if (!client) return fail('invalid_request', 'The application asking for access is not registered here.');
  // OAuth 2.1 3.1.2.2: redirect_uri is required (clients may register several).
  const redirectUri = params.redirect_uri;
  if (!redirectUri || !client.redirectUris.some((r) => redirectMatches(r, redirectUri))) {
    return fail('invalid_request', 'The address the application wants to return to is not one it registered.');
  }
  if (params.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be "code".');
  // RFC 9700 2.1.1: PKCE is required, and only S256 (plain would leak the verifier).
  if (!params.code_challenge) return fail('invalid_request', 'code_challenge is required (PKCE, S256).');
  if (params.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256.');
  if (!PKCE_CHALLENGE.test(params.code_challenge)) return fail('invalid_request', 'code_challenge must be 43 base64url characters.');
  // RFC 6749 3.3: no scope means the default set: for the MCP endpoint what its tools need (as
  // its challenge asks), otherwise the same as a new key's. A named scope is asked as named.
  const resource = params.resource ?? null;
  const defaults = resource === mcpResourceOf(base) ? mcpStartingScopes : DEFAULT_KEY_SCOPES;
  const asked = params.scope?.trim() ? [...new Set(params.scope.trim().split(/\s+/))] : [...defaults];
  const unknown = asked.find((s) => !isKnownScope(s) && !isOidcScope(s));
  if (unknown) return fail('invalid_scope', `Unknown scope "${unknown}".`);
  // RFC 6749 3.3: the server may grant less than asked. A client not registered for refresh
  // gets no offline_access (the /mcp challenge suggests it to every client).
  const scopes = client.grantTypes.includes('refresh_token') ? asked : asked.filter((s) => s !== 'offline_access');
  if (scopes.length === 0) return fail('invalid_scope', 'offline_access needs a client registered for the refresh_token grant.');
  // RFC 8707 2 / MCP authorization spec: a named resource must be this service or its MCP endpoint.
  if (resource !== null && resource !== base && resource !== mcpResourceOf(base)) {
    return fail('invalid_target', `The resource must be ${base} or ${mcpResourceOf(base)}.`);
  }
  return {
    ok: true,
    request: { client, redirectUri, scopes, state: params.state, codeChallenge: params.code_challenge, nonce: params.nonce, resource },
  };
}

/** The redirect back to the client; RFC 9207 adds `iss`, RFC 6749 4.1.2 echoes `state`. */
export function authorizationResponseUrl(base: string, redirectUri: string, values: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(values)) if (v !== undefined) url.searchParams.set(k, v);
  url.searchParams.set('iss', issuerOf(base));
  return url.href;
}

/** What the consent page shows: plain words per scope, sensitive ones marked (spec 5.4). */
const SCOPE_WORDS: Record<string, string> = {
  'profile:read': 'See your name, email and workspaces',
  'profile:write': 'Change your profile, workspaces, API keys and purchases',
  'profile:search': 'See the members and invitations of your workspaces',
  'memory:read': "Read the workspace's shared memory",
  'memory:write': "Change the workspace's shared memory",
  'thread:read': 'Read your conversations',
  'thread:write': 'Write in your conversations',
  'workspace:files:read': 'See and download the files runs produced',
  'workspace:files:write': 'Delete files in the workspace',
  'tool:execute': 'Run skills, which can send this workspace’s bound secrets to the sites each secret is bound to (this spends your credits)',
  'library:read': 'See installed skills and their secrets’ names',
  'library:write': 'Install, write and remove skills and secrets',
  'workflow:run': 'Start and control workflows',
  'trace:read': 'Read the traces of past runs and chats',
  'trace:write': 'Add to traces',
  'agent:message': 'Send messages as an agent',
  'agent:list': 'See your agents and API keys',
  'stats:read': 'See usage statistics',
  'model:read': 'See the available models',
  'connector:list': 'See your connected apps',
  'channel:read': 'Read channels',
  'activity:read': 'Read the audit and activity logs',
  'billing:read': 'See your credit balance, purchases and plan',
  openid: 'Know who you are (your account id)',
  profile: 'See your name',
  email: 'See your email address',
  offline_access: 'Stay connected when you are not using it (until you revoke it)',
};

export function describeScope(scope: string): { scope: string; words: string; sensitive: boolean } {
  const connector = /^connector:([^:]+):(read|exec)$/.exec(scope);
  const words =
    SCOPE_WORDS[scope] ??
    (connector ? (connector[2] === 'read' ? `Read from your connected ${connector[1]}` : `Act in your connected ${connector[1]}`) : scope);
  return { scope, words, sensitive: isSensitiveScope(scope) };
}

/** The scopes a consent form left ticked (`scopes`, one value or many), kept within those requested. */
export function grantedScopes(requested: string[], ticked: unknown): string[] {
  const picked = new Set([ticked ?? []].flat().filter((s): s is string => typeof s === 'string'));
  return requested.filter((s) => picked.has(s));
}

/** The workspaces the consenting user can bind the grant to. */
export async function workspacesOf(db: GlobalDb, userId: string) {
  return db
    .select({ id: workspaces.id, name: workspaces.name })
    .from(members)
    .innerJoin(workspaces, eq(workspaces.id, members.workspaceId))
    .where(eq(members.userId, userId))
    .orderBy(workspaces.id);
}

/** Issues the code once the user consented; it is bound to everything the exchange must repeat. */
export async function issueCode(db: GlobalDb, principal: Principal, workspaceId: string, request: ValidAuthorizeRequest, scopes: string[]): Promise<string> {
  const [member] = await db
    .select({ role: members.role })
    .from(members)
    .where(and(eq(members.userId, principal.userId), eq(members.workspaceId, workspaceId)))
    .limit(1);
  if (!member) throw new OAuthError('access_denied', 'You are not a member of that workspace', 403);
  const code = randomToken(32);
  const t = now();
  await db.insert(oauthCodes).values({
    id: await credentialHash(code),
    clientId: request.client.id,
    userId: principal.userId,
    workspaceId,
    redirectUri: request.redirectUri,
    scopes,
    resource: request.resource,
    codeChallenge: request.codeChallenge,
    nonce: request.nonce ?? null,
    authTime: t,
    expiresAt: t + CODE_TTL_S * 1000,
    createdAt: t,
  });
  return code;
}

// ---------------------------------------------------------------------------------------------
// Token endpoint (RFC 6749 4.1.3, 6; RFC 7636 4.6; RFC 9700 4.14)

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

interface Signer {
  base: string;
  encryptionKey: string | undefined;
}

async function s256(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

/** RFC 7636 4.1: 43..128 unreserved characters. */
const PKCE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** Ends a token family; its user's gate forgets, so the family's access tokens stop at once. */
async function revokeGrant(db: GlobalDb, gates: CredentialGates, grantId: string): Promise<void> {
  const revoked = await db
    .update(oauthGrants)
    .set({ revokedAt: now() })
    .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)))
    .returning({ userId: oauthGrants.userId });
  await credentialsChanged(gates, ...revoked.map((g) => g.userId));
}

/**
 * A grant holds while it has a live token (an unexpired access token, or a refresh token not
 * yet used): a subquery, correlated with `oauth_grants`, for when the last of them expires, null
 * when none is left.
 */
export const grantLiveUntil = (db: GlobalDb) =>
  db
    .select({ until: max(oauthTokens.expiresAt) })
    .from(oauthTokens)
    .where(
      and(
        eq(oauthTokens.grantId, oauthGrants.id),
        isNull(oauthTokens.revokedAt),
        gt(oauthTokens.expiresAt, now()),
        or(eq(oauthTokens.kind, 'access'), isNull(oauthTokens.usedAt)),
      ),
    );

/** New access (and, with offline_access, refresh) token rows for a grant. */
async function mintTokens(db: GlobalDb, grantId: string, scopes: string[]) {
  const access = `${ACCESS_TOKEN_PREFIX}${randomToken(32)}`;
  const t = now();
  const rows: (typeof oauthTokens.$inferInsert)[] = [
    { id: await credentialHash(access), kind: 'access' as const, grantId, scopes, expiresAt: t + ACCESS_TOKEN_TTL_S * 1000, createdAt: t },
  ];
  let refresh: string | undefined;
  // Spec 5.3 rule 4: only offline_access yields a refresh token.
  if (scopes.includes('offline_access')) {
    refresh = `${REFRESH_TOKEN_PREFIX}${randomToken(32)}`;
    rows.push({ id: await credentialHash(refresh), kind: 'refresh', grantId, scopes, expiresAt: t + REFRESH_TOKEN_TTL_S * 1000, createdAt: t });
  }
  // The lifetimes are fixed, so the newest tokens are always the last to expire.
  const expiresAt = Math.max(...rows.map((row) => row.expiresAt));
  return { access, refresh, expiresAt, insert: db.insert(oauthTokens).values(rows) };
}

async function idTokenFor(db: GlobalDb, signer: Signer, grant: { userId: string; clientId: string }, scopes: string[], extra: Record<string, unknown>) {
  if (!scopes.includes('openid')) return undefined;
  const [user] = await db.select().from(users).where(eq(users.id, grant.userId)).limit(1);
  if (!user) throw new OAuthError('invalid_grant', 'The user no longer exists');
  return signIdToken(db, signer.encryptionKey, {
    iss: issuerOf(signer.base),
    sub: user.id,
    aud: grant.clientId,
    ...extra,
    ...(scopes.includes('profile') ? { name: user.name } : {}),
    ...(scopes.includes('email') ? { email: user.email, email_verified: false } : {}),
  });
}

export const TokenForm = z.object({
  grant_type: z.string().optional(),
  code: z.string().max(200).optional(),
  redirect_uri: z.string().max(2000).optional(),
  code_verifier: z.string().max(200).optional(),
  client_id: z.string().max(100).optional(),
  refresh_token: z.string().max(200).optional(),
  scope: z.string().max(2000).optional(),
  resource: z.string().max(2000).optional(),
});
export type TokenForm = z.infer<typeof TokenForm>;

export async function exchangeToken(db: GlobalDb, gates: CredentialGates, signer: Signer, form: TokenForm): Promise<TokenResponse> {
  if (form.grant_type === 'authorization_code') return exchangeCode(db, gates, signer, form);
  if (form.grant_type === 'refresh_token') return refreshTokens(db, gates, signer, form);
  throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
}

async function exchangeCode(db: GlobalDb, gates: CredentialGates, signer: Signer, form: TokenForm): Promise<TokenResponse> {
  if (!form.code || !form.client_id || !form.redirect_uri || !form.code_verifier) {
    throw new OAuthError('invalid_request', 'code, client_id, redirect_uri and code_verifier are required');
  }
  const codeHash = await credentialHash(form.code);
  // RFC 6749 4.1.2 / RFC 9700 4.5: single use. The conditional update lets exactly one
  // exchange claim the code, even two at once.
  const [code] = await db
    .update(oauthCodes)
    .set({ usedAt: now() })
    .where(and(eq(oauthCodes.id, codeHash), isNull(oauthCodes.usedAt)))
    .returning();
  if (!code) {
    const [used] = await db.select({ grantId: oauthCodes.grantId }).from(oauthCodes).where(eq(oauthCodes.id, codeHash)).limit(1);
    // RFC 6749 4.1.2: a code used twice revokes the tokens issued from it.
    if (used?.grantId) await revokeGrant(db, gates, used.grantId);
    throw new OAuthError('invalid_grant', 'The code is not valid or was already used');
  }
  // From here on the code is spent whatever the outcome: a wrong guess burns it.
  if (code.expiresAt <= now()) throw new OAuthError('invalid_grant', 'The code has expired');
  // RFC 6749 4.1.3: bound to the client and the exact redirect URI of the request.
  if (code.clientId !== form.client_id) throw new OAuthError('invalid_grant', 'The code was issued to another client');
  if (code.redirectUri !== form.redirect_uri) throw new OAuthError('invalid_grant', 'redirect_uri differs from the authorization request');
  // RFC 7636 4.6: the verifier must hash to the challenge.
  if (!PKCE_VERIFIER.test(form.code_verifier) || !timingSafeEqual(await s256(form.code_verifier), code.codeChallenge)) {
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
  }
  // RFC 8707 2.2: a resource named at the token endpoint must be the one consented to.
  if (form.resource !== undefined && code.resource !== null && form.resource !== code.resource) {
    throw new OAuthError('invalid_target', 'resource differs from the authorization request');
  }
  const grantId = uuidv7();
  const tokens = await mintTokens(db, grantId, code.scopes);
  await db.batch([
    db.insert(oauthGrants).values({
      id: grantId,
      clientId: code.clientId,
      userId: code.userId,
      workspaceId: code.workspaceId,
      scopes: code.scopes,
      resource: code.resource,
      createdAt: now(),
      tokensExpireAt: tokens.expiresAt,
    }),
    tokens.insert,
    db.update(oauthCodes).set({ grantId }).where(eq(oauthCodes.id, codeHash)),
    db
      .update(oauthClients)
      .set({ signedInAt: now() })
      .where(and(eq(oauthClients.id, code.clientId), isNull(oauthClients.signedInAt))),
  ]);
  const idToken = await idTokenFor(db, signer, code, code.scopes, {
    auth_time: Math.floor(code.authTime / 1000),
    ...(code.nonce ? { nonce: code.nonce } : {}),
  });
  return {
    access_token: tokens.access,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_S,
    scope: code.scopes.join(' '),
    ...(tokens.refresh ? { refresh_token: tokens.refresh } : {}),
    ...(idToken ? { id_token: idToken } : {}),
  };
}

async function refreshTokens(db: GlobalDb, gates: CredentialGates, signer: Signer, form: TokenForm): Promise<TokenResponse> {
  if (!form.refresh_token || !form.client_id) throw new OAuthError('invalid_request', 'refresh_token and client_id are required');
  const tokenHash = await credentialHash(form.refresh_token);
  const [row] = await db
    .select({ token: oauthTokens, grant: oauthGrants })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .where(and(eq(oauthTokens.id, tokenHash), eq(oauthTokens.kind, 'refresh')))
    .limit(1);
  if (!row || row.grant.revokedAt !== null || row.token.revokedAt !== null || row.token.expiresAt <= now()) {
    throw new OAuthError('invalid_grant', 'The refresh token is not valid');
  }
  // RFC 6749 6: bound to the client it was issued to.
  if (row.grant.clientId !== form.client_id) throw new OAuthError('invalid_grant', 'The refresh token was issued to another client');
  // RFC 6749 6: a refresh may narrow the scopes, never widen them.
  let scopes = row.token.scopes;
  if (form.scope?.trim()) {
    const asked = [...new Set(form.scope.trim().split(/\s+/))];
    const extra = asked.find((s) => !row.token.scopes.includes(s));
    if (extra) throw new OAuthError('invalid_scope', `The scope "${extra}" was not granted`);
    // The family continues only if offline_access stays.
    scopes = asked.includes('offline_access') ? asked : [...asked, 'offline_access'];
  }
  // RFC 9700 4.14.2: rotation. Exactly one use claims the token; any later use is reuse, a
  // sign that it leaked, so the whole family is revoked.
  const [claimed] = await db
    .update(oauthTokens)
    .set({ usedAt: now() })
    .where(and(eq(oauthTokens.id, tokenHash), isNull(oauthTokens.usedAt)))
    .returning({ id: oauthTokens.id });
  if (!claimed) {
    await revokeGrant(db, gates, row.grant.id);
    throw new OAuthError('invalid_grant', 'The refresh token was already used; every token of this grant is now revoked');
  }
  const tokens = await mintTokens(db, row.grant.id, scopes);
  await db.batch([tokens.insert, db.update(oauthGrants).set({ tokensExpireAt: tokens.expiresAt }).where(eq(oauthGrants.id, row.grant.id))]);
  const idToken = await idTokenFor(db, signer, row.grant, scopes, {});
  return {
    access_token: tokens.access,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_S,
    scope: scopes.join(' '),
    ...(tokens.refresh ? { refresh_token: tokens.refresh } : {}),
    ...(idToken ? { id_token: idToken } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Revocation (RFC 7009)

export async function revokeToken(db: GlobalDb, gates: CredentialGates, token: string | undefined, clientId: string | undefined): Promise<void> {
  if (!token) throw new OAuthError('invalid_request', 'token is required');
  if (!clientId) throw new OAuthError('invalid_client', 'client_id is required', 401);
  const [row] = await db
    .select({ token: oauthTokens, grant: oauthGrants })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .where(eq(oauthTokens.id, await credentialHash(token)))
    .limit(1);
  // RFC 7009 2.2: an invalid or unknown token is not an error.
  if (!row) return;
  // RFC 7009 2.1: only the client the token was issued to may revoke it.
  if (row.grant.clientId !== clientId) throw new OAuthError('unauthorized_client', 'The token was issued to another client');
  // RFC 7009 2.1: revoking a refresh token ends its grant's access tokens too; an access token
  // ends alone. Either takes effect at once: the user's gate forgets what it read before.
  if (row.token.kind === 'refresh') await revokeGrant(db, gates, row.grant.id);
  else {
    await db.update(oauthTokens).set({ revokedAt: now() }).where(eq(oauthTokens.id, row.token.id));
    await credentialsChanged(gates, row.grant.userId);
  }
}

// ---------------------------------------------------------------------------------------------
// Access tokens at the API and userinfo

export interface AccessTokenGrant {
  grantId: string;
  clientId: string;
  userId: string;
  workspaceId: string;
  role: (typeof members.$inferSelect)['role'] | null;
  /** The workspace's shard, from the directory; null if it has no entry. */
  shard: number | null;
  /** The shard a move of the workspace is copying it to (its writes fenced meanwhile); null otherwise. */
  movingTo: number | null;
  scopes: string[];
  /** RFC 8707: the resource the grant is for; null for grants that named none. */
  resource: string | null;
  expiresAt: number;
}

/** The live grant behind an access token, or null for an unknown, expired or revoked one. */
export async function findAccessToken(db: GlobalDb, token: string): Promise<AccessTokenGrant | null> {
  return findAccessTokenByHash(db, await credentialHash(token));
}

/** `findAccessToken` by the token's hash. */
export async function findAccessTokenByHash(db: GlobalDb, tokenHash: string): Promise<AccessTokenGrant | null> {
  const [row] = await db
    .select({ token: oauthTokens, grant: oauthGrants, role: members.role, shard: workspaceShards.shard, movingTo: workspaceShards.movingTo })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .leftJoin(members, and(eq(members.workspaceId, oauthGrants.workspaceId), eq(members.userId, oauthGrants.userId)))
    .leftJoin(workspaceShards, eq(workspaceShards.workspaceId, oauthGrants.workspaceId))
    .where(
      and(
        eq(oauthTokens.id, tokenHash),
        eq(oauthTokens.kind, 'access'),
        gt(oauthTokens.expiresAt, now()),
        isNull(oauthTokens.revokedAt),
        isNull(oauthGrants.revokedAt),
      ),
    )
    .limit(1);
  if (!row) return null;
  return {
    grantId: row.grant.id,
    clientId: row.grant.clientId,
    userId: row.grant.userId,
    workspaceId: row.grant.workspaceId,
    role: row.role,
    shard: row.shard,
    movingTo: row.movingTo,
    scopes: row.token.scopes,
    resource: row.grant.resource,
    expiresAt: row.token.expiresAt,
  };
}

/** OIDC Core 5.3: claims by scope; `openid` is required. */
export async function userinfo(db: GlobalDb, token: string | undefined) {
  const grant = token ? await findAccessToken(db, token) : null;
  if (!grant) throw new OAuthError('invalid_token', 'The access token is not valid', 401);
  if (!grant.scopes.includes('openid')) throw new OAuthError('insufficient_scope', 'userinfo needs the openid scope', 403);
  const [user] = await db.select().from(users).where(eq(users.id, grant.userId)).limit(1);
  if (!user) throw new OAuthError('invalid_token', 'The user no longer exists', 401);
  return {
    sub: user.id,
    ...(grant.scopes.includes('profile') ? { name: user.name } : {}),
    ...(grant.scopes.includes('email') ? { email: user.email, email_verified: false } : {}),
  };
}

/**
 * Housekeeping: spent codes and expired tokens are useless, and so are clients nobody signed in
 * with within a day of their open registration (or of their metadata document's first fetch).
 */
export async function deleteExpiredOAuthRecords(db: GlobalDb): Promise<void> {
  const t = now();
  await db.batch([
    db.delete(oauthCodes).where(lt(oauthCodes.expiresAt, t - CODE_TTL_S * 1000)),
    db.delete(oauthTokens).where(or(lt(oauthTokens.expiresAt, t), lt(oauthTokens.revokedAt, t - 24 * 3600_000))),
    db.delete(oauthClients).where(and(isNull(oauthClients.createdBy), lt(oauthClients.createdAt, t - UNUSED_CLIENT_TTL_MS), isNull(oauthClients.signedInAt))),
  ]);
}
