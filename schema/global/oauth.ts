import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from './users';
import { workspaceIdColumn } from './workspaces';

/**
 * OAuth 2.1 authorization server (spec 5.3; workers/auth/oauth/). Every secret (codes, access
 * and refresh tokens) is stored as its SHA-256 only; the signing key's private half is AES-GCM
 * ciphertext under ENCRYPTION_KEY.
 */

/**
 * A public client (`token_endpoint_auth_method: none`): registered through RFC 7591, or known by
 * the URL of its Client ID Metadata Document, which is then its id and this row a cache of it.
 */
export const oauthClients = sqliteTable(
  'oauth_clients',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    /** JSON array; authorize requires an exact match with one of them (RFC 9700 2.1). */
    redirectUris: text('redirect_uris', { mode: 'json' }).$type<string[]>().notNull(),
    grantTypes: text('grant_types', { mode: 'json' }).$type<string[]>().notNull(),
    /** OpenID Connect Dynamic Registration 2: `web` or `native`; decides which redirect URIs are allowed. */
    applicationType: text('application_type', { enum: ['web', 'native'] })
      .notNull()
      .default('web'),
    /** The signed-in user who registered it; null for open registration and metadata documents. */
    createdBy: text('created_by').references(() => users.id, { onDelete: 'cascade' }),
    /** For a metadata document: when the cached copy must be fetched again. */
    metadataExpiresAt: integer('metadata_expires_at'),
    /** When a code issued to it was first exchanged: one nobody signed in with is deleted a day after it came. */
    signedInAt: integer('signed_in_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('oauth_clients_created_idx').on(t.createdAt)],
);

/**
 * One consented authorization: the token family that a code exchange starts and every refresh
 * continues. Revoking it (refresh reuse, code reuse, revocation of a refresh token) ends every
 * token of the family at once. Housekeeping deletes it, with its tokens, 30 days after it ended
 * (revoked, or its last token expired).
 */
export const oauthGrants = sqliteTable(
  'oauth_grants',
  {
    id: text('id').primaryKey(),
    clientId: text('client_id')
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    workspaceId: workspaceIdColumn(),
    /** JSON array of granted scopes, API and OIDC alike. */
    scopes: text('scopes', { mode: 'json' }).$type<string[]>().notNull(),
    /** RFC 8707 resource the tokens are for, when the client named one. */
    resource: text('resource'),
    createdAt: integer('created_at').notNull(),
    /** When the last token issued for it expires: it lets nobody in after that, revoked or not. */
    tokensExpireAt: integer('tokens_expire_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('oauth_grants_user_idx').on(t.userId)],
);

/** Authorization codes: single use, short-lived, bound to everything the token request must repeat. */
export const oauthCodes = sqliteTable('oauth_codes', {
  /** SHA-256 of the code. */
  id: text('id').primaryKey(),
  clientId: text('client_id')
    .notNull()
    .references(() => oauthClients.id, { onDelete: 'cascade' }),
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  workspaceId: workspaceIdColumn(),
  redirectUri: text('redirect_uri').notNull(),
  scopes: text('scopes', { mode: 'json' }).$type<string[]>().notNull(),
  resource: text('resource'),
  /** PKCE S256 challenge (base64url SHA-256 of the verifier). */
  codeChallenge: text('code_challenge').notNull(),
  nonce: text('nonce'),
  authTime: integer('auth_time').notNull(),
  expiresAt: integer('expires_at').notNull(),
  /** Set by the one exchange that may use it. */
  usedAt: integer('used_at'),
  /** The family that exchange started: revoked if the code is presented again (RFC 9700 4.5). */
  grantId: text('grant_id'),
  createdAt: integer('created_at').notNull(),
});

export const OAUTH_TOKEN_KINDS = ['access', 'refresh'] as const;

export const oauthTokens = sqliteTable(
  'oauth_tokens',
  {
    /** SHA-256 of the token. */
    id: text('id').primaryKey(),
    kind: text('kind', { enum: OAUTH_TOKEN_KINDS }).notNull(),
    grantId: text('grant_id')
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    /** The scopes of this token: a refresh may narrow them (RFC 6749 6). */
    scopes: text('scopes', { mode: 'json' }).$type<string[]>().notNull(),
    expiresAt: integer('expires_at').notNull(),
    /** Refresh tokens: set when rotated; a second use is reuse (RFC 9700 4.14.2). */
    usedAt: integer('used_at'),
    revokedAt: integer('revoked_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('oauth_tokens_grant_idx').on(t.grantId), index('oauth_tokens_expires_idx').on(t.expiresAt)],
);

/** RS256 keys that sign id_tokens; the newest unretired one signs, all unexpired ones are published. */
export const oauthSigningKeys = sqliteTable('oauth_signing_keys', {
  kid: text('kid').primaryKey(),
  /** Public JWK (JSON), served at /auth/jwks. */
  publicJwk: text('public_jwk', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  /** Private JWK, AES-GCM under ENCRYPTION_KEY bound to the kid (workers/lib/encryption.ts). */
  privateJwkCiphertext: text('private_jwk_ciphertext').notNull(),
  createdAt: integer('created_at').notNull(),
  /** Set when a newer key takes over signing; still published until tokens it signed expire. */
  retiredAt: integer('retired_at'),
});

export type OAuthClientRow = typeof oauthClients.$inferSelect;
export type OAuthGrantRow = typeof oauthGrants.$inferSelect;
export type OAuthCodeRow = typeof oauthCodes.$inferSelect;
export type OAuthTokenRow = typeof oauthTokens.$inferSelect;
export type OAuthSigningKeyRow = typeof oauthSigningKeys.$inferSelect;
