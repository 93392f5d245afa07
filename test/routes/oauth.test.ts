import { env } from 'cloudflare:workers';
import { inArray } from 'drizzle-orm';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { MCP_STARTING_SCOPES, mcpWwwAuthenticate } from '../../workers/mcp/challenge';
import { maintainSigningKeys, rotateSigningKey } from '../../workers/auth/oauth/signing-keys';
import { deleteExpiredOAuthRecords } from '../../workers/services/oauth';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { oauthClients } from '../../schema';
import { BASE, call, expectError, signUp } from '../helpers/api';
import { globalDbOf } from '../../workers/lib/db';
import {
  authorizeCode,
  authorizeQuery,
  bearer,
  cookieHeader,
  exchange,
  hidden,
  pkce,
  raw,
  REDIRECT,
  register,
  setCookieValue,
  tickedScopes,
  token,
  tokensFor,
} from '../helpers/oauth';

afterEach(() => resetClock());

describe('discovery', () => {
  it('serves the same RFC 8414 document at both addresses, issuer exactly {base}/auth', async () => {
    const oidc = await call('/auth/.well-known/openid-configuration');
    const rfc8414 = await call('/.well-known/oauth-authorization-server/auth');
    expect(oidc.status).toBe(200);
    expect(rfc8414.body).toEqual(oidc.body);
    expect(oidc.body).toMatchObject({
      issuer: `${BASE}/auth`,
      authorization_endpoint: `${BASE}/auth/oauth2/authorize`,
      token_endpoint: `${BASE}/auth/oauth2/token`,
      registration_endpoint: `${BASE}/auth/oauth2/register`,
      revocation_endpoint: `${BASE}/auth/oauth2/revoke`,
      userinfo_endpoint: `${BASE}/auth/oauth2/userinfo`,
      jwks_uri: `${BASE}/auth/jwks`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
    });
    for (const scope of ['profile:read', 'tool:execute', 'trace:write', 'billing:read', 'openid', 'profile', 'email', 'offline_access']) {
      expect(oidc.body.scopes_supported).toContain(scope);
    }
    expect(oidc.body.scopes_supported).not.toContain('*');
  });

  it('serves RFC 9728 protected resource metadata for /mcp and for the root, without trailing slash', async () => {
    const mcp = await call('/.well-known/oauth-protected-resource/mcp');
    expect(mcp.status).toBe(200);
    expect(mcp.body).toMatchObject({ resource: `${BASE}/mcp`, authorization_servers: [`${BASE}/auth`], bearer_methods_supported: ['header'] });
    // A client that reads its scopes here rather than in the challenge asks for the same.
    expect(mcp.body.scopes_supported).toEqual(MCP_STARTING_SCOPES);
    const root = await call('/.well-known/oauth-protected-resource');
    expect(root.body.resource).toBe(BASE);
    expect(root.body.scopes_supported).toContain('memory:read');
    expect(root.body.scopes_supported).not.toContain('openid');
  });
});

describe('browser clients on other origins', () => {
  it('may send the MCP protocol version header to the metadata documents and the endpoints the SDKs call (no failed first try)', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-authorization-server/auth',
      '/auth/.well-known/openid-configuration',
      '/auth/oauth2/register',
      '/auth/oauth2/token',
    ]) {
      const preflight = await raw(path, {
        method: 'OPTIONS',
        headers: { origin: 'https://inspector.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' },
      });
      expect(preflight.status, path).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(preflight.headers.get('access-control-allow-headers')?.split(','), path).toContain('mcp-protocol-version');
    }
  });
});

