import { exports } from 'cloudflare:workers';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { metadataTtlSeconds, metadataUrlProblem } from '../../workers/auth/oauth/client-metadata';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, expectError, signUp } from '../helpers/api';
import { authorizeCode, authorizeQuery, bearer, cookieHeader, exchange, pkce, raw, register, tokensFor } from '../helpers/oauth';

/** Stock MCP clients: Client ID Metadata Documents, consent narrowing, and audience-bound tokens. */

afterEach(() => resetClock());

const documentUrl = (name: string) => `${inject('fixtureOrigin')}/oauth-client/${name}`;

async function authorizePage(clientId: string, scope = 'profile:read') {
  const user = await signUp();
  const res = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, scope)}`, { headers: { cookie: cookieHeader(user) } });
  return { res, html: await res.text() };
}

describe('Client ID Metadata Documents', () => {
  it('are advertised in the authorization server metadata', async () => {
    expect((await call('/auth/.well-known/openid-configuration')).body.client_id_metadata_document_supported).toBe(true);
  });

  it('let a client with no registration sign in, get tokens and refresh them', async () => {
    const clientId = documentUrl('good');
    const { html } = await authorizePage(clientId);
    expect(html).toContain('Allow an app at <span class="host">client.example</span>');
    expect(html).toContain('It calls itself “<bdi>Metadata Client</bdi>”.');
    const flow = await authorizeCode('profile:read offline_access', { clientId });
    const res = await exchange(flow);
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as Record<string, string>;
    expect((await bearer(tokens.access_token!)).status).toBe(200);
    const refreshed = await raw('/auth/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId }),
    });
    expect(refreshed.status).toBe(200);
  });

  it.each([
    ['wrong-id', 'names another client_id'],
    ['secret', 'not valid'],
    ['http-redirect', 'redirect URI this server refuses'],
    ['large', 'too large'],
    ['moved', 'could not be fetched'],
    ['missing', 'could not be fetched'],
  ])('refuses the document "%s" on a page, never redirecting', async (name, words) => {
    const { res, html } = await authorizePage(documentUrl(name));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(html).toContain(words);
  });

  it('refuses a redirect_uri the document does not list', async () => {
    const user = await signUp();
    const query = authorizeQuery(documentUrl('good'), (await pkce()).challenge, 'profile:read', { redirect_uri: 'https://client.example/elsewhere' });
    const res = await raw(`/auth/oauth2/authorize?${query}`, { headers: { cookie: cookieHeader(user) } });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('not one it registered');
  });

  it('keeps a document for its HTTP lifetime, within bounds, then fetches it again', async () => {
    const clientId = documentUrl('cached');
    const hits = async () => ((await (await fetch(`${inject('fixtureOrigin')}/oauth-client-hits/cached`)).json()) as { hits: number }).hits;
    const before = await hits();
    await authorizePage(clientId);
    await authorizePage(clientId);
    expect(await hits()).toBe(before + 1);
    advanceClock(601_000);
    await authorizePage(clientId);
    expect(await hits()).toBe(before + 2);
  });

  it('fetch only https URLs with a path on public hosts (http to loopback only in local development)', () => {
    const strict = { localDevelopment: false };
    expect(metadataUrlProblem('https://app.example/client.json', strict)).toBeNull();
    for (const url of [
      'http://app.example/client.json',
      'https://app.example/',
      'https://user:pw@app.example/c',
      'https://app.example/c#f',
      'https://127.0.0.1/c',
      'https://localhost/c',
      'https://10.1.2.3/c',
      'https://192.168.0.1/c',
      'https://169.254.169.254/latest',
      'https://[::1]/c',
      'https://[fd00::1]/c',
      'https://printer.local/c',
      'http://127.0.0.1:8080/c',
    ]) {
      expect(metadataUrlProblem(url, strict), url).not.toBeNull();
    }
    expect(metadataUrlProblem('http://127.0.0.1:8080/c', { localDevelopment: true })).toBeNull();
    expect(metadataUrlProblem('http://app.example/c', { localDevelopment: true })).not.toBeNull();
  });

  it('take their lifetime from Cache-Control, between a minute and a day', () => {
    expect(metadataTtlSeconds(new Headers({ 'cache-control': 'max-age=600' }))).toBe(600);
    expect(metadataTtlSeconds(new Headers({ 'cache-control': 'no-store' }))).toBe(60);
    expect(metadataTtlSeconds(new Headers({ 'cache-control': 'max-age=99999999' }))).toBe(24 * 3600);
    expect(metadataTtlSeconds(new Headers())).toBe(3600);
  });
});

describe('the consent page', () => {
  it('lets the person untick scopes: the token gets only what stayed ticked', async () => {
    const { tokens } = await tokensFor('profile:read memory:read billing:read', { untick: ['billing:read'] });
    expect(tokens.scope).toBe('profile:read memory:read');
    expect((await bearer(tokens.access_token, '/api/v1/memory')).status).toBe(200);
    expectError(await bearer(tokens.access_token, '/api/v1/billing/balance'), 403, 'FORBIDDEN');
  });

  it('refuses a consent with nothing ticked', async () => {
    const flow = authorizeCode('profile:read', undefined, { untick: ['profile:read'] });
    await expect(flow).rejects.toThrow();
  });

  it('drops offline_access for a client not registered for refresh, instead of failing', async () => {
    const clientId = (await register({ grant_types: ['authorization_code'] })).body.client_id;
    const flow = await authorizeCode('profile:read offline_access', { clientId });
    const tokens = (await (await exchange(flow)).json()) as Record<string, string>;
    expect(tokens.scope).toBe('profile:read');
    expect(tokens.refresh_token).toBeUndefined();
  });
});

describe('audience (RFC 8707)', () => {
  const mcpList = (accessToken: string) =>
    exports.default.fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });

  it('a token for /mcp works there and is refused at the REST API, saying why', async () => {
    const { tokens } = await tokensFor('profile:read', { query: { resource: `${BASE}/mcp` } });
    expect((await mcpList(tokens.access_token)).status).toBe(200);
    const rest = await bearer(tokens.access_token);
    expect(rest.status).toBe(401);
    expect(rest.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="This access token was issued for ${BASE}/mcp, not for this endpoint"`,
    );
  });

  it('a token for the whole service, or naming no resource (as older ones), works at both', async () => {
    for (const query of [{ resource: BASE }, {}] as Record<string, string>[]) {
      const { tokens } = await tokensFor('profile:read', { query });
      expect((await mcpList(tokens.access_token)).status).toBe(200);
      expect((await bearer(tokens.access_token)).status).toBe(200);
    }
  });
});
