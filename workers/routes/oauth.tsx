import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { bearerTokenOf } from '../auth/credentials';
import type { MetadataFetchOptions } from '../auth/oauth/client-metadata';
import { clientIdOf } from '../auth/oauth/client-authentication';
import { API_SCOPES_SUPPORTED, authorizationServerMetadata, issuerOf, mcpResourceOf, protectedResourceMetadata } from '../auth/oauth/metadata';
import { redirectTargetOf } from '../auth/oauth/redirect-uris';
import { jwks } from '../auth/oauth/signing-keys';
import { ConsentPage, MessagePage, ReturnToAppPage } from '../auth/pages';
import { csrfToken, csrfValid, pagePrincipal, renderPage, signInThenReturn } from '../auth/web';
import type { AppEnv, Env } from '../env';
import { addressKey } from '../lib/client-address';
import { MCP_STARTING_SCOPES } from '../mcp/challenge';
import { isLocalDevelopment } from '../lib/local-development';
import { hitRateLimit } from '../lib/rate-limit';
import { userOf } from '../services/accounts';
import { documentedProtocol } from './openapi';
import {
  AUTHORIZE_PARAM_NAMES,
  authorizationResponseUrl,
  describeScope,
  exchangeToken,
  grantedScopes,
  issueCode,
  OAuthError,
  registerClient,
  revokeToken,
  TokenForm,
  userinfo,
  validateAuthorize,
  workspacesOf,
  type AuthorizeParams,
} from '../services/oauth';

type Ctx = Context<AppEnv>;

const baseOf = (c: Ctx) => new URL(c.req.url).origin;

/** Open registration is throttled per address (an IPv6 /64): each one writes a row (deleted after a day if unused). */
const REGISTRATIONS_PER_ADDRESS = 20;
const REGISTRATION_WINDOW_MS = 3600_000;

/** Tests and local development may serve client metadata documents on loopback or private hosts; never in production. */
const metadataOptions = (env: Env): MetadataFetchOptions => ({ localDevelopment: isLocalDevelopment(env) });

/** RFC 6749 5.1: token responses (and errors) must not be cached. */
function noStore(c: Ctx) {
  c.header('cache-control', 'no-store');
  c.header('pragma', 'no-cache');
}

/** Runs an OAuth endpoint, answering protocol errors in RFC 6749 5.2 shape. */
async function oauthEndpoint(c: Ctx, handler: () => Promise<Response>): Promise<Response> {
  try {
    return await handler();
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    noStore(c);
    // RFC 6750 3.1: a refused bearer token is announced in WWW-Authenticate.
    if (error.error === 'invalid_token' || error.error === 'insufficient_scope') {
      c.header('www-authenticate', `Bearer error="${error.error}", error_description="${error.description}"`);
    }
    // RFC 6749 5.2: a client that tried the Basic header is challenged in that scheme.
    if (error.error === 'invalid_client' && /^Basic\b/i.test(c.req.header('authorization') ?? '')) {
      c.header('www-authenticate', `Basic realm="${issuerOf(baseOf(c))}"`);
    }
    if (error.retryAfterSeconds !== undefined) c.header('retry-after', String(error.retryAfterSeconds));
    return c.json(error.toBody(), error.status);
  }
}