describe('POST /auth/oauth2/register', () => {
  it('registers a public client without a session, as stock MCP clients do (RFC 7591)', async () => {
    const res = await register();
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      client_id: expect.any(String),
      client_name: 'Test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'web',
    });
    expect(res.headers.get('cache-control')).toBe('no-store');
    // From another site, with or without a cookie: registering grants nothing by itself.
    const crossSite = await raw('/auth/oauth2/register', {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json', 'cf-connecting-ip': '2001:db8:2::1' },
      body: JSON.stringify({ redirect_uris: [REDIRECT] }),
    });
    expect(crossSite.status).toBe(201);
  });

  it('answers every refusal in RFC 7591 shape, never the service envelope', async () => {
    const notJson = await raw('/auth/oauth2/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'cf-connecting-ip': '2001:db8:2::2' },
      body: '{',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toEqual({ error: 'invalid_client_metadata', error_description: expect.any(String) });
    const noRedirects = await register({ redirect_uris: undefined });
    expect(noRedirects.body).toEqual({ error: 'invalid_redirect_uri', error_description: expect.stringContaining('redirect_uris') });
  });

  it('honours application_type: a web client may not redirect to loopback, a native one may', async () => {
    const loopback = 'http://127.0.0.1:8123/cb';
    const web = await register({ application_type: 'web', redirect_uris: [loopback] });
    expect(web.status).toBe(400);
    expect(web.body.error).toBe('invalid_redirect_uri');
    expect((await register({ application_type: 'native', redirect_uris: [loopback] })).body.application_type).toBe('native');
    // Unsaid, loopback-only redirects make a native client (what the SDKs register).
    expect((await register({ redirect_uris: [loopback] })).body.application_type).toBe('native');
  });

  it('limits registrations per address, in RFC 7591 shape with Retry-After', async () => {
    const from = { 'cf-connecting-ip': '2001:db8:3::1', 'content-type': 'application/json' };
    const body = JSON.stringify({ redirect_uris: [REDIRECT] });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 21; i++) {
      last = await raw('/auth/oauth2/register', { method: 'POST', headers: from, body });
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 20).every((s) => s === 201)).toBe(true);
    expect(last!.status).toBe(429);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await last!.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
  });

  it.each([
    ['http://client.example/cb', 'invalid_redirect_uri'],
    ['https://client.example/cb#frag', 'invalid_redirect_uri'],
    ['not a url', 'invalid_redirect_uri'],
    ['javascript:alert(1)', 'invalid_redirect_uri'],
  ])('refuses the redirect URI %s', async (uri, error) => {
    const res = await register({ redirect_uris: [uri] });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(error);
  });

  it('accepts http only on loopback addresses', async () => {
    for (const uri of ['http://127.0.0.1:8123/cb', 'http://[::1]/cb', 'http://localhost:3000/cb']) {
      expect((await register({ redirect_uris: [uri] })).status).toBe(201);
    }
  });

  it('registers a client asking for a secret as the public client it assigns (RFC 7591 3.2.1), which then signs in with PKCE alone', async () => {
    for (const method of ['client_secret_basic', 'client_secret_post', 'private_key_jwt']) {
      const asked = await register({ token_endpoint_auth_method: method });
      expect(asked.status, method).toBe(201);
      expect(asked.body.token_endpoint_auth_method, method).toBe('none');
      expect(asked.body, method).not.toHaveProperty('client_secret');
    }
    const clientId = (await register({ token_endpoint_auth_method: 'client_secret_basic' })).body.client_id;
    const flow = await authorizeCode('profile:read', { clientId });
    expect((await exchange(flow)).status).toBe(200);
  });

  it('refuses empty redirect lists', async () => {
    const none = await register({ redirect_uris: [] });
    expect(none.body.error).toBe('invalid_redirect_uri');
  });

  it('deletes registrations nobody signed in with after a day; used ones stay', async () => {
    const unused = (await register()).body.client_id;
    const used = await tokensFor('profile:read');
    advanceClock(24 * 3600_000 + 60_000);
    await deleteExpiredOAuthRecords(globalDbOf(env));
    const left = await globalDbOf(env)
      .select({ id: oauthClients.id })
      .from(oauthClients)
      .where(inArray(oauthClients.id, [unused, used.clientId]));
    expect(left.map((c) => c.id)).toEqual([used.clientId]);
  });
});

