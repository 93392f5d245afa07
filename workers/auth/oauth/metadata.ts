import { READ_SCOPES, SENSITIVE_SCOPES, WRITE_SCOPES } from '../scopes';

/** Token and code lifetimes (access tokens 3600 s; docs/auth.md). */
export const ACCESS_TOKEN_TTL_S = 3600;
/** RFC 9700 4.5 / RFC 6749 4.1.2: codes are short-lived; one minute is ample for a redirect. */
export const CODE_TTL_S = 60;
/** Each rotation starts a fresh 30 days, so an app used monthly stays signed in. */
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 3600;
export const ID_TOKEN_TTL_S = 3600;

/** OIDC scopes: they shape the id_token and userinfo and grant nothing at the API (spec 5.3 rule 6). */
export const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

/** Spec 5.4's vocabulary plus the OIDC scopes. Connector scopes are accepted by pattern too. */
export const SCOPES_SUPPORTED: string[] = [...READ_SCOPES, ...WRITE_SCOPES, ...SENSITIVE_SCOPES, ...OIDC_SCOPES];

/** Spec 4.10: the authorization server lives under /auth, so the issuer carries that path. */
export const issuerOf = (base: string) => `${base}/auth`;

/** The MCP endpoint as an RFC 9728 protected resource (built by the MCP issue). */
export const mcpResourceOf = (base: string) => `${base}/mcp`;

/**
 * RFC 8414 authorization server metadata, served both at `/auth/.well-known/openid-configuration`
 * and at `/.well-known/oauth-authorization-server/auth` (RFC 8414 3.1: the well-known segment goes
 * between host and the issuer's path).
 */
export function authorizationServerMetadata(base: string) {
  const issuer = issuerOf(base);
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth2/authorize`,
    token_endpoint: `${issuer}/oauth2/token`,
    registration_endpoint: `${issuer}/oauth2/register`,
    userinfo_endpoint: `${issuer}/oauth2/userinfo`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    jwks_uri: `${issuer}/jwks`,
    scopes_supported: SCOPES_SUPPORTED,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    // Public clients only: PKCE replaces the client secret (OAuth 2.1 / RFC 9700 2.1.1). No
    // client holds a secret, so client_secret_basic is not offered, though a public client may
    // send its id as Basic `client_id:` with an empty secret (client-authentication.ts).
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    // RFC 9700 2.1.1: S256 only; `plain` is refused.
    code_challenge_methods_supported: ['S256'],
    // RFC 9207 (RFC 9700 4.4.2, mix-up defence): `iss` comes back with every authorization response.
    authorization_response_iss_parameter_supported: true,
    // A client may use the https URL of its metadata document as its client_id instead of registering.
    client_id_metadata_document_supported: true,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'name', 'email', 'email_verified'],
    service_documentation: `${base}/docs`,
  };
}

/** The scopes of the API: every one but the OIDC ones, which grant nothing there. */
export const API_SCOPES_SUPPORTED = SCOPES_SUPPORTED.filter((s) => !(OIDC_SCOPES as readonly string[]).includes(s));

/** RFC 9728 protected resource metadata for `resource` (no trailing slash), requested with `scopes`. */
export function protectedResourceMetadata(base: string, resource: string, scopes: readonly string[]) {
  return {
    resource,
    authorization_servers: [issuerOf(base)],
    scopes_supported: scopes,
    bearer_methods_supported: ['header'],
    resource_name: 'Workspace AI Skills Service',
    resource_documentation: `${base}/docs`,
  };
}