/** RFC 6749 3.2: the token endpoint takes `application/x-www-form-urlencoded` only. */
async function formOf(c: Ctx): Promise<Record<string, string>> {
  if (!c.req.header('content-type')?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded');
  }
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

const messagePage = (c: Ctx, status: 400 | 403, title: string, message: string) =>
  renderPage(c, status, (nonce) => <MessagePage nonce={nonce} title={title} message={message} />);

/**
 * Sends the browser back to the client with the authorization response: a redirect to a site;
 * for a native app's private-use scheme, a page of ours that sends it there (the browser hands
 * such a URL to the app and would leave the consent page showing as if nothing happened).
 */
function returnToClient(c: Ctx, clientName: string, url: string, allowed: boolean) {
  const target = redirectTargetOf(url);
  if (target.kind === 'site') return c.redirect(url, 303);
  return renderPage(c, 200, (nonce) => <ReturnToAppPage nonce={nonce} clientName={clientName} scheme={target.scheme} url={url} allowed={allowed} />, {
    noReferrer: true,
  });
}

function authorizeParamsOf(source: Record<string, unknown>): AuthorizeParams {
  const params: AuthorizeParams = {};
  for (const name of AUTHORIZE_PARAM_NAMES) {
    const value = source[name];
    if (typeof value === 'string' && value !== '') params[name] = value;
  }
  return params;
}

/**
 * A request that cannot proceed is explained to the person on a page, whatever was wrong with
 * it: the client hears about it only after the person signed in and answered (RFC 9700 4.11.2).
 */
async function validated(c: Ctx, params: AuthorizeParams) {
  const outcome = await validateAuthorize(c.var.globalDb, baseOf(c), params, metadataOptions(c.env), MCP_STARTING_SCOPES);
  if (outcome.ok) return { request: outcome.request };
  return {
    response: messagePage(c, 400, 'This sign-in link does not work', `${outcome.message} Tell the application's developer (error: ${outcome.error}).`),
  };
}

/** Any origin: browser MCP clients send `mcp-protocol-version` with their discovery requests (the MCP authorization spec). */
const open = cors({ origin: '*', allowHeaders: ['authorization', 'content-type', 'x-auth-token', 'mcp-protocol-version'], maxAge: 600 });

/** The authorization server under /auth (spec 4.10, 5.3). */
export const oauthRoutes = new Hono<AppEnv>()
  .use('/.well-known/*', open)
  .use('/jwks', open)
  .use('/oauth2/token', open)
  .use('/oauth2/revoke', open)
  .use('/oauth2/userinfo', open)
  .use('/oauth2/register', open)
  .get(
    '/.well-known/openid-configuration',
    documentedProtocol('OAuth', 'Authorization server metadata', 'RFC 8414, OpenID Connect Discovery 1.0', 200, 'application/json'),
    (c) => c.json(authorizationServerMetadata(baseOf(c))),
  )
  .get('/jwks', documentedProtocol('OAuth', 'The id_token signing keys', 'RFC 7517 JWK Set', 200, 'application/json'), async (c) => {
    c.header('cache-control', 'public, max-age=300');
    return c.json(await jwks(c.var.globalDb, c.env.ENCRYPTION_KEY));
  })

  // RFC 7591 3: open registration of public clients, as stock MCP clients expect. It grants
  // nothing: every token still needs a person's consent on the authorization page.
  .post(
    '/oauth2/register',
    documentedProtocol('OAuth', 'Register a public client (open, rate-limited per address)', 'RFC 7591', 201, 'application/json'),
    (c) =>
      oauthEndpoint(c, async () => {
        const decision = await hitRateLimit(c.env, `oauth-register:address:${addressKey(c.var.origin.ip)}`, REGISTRATIONS_PER_ADDRESS, REGISTRATION_WINDOW_MS);
        if (!decision.allowed) {
          throw new OAuthError('temporarily_unavailable', 'Too many registrations from this address; try again later', 429, Math.ceil(decision.resetMs / 1000));
        }
        let body: unknown;
        try {
          body = await c.req.json();
        } catch {
          throw new OAuthError('invalid_client_metadata', 'The body must be a JSON object');
        }
        noStore(c);
        return c.json(await registerClient(c.var.globalDb, body), 201);
      }),
  )

  .get(
    '/oauth2/authorize',
    documentedProtocol(
      'OAuth',
      'Authorization request: the consent page, or a page saying why the request cannot proceed',
      'OAuth 2.1 authorization endpoint, PKCE S256 (RFC 7636), RFC 9207 iss',
      200,
      'text/html',
    ),
    async (c) => {
      const params = authorizeParamsOf(c.req.query());
      const checked = await validated(c, params);
      if (checked.response) return checked.response;
      const { request } = checked;
      const principal = await pagePrincipal(c);
      // The sign-in page brings the browser back here, the request intact.
      if (!principal) return signInThenReturn(c, `${c.req.path}?${new URL(c.req.url).searchParams}`);
      const csrf = csrfToken(c);
      const workspaces = await workspacesOf(c.var.globalDb, principal.userId);
      const userName = (await userOf(c.var.globalDb, principal.userId))?.name ?? '';
      const target = redirectTargetOf(request.redirectUri);
      return renderPage(
        c,
        200,
        (nonce) => (
          <ConsentPage
            nonce={nonce}
            csrf={csrf}
            clientName={request.client.name}
            target={target}
            userName={userName}
            scopes={request.scopes.map(describeScope)}
            workspaces={workspaces}
            currentWorkspaceId={principal.workspaceId}
            params={params as Record<string, string>}
          />
        ),
        { formTargets: target.kind === 'site' ? [target.formAction] : [] },
      );
    },
  )

  .post(
    '/oauth2/authorize',
    documentedProtocol(
      'OAuth',
      'The consent form: approve or deny, then a redirect to the client (to a native app, a page that opens it)',
      'OAuth 2.1 authorization endpoint',
      200,
      'text/html',
    ),
    async (c) => {
      const form = await c.req.parseBody({ all: true });
      // RFC 9700 4.7 (CSRF) and 4.16 (clickjacking): consent counts only from our own form.
      if (!csrfValid(c, form.csrf)) return messagePage(c, 403, 'Request refused', 'The form expired or came from another site. Go back and try again.');
      const params = authorizeParamsOf(form);
      const principal = await pagePrincipal(c);
      if (!principal) {
        const query = new URLSearchParams(params as Record<string, string>);
        return signInThenReturn(c, `/auth/oauth2/authorize?${query}`);
      }
      const checked = await validated(c, params);
      if (checked.response) return checked.response;
      const { request } = checked;
      const base = baseOf(c);
      const answer = (allowed: boolean, values: Record<string, string | undefined>) =>
        returnToClient(c, request.client.name, authorizationResponseUrl(base, request.redirectUri, values), allowed);
      if (form.decision !== 'allow') return answer(false, { error: 'access_denied', error_description: 'The user denied access', state: request.state });
      const workspaceId = typeof form.workspace_id === 'string' ? form.workspace_id : principal.workspaceId;
      // The person may untick scopes: the grant is what stays ticked, never more than requested.
      const scopes = grantedScopes(request.scopes, form.scopes);
      if (scopes.length === 0) return messagePage(c, 400, 'Nothing selected', 'Select at least one permission to allow, or deny the request.');
      try {
        const code = await issueCode(c.var.globalDb, principal, workspaceId, request, scopes);
        return answer(true, { code, state: request.state });
      } catch (error) {
        if (error instanceof OAuthError) return messagePage(c, 403, 'Request refused', error.description);
        throw error;
      }
    },
  )

  // RFC 6749 4.1.3 and 6; every answer is no-store (RFC 6749 5.1).
  .post(
    '/oauth2/token',
    documentedProtocol('OAuth', 'Exchange a code or a refresh token', 'OAuth 2.1 token endpoint (form body)', 200, 'application/json'),
    (c) =>
      oauthEndpoint(c, async () => {
        const form = await formOf(c);
        const parsed = TokenForm.safeParse({ ...form, client_id: clientIdOf(c.req.header('authorization'), form.client_id) });
        if (!parsed.success) throw new OAuthError('invalid_request', parsed.error.issues[0]!.message);
        const response = await exchangeToken(c.var.globalDb, c.env.CREDENTIAL_GATE, { base: baseOf(c), encryptionKey: c.env.ENCRYPTION_KEY }, parsed.data);
        noStore(c);
        return c.json(response);
      }),
  )

  // RFC 7009 2.1-2.2: 200 whether or not the token was known.
  .post('/oauth2/revoke', documentedProtocol('OAuth', 'Revoke an access or refresh token', 'RFC 7009', 200, 'text/plain'), (c) =>
    oauthEndpoint(c, async () => {
      const form = await formOf(c);
      await revokeToken(c.var.globalDb, c.env.CREDENTIAL_GATE, form.token, clientIdOf(c.req.header('authorization'), form.client_id));
      noStore(c);
      return c.body(null, 200);
    }),
  )

  // OIDC Core 5.3: GET or POST with the access token as a bearer.
  .on(
    ['GET', 'POST'],
    '/oauth2/userinfo',
    documentedProtocol('OAuth', 'Claims about the signed-in user (bearer access token)', 'OpenID Connect Core 5.3', 200, 'application/json'),
    (c) =>
      oauthEndpoint(c, async () => {
        noStore(c);
        return c.json(await userinfo(c.var.globalDb, bearerTokenOf(c.req.header('authorization'))));
      }),
  );

/**
 * Root well-known documents: RFC 8414 3.1 puts the issuer's path after the well-known segment;
 * RFC 9728 3.1 does the same for protected resources (`/mcp`), and the root document describes
 * the whole service as one resource, without a trailing slash.
 */
export const wellKnownRoutes = new Hono<AppEnv>()
  .use('*', open)
  .get('/oauth-authorization-server/auth', documentedProtocol('OAuth', 'Authorization server metadata', 'RFC 8414', 200, 'application/json'), (c) =>
    c.json(authorizationServerMetadata(baseOf(c))),
  )
  .get('/oauth-protected-resource/mcp', documentedProtocol('OAuth', 'Protected resource metadata of /mcp', 'RFC 9728', 200, 'application/json'), (c) =>
    c.json(protectedResourceMetadata(baseOf(c), mcpResourceOf(baseOf(c)), MCP_STARTING_SCOPES)),
  )
  .get('/oauth-protected-resource', documentedProtocol('OAuth', 'Protected resource metadata of the API', 'RFC 9728', 200, 'application/json'), (c) =>
    c.json(protectedResourceMetadata(baseOf(c), baseOf(c), API_SCOPES_SUPPORTED)),
  );