describe('GET /auth/oauth2/authorize', () => {
  it('sends a browser without a session to sign in, and back to this request', async () => {
    const clientId = (await register()).body.client_id;
    const query = authorizeQuery(clientId, (await pkce()).challenge, 'profile:read');
    const res = await raw(`/auth/oauth2/authorize?${query}`);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!, BASE);
    expect(location.pathname).toBe('/auth/sign-in');
    expect(location.searchParams.get('next')).toBe(`/auth/oauth2/authorize?${query}`);
  });

  it('shows an unknown client or an unregistered redirect URI to the user, never redirecting', async () => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const { challenge } = await pkce();
    const unknown = await raw(`/auth/oauth2/authorize?${authorizeQuery('no-such-client', challenge, 'profile:read')}`, {
      headers: { cookie: cookieHeader(user) },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('location')).toBeNull();
    expect(await unknown.text()).toContain('not registered');
    const mismatch = await raw(
      `/auth/oauth2/authorize?${authorizeQuery(clientId, challenge, 'profile:read', { redirect_uri: 'https://client.example/other' })}`,
      {
        headers: { cookie: cookieHeader(user) },
      },
    );
    expect(mismatch.status).toBe(400);
    expect(mismatch.headers.get('location')).toBeNull();
  });

  it.each([
    [{ code_challenge: '' }, 'invalid_request'],
    [{ code_challenge_method: 'plain' }, 'invalid_request'],
    [{ code_challenge_method: '' }, 'invalid_request'],
    [{ scope: 'profile:read made:up' }, 'invalid_scope'],
    [{ scope: '*' }, 'invalid_scope'],
    [{ response_type: 'token' }, 'unsupported_response_type'],
  ])('shows %j on a page naming %s, never redirecting before consent (RFC 9700 4.11.2)', async (override, error) => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const query = authorizeQuery(clientId, (await pkce()).challenge, 'profile:read', override);
    for (const [k, v] of Object.entries(override)) if (v === '') query.delete(k);
    const res = await raw(`/auth/oauth2/authorize?${query}`, { headers: { cookie: cookieHeader(user) } });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain(`(error: ${error})`);
  });

  it('shows the consent page: scopes in plain words, sensitive ones marked, framing refused', async () => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const res = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read tool:execute offline_access')}`, {
      headers: { cookie: cookieHeader(user) },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('form-action');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const csrfCookie = res.headers.getSetCookie().find((c) => c.startsWith('__Host-csrf='))!;
    expect(csrfCookie).toMatch(/HttpOnly/i);
    expect(csrfCookie).toMatch(/Secure/i);
    expect(csrfCookie).toMatch(/SameSite=Lax/i);
    const html = await res.text();
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<html lang="en">');
    // The redirect host, which a client cannot fake, is the heading; the name is its claim.
    expect(html).toContain('Allow an app at <span class="host">client.example</span> to use your account?');
    expect(html).toContain('It calls itself “<bdi>Test client</bdi>”.');
    expect(html).toContain('See your name, email and workspaces');
    expect(html).toMatch(
      /<li class="sensitive"><input type="checkbox" id="scope-1" name="scopes" value="tool:execute" checked=""\/> <label for="scope-1" class="inline sensitive">Run skills, which can send this workspace’s bound secrets to the sites each secret is bound to \(this spends your credits\)<span class="badge">sensitive<\/span>/,
    );
    expect(html).not.toMatch(/<li class="sensitive"><input[^>]*value="profile:read"/);
    expect(html).toContain('<label for="workspace_id">');
  });

  it('refuses a consent post without the CSRF token', async () => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const form = authorizeQuery(clientId, (await pkce()).challenge, 'profile:read');
    form.set('decision', 'allow');
    const res = await raw('/auth/oauth2/authorize', {
      method: 'POST',
      headers: { cookie: cookieHeader(user), 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    form.set('csrf', 'forged-value-forged-value-forged-value');
    const forged = await raw('/auth/oauth2/authorize', {
      method: 'POST',
      headers: { cookie: `${cookieHeader(user)}; __Host-csrf=another-value-another-value-another`, 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expect(forged.status).toBe(403);
  });

  it('asks, when no scope is named, for what the MCP tools need with resource {base}/mcp, else for a new key’s defaults', async () => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const ticked = async (extra: Record<string, string>) => {
      const query = authorizeQuery(clientId, (await pkce()).challenge, '', extra);
      const page = await raw(`/auth/oauth2/authorize?${query}`, { headers: { cookie: cookieHeader(user) } });
      expect(page.status).toBe(200);
      return tickedScopes(await page.text());
    };
    expect(await ticked({ resource: `${BASE}/mcp` })).toEqual(MCP_STARTING_SCOPES);
    expect(await ticked({})).toEqual(['profile:read', 'agent:list']);
    // Every one can still be unticked: the grant is what the person leaves ticked.
    const { tokens } = await tokensFor('', { query: { resource: `${BASE}/mcp` }, untick: ['memory:write', 'tool:execute'] });
    expect(tokens.scope.split(' ')).toEqual(MCP_STARTING_SCOPES.filter((s) => s !== 'memory:write' && s !== 'tool:execute'));
  });

  it('echoes state and iss with the code; a denial returns access_denied', async () => {
    const { code, location } = await authorizeCode('profile:read');
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get('state')).toBe('st-123');
    expect(location.searchParams.get('iss')).toBe(`${BASE}/auth`);

    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const page = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read')}`, {
      headers: { cookie: cookieHeader(user) },
    });
    const html = await page.text();
    const csrf = setCookieValue(page, '__Host-csrf')!;
    const form = new URLSearchParams({ csrf, decision: 'deny' });
    for (const name of ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method'])
      form.set(name, hidden(html, name)!);
    const denied = await raw('/auth/oauth2/authorize', {
      method: 'POST',
      headers: { cookie: cookieHeader(user, csrf), 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    const back = new URL(denied.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('code')).toBeNull();
    expect(back.searchParams.get('state')).toBe('st-123');
    // RFC 9207: an error response names its issuer too.
    expect(back.searchParams.get('iss')).toBe(`${BASE}/auth`);
  });
});

describe('POST /auth/oauth2/token', () => {
  it('exchanges a code for an opaque, hashed, one-hour access token, never cached', async () => {
    const flow = await authorizeCode('profile:read');
    const res = await exchange(flow);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, any>;
    expect(body).toEqual({ access_token: expect.stringMatching(/^oat_/), token_type: 'Bearer', expires_in: 3600, scope: 'profile:read' });
    const stored = await env.DB.prepare('SELECT * FROM oauth_tokens').all();
    expect(JSON.stringify(stored.results)).not.toContain(body.access_token);
  });

  it('refuses a wrong verifier, and the code is spent', async () => {
    const flow = await authorizeCode('profile:read');
    const wrong = await exchange(flow, { code_verifier: (await pkce()).verifier });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await exchange(flow)).status).toBe(400);
  });

  it('refuses a redirect_uri different from the authorization request', async () => {
    const flow = await authorizeCode('profile:read');
    const res = await exchange(flow, { redirect_uri: 'https://client.example/callback2' });
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses the code for another client', async () => {
    const flow = await authorizeCode('profile:read');
    const other = (await register()).body.client_id;
    expect(await (await exchange(flow, { client_id: other })).json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses an expired code (one minute)', async () => {
    const flow = await authorizeCode('profile:read');
    advanceClock(61_000);
    const res = await exchange(flow);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
  });

  it('a code used twice fails and revokes the tokens it issued', async () => {
    const flow = await authorizeCode('profile:read offline_access');
    const first = (await (await exchange(flow)).json()) as Record<string, any>;
    expect((await bearer(first.access_token)).status).toBe(200);
    const again = await exchange(flow);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
    expectError(await bearer(first.access_token), 401, 'UNAUTHORIZED');
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: flow.clientId });
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('lets exactly one of two simultaneous exchanges win', async () => {
    const flow = await authorizeCode('profile:read');
    const statuses = (await Promise.all([exchange(flow), exchange(flow)])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400]);
  });

  it('takes form bodies only and names unsupported grants', async () => {
    const json = await raw('/auth/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"grant_type":"authorization_code"}',
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
    expect(await (await token({ grant_type: 'password' })).json()).toMatchObject({ error: 'unsupported_grant_type' });
    expect(await (await token({ grant_type: 'authorization_code' })).json()).toMatchObject({ error: 'invalid_request' });
  });

  it('signs an id_token for openid with the published key; rotation keeps old tokens verifiable', async () => {
    const { tokens, clientId, user } = await tokensFor('openid profile email');
    const jwks = await call('/auth/jwks');
    expect(jwks.body.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of jwks.body.keys) {
      expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
      expect(key.d).toBeUndefined();
    }
    const { payload, protectedHeader } = await jwtVerify(tokens.id_token, createLocalJWKSet(jwks.body), { issuer: `${BASE}/auth`, audience: clientId });
    expect(payload).toMatchObject({ sub: user.user.id, name: 'OAuth User', email: user.email });

    const stored = await env.DB.prepare('SELECT private_jwk_ciphertext FROM oauth_signing_keys WHERE kid = ?')
      .bind(protectedHeader.kid)
      .first<{ private_jwk_ciphertext: string }>();
    expect(stored!.private_jwk_ciphertext).not.toContain('"d"');

    const newKid = await rotateSigningKey(globalDbOf(env), env.ENCRYPTION_KEY);
    const after = await call('/auth/jwks');
    expect(after.body.keys.map((k: any) => k.kid)).toEqual(expect.arrayContaining([newKid, protectedHeader.kid]));
    await jwtVerify(tokens.id_token, createLocalJWKSet(after.body));
    const second = await tokensFor('openid');
    const { protectedHeader: header2 } = await jwtVerify(second.tokens.id_token, createLocalJWKSet(after.body));
    expect(header2.kid).toBe(newKid);
  });
});

describe('client credentials in an HTTP Basic header (RFC 6749 2.3.1)', () => {
  /** `id:secret`, each form-urlencoded as 2.3.1 asks, as a Basic header. */
  const basic = (id: string, secret = '') => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });
  /** Every character percent-encoded: only a server that URL-decodes the id finds the client. */
  const encodedWhole = (id: string) => [...id].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');
  const tokenWith = (headers: Record<string, string>, form: Record<string, string>) =>
    raw('/auth/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form),
    });
  const codeForm = (flow: { code: string; verifier: string }) => ({
    grant_type: 'authorization_code',
    code: flow.code,
    redirect_uri: REDIRECT,
    code_verifier: flow.verifier,
  });

  it('name a public client by its URL-decoded id with an empty secret, for the code and the refresh', async () => {
    const flow = await authorizeCode('profile:read offline_access');
    const res = await tokenWith(basic(encodedWhole(flow.clientId)), codeForm(flow));
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as Record<string, string>;
    expect((await bearer(tokens.access_token!)).status).toBe(200);
    // The same id in the body as well is the same client.
    const refreshed = await tokenWith(basic(flow.clientId), { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: flow.clientId });
    expect(refreshed.status).toBe(200);
    const revoked = await raw('/auth/oauth2/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic(flow.clientId) },
      body: new URLSearchParams({ token: ((await refreshed.json()) as Record<string, string>).refresh_token! }),
    });
    expect(revoked.status).toBe(200);
    expectError(await bearer(tokens.access_token!), 401, 'UNAUTHORIZED');
  });

  it('refuse a request whose header and body name different clients, and spend nothing', async () => {
    const flow = await authorizeCode('profile:read');
    const other = (await register()).body.client_id;
    const res = await tokenWith(basic(other), { ...codeForm(flow), client_id: flow.clientId });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    expect((await exchange(flow)).status).toBe(200);
  });

  it('refuse a secret (none is ever issued) and a malformed header with 401 invalid_client and a Basic challenge', async () => {
    const flow = await authorizeCode('profile:read');
    for (const headers of [basic(flow.clientId, 'a-secret'), { authorization: 'Basic !!!' }, { authorization: `Basic ${btoa(flow.clientId)}` }, basic('')]) {
      const res = await tokenWith(headers, codeForm(flow));
      expect(res.status, headers.authorization).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Basic realm="${BASE}/auth"`);
      expect(await res.json()).toMatchObject({ error: 'invalid_client' });
    }
    expect((await exchange(flow)).status).toBe(200);
  });
});

describe('bearer tokens at the API', () => {
  it('act in the consenting workspace within the granted scopes, 403 naming the scope outside', async () => {
    const { tokens, user } = await tokensFor('profile:read memory:read');
    const profile = await bearer(tokens.access_token);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({
      id: user.user.id,
      workspace: { id: user.workspaceId },
      credential: { type: 'oauth' },
      scopes: ['profile:read', 'memory:read'],
    });
    expect((await bearer(tokens.access_token, '/api/v1/memory')).status).toBe(200);
    const outside = expectError(await bearer(tokens.access_token, '/api/v1/billing/balance'), 403, 'FORBIDDEN');
    expect(outside.message).toContain('billing:read');
    expect(outside.details?.scope).toBe('billing:read');
    const refused = await bearer(tokens.access_token, '/api/v1/billing/balance');
    expect(refused.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="billing:read"');
    const write = expectError(
      await call('/api/v1/memory', { method: 'PUT', headers: { authorization: `Bearer ${tokens.access_token}` }, body: { content: 'x' } }),
      403,
      'FORBIDDEN',
    );
    expect(write.message).toContain('memory:write');
  });

  it('the OIDC profile scope grants no API access (it is not profile:read)', async () => {
    const { tokens } = await tokensFor('openid profile');
    const error = expectError(await bearer(tokens.access_token), 403, 'FORBIDDEN');
    expect(error.message).toContain('profile:read');
    const info = await call('/auth/oauth2/userinfo', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.status).toBe(200);
    expect(info.body).toEqual({ sub: expect.any(String), name: 'OAuth User' });
  });

  it('an unknown or expired token is 401', async () => {
    const unknown = await bearer('oat_not-a-real-token');
    expectError(unknown, 401, 'UNAUTHORIZED');
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    const { tokens } = await tokensFor('profile:read');
    advanceClock(3601_000);
    expectError(await bearer(tokens.access_token), 401, 'UNAUTHORIZED');
  });

  it('cannot use session-only routes or move to another workspace', async () => {
    const { tokens } = await tokensFor('profile:read profile:write');
    expectError(
      await call('/api/v1/invitations/accept', { headers: { authorization: `Bearer ${tokens.access_token}` }, body: { token: 'x' } }),
      403,
      'FORBIDDEN',
    );
    const other = await call('/api/v1/workspaces', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
      body: { name: 'Other', slug: `other-${crypto.randomUUID().slice(0, 8)}` },
    });
    expect(other.status).toBe(201);
    expectError(
      await call('/api/v1/workspaces/current', {
        method: 'PUT',
        headers: { authorization: `Bearer ${tokens.access_token}` },
        body: { workspace: other.body.id },
      }),
      403,
      'FORBIDDEN',
    );
  });
});

describe('refresh tokens', () => {
  it('come only with offline_access', async () => {
    const { tokens } = await tokensFor('profile:read');
    expect(tokens.refresh_token).toBeUndefined();
  });

  it('rotate on use; reusing an old one revokes the whole family', async () => {
    const { tokens, clientId } = await tokensFor('profile:read offline_access');
    expect(tokens.refresh_token).toMatch(/^ort_/);
    const rotated = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    const next = (await rotated.json()) as Record<string, any>;
    expect(next).toMatchObject({ token_type: 'Bearer', expires_in: 3600, refresh_token: expect.stringMatching(/^ort_/) });
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect((await bearer(next.access_token)).status).toBe(200);

    const reuse = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant' });
    expectError(await bearer(next.access_token), 401, 'UNAUTHORIZED');
    expectError(await bearer(tokens.access_token), 401, 'UNAUTHORIZED');
    const successor = await token({ grant_type: 'refresh_token', refresh_token: next.refresh_token, client_id: clientId });
    expect(await successor.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('are bound to their client and may only narrow scopes', async () => {
    const { tokens, clientId } = await tokensFor('profile:read memory:read offline_access');
    const other = (await register()).body.client_id;
    expect(await (await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: other })).json()).toMatchObject({
      error: 'invalid_grant',
    });
    const wider = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId, scope: 'memory:write' });
    expect(await wider.json()).toMatchObject({ error: 'invalid_scope' });
    const narrow = (await (
      await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId, scope: 'memory:read' })
    ).json()) as Record<string, any>;
    expect(narrow.scope).toBe('memory:read offline_access');
    expectError(await bearer(narrow.access_token), 403, 'FORBIDDEN');
  });
});

describe('POST /auth/oauth2/revoke', () => {
  const revoke = (form: Record<string, string>) =>
    raw('/auth/oauth2/revoke', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });

  it('ends an access token at once', async () => {
    const { tokens, clientId } = await tokensFor('profile:read');
    expect((await bearer(tokens.access_token)).status).toBe(200);
    expect((await revoke({ token: tokens.access_token, client_id: clientId })).status).toBe(200);
    expectError(await bearer(tokens.access_token), 401, 'UNAUTHORIZED');
  });

  it('revoking a refresh token ends its access tokens too', async () => {
    const { tokens, clientId } = await tokensFor('profile:read offline_access');
    expect((await revoke({ token: tokens.refresh_token, client_id: clientId, token_type_hint: 'refresh_token' })).status).toBe(200);
    expectError(await bearer(tokens.access_token), 401, 'UNAUTHORIZED');
    expect(await (await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId })).json()).toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('answers 200 for an unknown token and refuses another client', async () => {
    expect((await revoke({ token: 'oat_unknown', client_id: 'whatever' })).status).toBe(200);
    const { tokens } = await tokensFor('profile:read');
    const other = (await register()).body.client_id;
    const res = await revoke({ token: tokens.access_token, client_id: other });
    expect(res.status).toBe(400);
    expect((await bearer(tokens.access_token)).status).toBe(200);
  });
});

describe('GET /auth/oauth2/userinfo', () => {
  it('answers the claims of the scopes, and 401 with WWW-Authenticate without a token', async () => {
    const { tokens, user } = await tokensFor('openid email');
    const info = await call('/auth/oauth2/userinfo', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.body).toEqual({ sub: user.user.id, email: user.email, email_verified: false });
    const none = await call('/auth/oauth2/userinfo');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('invalid_token');
    const noOpenid = await tokensFor('profile:read');
    expect((await call('/auth/oauth2/userinfo', { headers: { authorization: `Bearer ${noOpenid.tokens.access_token}` } })).status).toBe(403);
  });
});

describe('sign-in and sign-up pages', () => {
  it('render accessible forms with CSP, framing refused and a CSRF cookie', async () => {
    for (const path of ['/auth/sign-in', '/auth/sign-up']) {
      const res = await raw(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      const html = await res.text();
      expect(html).toContain('<label for="email">Email</label>');
      expect(html).toContain('<label for="password">Password</label>');
      expect(html).toMatch(/name="csrf" value="[A-Za-z0-9_-]{32}"/);
    }
  });

  it('refuse a post without the CSRF token', async () => {
    const user = await signUp();
    const res = await raw('/auth/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: user.email, password: user.password }),
    });
    expect(res.status).toBe(403);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('__Host-session='))).toBe(false);
  });

  it('sign in, set the session cookie and go back to next (a local path only)', async () => {
    const user = await signUp();
    const page = await raw('/auth/sign-in?next=%2Fauth%2Foauth2%2Fauthorize%3Fclient_id%3Dx');
    const csrf = setCookieValue(page, '__Host-csrf')!;
    const post = (form: Record<string, string>) =>
      raw('/auth/sign-in', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-csrf=${csrf}`, origin: BASE },
        body: new URLSearchParams({ csrf, ...form }),
      });
    const wrong = await post({ email: user.email, password: 'wrong password', next: '/x' });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('role="alert"');

    const ok = await post({ email: user.email, password: user.password, next: '/auth/oauth2/authorize?client_id=x' });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/auth/oauth2/authorize?client_id=x');
    const cookie = ok.headers.getSetCookie().find((c) => c.startsWith('__Host-session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/Secure/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    const session = setCookieValue(ok, '__Host-session')!;
    expect((await call('/api/v1/profile', { token: session })).body.id).toBe(user.user.id);

    const evil = await post({ email: user.email, password: user.password, next: '//evil.example/x' });
    expect(evil.headers.get('location')).toBe('/auth/sign-in');
  });

  it('sign up creates the account and signs in', async () => {
    const page = await raw('/auth/sign-up');
    const csrf = setCookieValue(page, '__Host-csrf')!;
    const email = `page-${crypto.randomUUID()}@example.test`;
    const res = await raw('/auth/sign-up', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-csrf=${csrf}`, 'cf-connecting-ip': '2001:db8::ffff' },
      body: new URLSearchParams({ csrf, name: 'Page Person', email, password: 'long enough password', next: '/auth/sign-in' }),
    });
    expect(res.status).toBe(303);
    const session = setCookieValue(res, '__Host-session')!;
    expect((await call('/api/v1/profile', { token: session })).body).toMatchObject({ email, name: 'Page Person' });
    const signedIn = await raw('/auth/sign-in', { headers: { cookie: `__Host-session=${session}` } });
    expect(await signedIn.text()).toContain('Signed in as Page Person');
  });
});

describe('housekeeping and helpers', () => {
  it('rotates a signing key older than 90 days and drops retired keys a day later', async () => {
    const db = globalDbOf(env);
    const active = await rotateSigningKey(db, env.ENCRYPTION_KEY);
    advanceClock(91 * 24 * 3600_000);
    await maintainSigningKeys(db, env.ENCRYPTION_KEY);
    const rotated: string[] = (await call('/auth/jwks')).body.keys.map((k: any) => k.kid);
    expect(rotated).toHaveLength(2);
    expect(rotated).toContain(active);
    const successor = rotated.find((kid) => kid !== active);
    advanceClock(25 * 3600_000);
    await maintainSigningKeys(db, env.ENCRYPTION_KEY);
    expect((await call('/auth/jwks')).body.keys.map((k: any) => k.kid)).toEqual([successor]);
    const stored = await env.DB.prepare('SELECT kid FROM oauth_signing_keys').all();
    expect(stored.results.map((r) => r.kid)).toEqual([successor]);
  });

  it('deletes expired codes and tokens, keeping live ones', async () => {
    const { tokens } = await tokensFor('profile:read offline_access');
    await deleteExpiredOAuthRecords(globalDbOf(env));
    expect((await bearer(tokens.access_token)).status).toBe(200);
    advanceClock(3601_000);
    await deleteExpiredOAuthRecords(globalDbOf(env));
    const left = await env.DB.prepare("SELECT kind FROM oauth_tokens WHERE kind = 'access' AND expires_at < ?").bind(now()).all();
    expect(left.results).toEqual([]);
    expect((await env.DB.prepare("SELECT count(*) AS n FROM oauth_tokens WHERE kind = 'refresh'").first<{ n: number }>())!.n).toBeGreaterThan(0);
  });

  it('builds the MCP WWW-Authenticate challenge (RFC 9728 5.1, RFC 6750 3)', () => {
    // Without a problem it names what the MCP tools need (reads first), not every scope there is.
    expect(mcpWwwAuthenticate(BASE)).toBe(
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", scope="memory:read workspace:files:read connector:list library:read billing:read memory:write workspace:files:write tool:execute library:write workflow:run connector:github:read connector:github:exec offline_access"`,
    );
    expect(mcpWwwAuthenticate(BASE, { error: 'invalid_token', description: 'Issued for "x" – now' })).toContain(
      'error="invalid_token", error_description="Issued for x  now"',
    );
    expect(mcpWwwAuthenticate(BASE, { error: 'insufficient_scope', scope: ['memory:read', 'memory:write'] })).toBe(
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="memory:read memory:write"`,
    );
  });
});

describe('signing out from the page', () => {
  it('ends the cookie session with the CSRF token, and refuses without it', async () => {
    const user = await signUp();
    const signedIn = await raw('/auth/sign-in', { headers: { cookie: cookieHeader(user) } });
    const html = await signedIn.text();
    expect(html).toContain('action="/auth/sign-out"');
    const csrf = hidden(html, 'csrf')!;
    const post = (form: Record<string, string>) =>
      raw('/auth/sign-out', {
        method: 'POST',
        headers: { cookie: cookieHeader(user, csrf), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
      });
    expect((await post({})).status).toBe(403);
    expect((await call('/api/v1/profile', { token: user.token })).status).toBe(200);
    const out = await post({ csrf });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/auth/sign-in');
    expect(out.headers.getSetCookie().find((c) => c.startsWith('__Host-session='))).toMatch(/Max-Age=0/);
    expectError(await call('/api/v1/profile', { token: user.token }), 401, 'UNAUTHORIZED');
  });
});
