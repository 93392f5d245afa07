import { describe, expect, inject, it } from 'vitest';
import { BASE, signUp } from '../helpers/api';
import { authorizeCode, authorizeQuery, cookieHeader, exchange, hidden, pkce, raw, register, returnLink, setCookieValue } from '../helpers/oauth';

/**
 * Native apps returning through their own URI scheme (RFC 8252 7.1): `cursor://…`,
 * `vscode://…`, `com.example.app:/…`. Any app can claim a scheme, so the consent page says so.
 */

const CURSOR = 'cursor://anysphere.cursor-retrieval/oauth/callback';
const REVERSE_DOMAIN = 'com.example.app:/oauth2redirect';

async function consentPage(clientId: string, redirectUri: string) {
  const user = await signUp();
  const res = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read', { redirect_uri: redirectUri })}`, {
    headers: { cookie: cookieHeader(user) },
  });
  return { user, res, html: await res.text() };
}

describe('registration with a private-use scheme redirect', () => {
  it('accepts a reversed domain name and the short schemes stock clients use, as a native client', async () => {
    for (const uri of [REVERSE_DOMAIN, CURSOR, 'vscode://vscode.github-authentication/did-authenticate', 'myapp.v2+dev:callback?x=1']) {
      const res = await register({ redirect_uris: [uri] });
      expect(res.status, uri).toBe(201);
      expect(res.body.redirect_uris, uri).toEqual([uri]);
      expect(res.body.application_type, uri).toBe('native');
    }
    const withLoopback = await register({ redirect_uris: [CURSOR, 'http://127.0.0.1/callback'] });
    expect(withLoopback.body.application_type).toBe('native');
  });

  it.each([
    'javascript:alert(1)//',
    'JavaScript:alert(1)',
    'vbscript:msgbox(1)',
    'data:text/html,<script>alert(1)</script>',
    'file:///etc/passwd',
    'blob:https://client.example/4a2c',
    'about:blank',
    'view-source:https://client.example/',
    'ftp://client.example/cb',
    'ws://client.example/cb',
    'wss://client.example/cb',
    'intent://callback#Intent;scheme=x;end',
    'ms-msdt:/id PCWDiagnostic',
    'search-ms:query=x',
    'mailto:someone@client.example',
    'tel:+15555550100',
    'c:/Windows/System32/calc.exe',
    'com.example.app:/oauth2redirect#fragment',
    'com.example.app://user:secret@host/cb',
  ])('refuses %s', async (uri) => {
    const res = await register({ application_type: 'native', redirect_uris: [uri] });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_redirect_uri');
  });

  it('refuses a private-use scheme for a client that declares itself web', async () => {
    const declared = await register({ application_type: 'web', redirect_uris: [CURSOR] });
    expect(declared.body).toEqual({
      error: 'invalid_redirect_uri',
      error_description: `"${CURSOR}" uses a private-use scheme, which only a native application may use`,
    });
    expect((await register({ application_type: 'web', redirect_uris: ['https://client.example/callback', 'http://127.0.0.1/'] })).body.error).toBe(
      'invalid_redirect_uri',
    );
    expect((await register({ application_type: 'native', redirect_uris: ['https://client.example/callback', CURSOR] })).status).toBe(201);
  });

  it('takes a client that does not say, with https redirects beside loopback or private-use ones, as native (VS Code registers so)', async () => {
    const vscode = [
      'https://insiders.vscode.dev/redirect',
      'https://vscode.dev/redirect',
      'http://localhost',
      'http://127.0.0.1',
      'http://localhost:33418',
      'http://127.0.0.1:33418',
    ];
    const res = await register({ redirect_uris: vscode });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ application_type: 'native', redirect_uris: vscode });
    const mixed = await register({ redirect_uris: ['https://client.example/callback', CURSOR] });
    expect([mixed.status, mixed.body.application_type]).toEqual([201, 'native']);
    expect((await register({ redirect_uris: ['https://client.example/callback'] })).body.application_type).toBe('web');
  });
});

describe('signing in through a private-use scheme redirect', () => {
  it('names the scheme on the consent page, warns that any app can claim it, and lets the form post to us only', async () => {
    const clientId = (await register({ client_name: 'Cursor', redirect_uris: [CURSOR] })).body.client_id;
    const { res, html } = await consentPage(clientId, CURSOR);
    expect(res.status).toBe(200);
    expect(html).toContain('Allow the app that opens <span class="host">cursor:</span> links to use your account?');
    expect(html).toContain('It calls itself “<bdi>Cursor</bdi>”.');
    expect(html).toContain('you go back to the app on your device that opens <strong>cursor:</strong> links.');
    expect(html).toContain('Any app installed on your device can claim <strong>cursor:</strong> links: this service cannot check which app that is.');
    // The answer is a page of ours, not a redirect: the form needs no other target.
    expect(res.headers.get('content-security-policy')).toContain("form-action 'self';");
  });

  it('does not warn for a site redirect', async () => {
    const clientId = (await register()).body.client_id;
    const { html } = await consentPage(clientId, 'https://client.example/callback');
    expect(html).not.toContain('unverified-app');
  });

  it('answers the approval with a page that sends the browser to the app, links there, and leaks the code nowhere else', async () => {
    const clientId = (await register({ client_name: 'Cursor', redirect_uris: [CURSOR] })).body.client_id;
    const flow = await authorizeCode('profile:read', { clientId }, { query: { redirect_uri: CURSOR } });
    const url = `${CURSOR}?code=${flow.code}&state=st-123&iss=${encodeURIComponent(`${BASE}/auth`)}`;
    expect(flow.consent.status).toBe(200);
    expect(flow.location.href).toBe(url);
    const page = flow.returnPage;
    const escaped = url.replace(/&/g, '&amp;');
    expect(page).toContain('<h1>You can return to <bdi>Cursor</bdi> now</h1>');
    expect(page).toContain(`<a href="${escaped}" rel="noreferrer">Open <bdi>Cursor</bdi></a>`);
    expect(page).toContain(`<meta http-equiv="refresh" content="0;url=${escaped}"/>`);
    expect(page.split(escaped).join('')).not.toContain(flow.code);
    expect(flow.consent.headers.get('referrer-policy')).toBe('no-referrer');
    expect(flow.consent.headers.get('cache-control')).toBe('no-store');
    expect(flow.consent.headers.get('location')).toBeNull();
    expect(flow.consent.headers.get('content-security-policy')).toContain("default-src 'none';");
  });

  it('the code on that page exchanges with that URI and the PKCE verifier only', async () => {
    for (const uri of [CURSOR, REVERSE_DOMAIN]) {
      const clientId = (await register({ redirect_uris: [uri] })).body.client_id;
      const flow = await authorizeCode('profile:read', { clientId }, { query: { redirect_uri: uri } });
      expect(flow.location.href, uri).toBe(`${uri}?code=${flow.code}&state=st-123&iss=${encodeURIComponent(`${BASE}/auth`)}`);
      expect((await exchange(flow, { redirect_uri: uri })).status, uri).toBe(200);
      const wrongVerifier = await authorizeCode('profile:read', { clientId }, { query: { redirect_uri: uri } });
      expect((await exchange(wrongVerifier, { redirect_uri: uri, code_verifier: 'x'.repeat(43) })).status, uri).toBe(400);
    }
  });

  it('still redirects (303) to an https or loopback redirect of the same native client', async () => {
    const uris = ['https://client.example/callback', 'http://127.0.0.1:8123/callback'];
    const clientId = (await register({ redirect_uris: [CURSOR, ...uris] })).body.client_id;
    for (const uri of uris) {
      const flow = await authorizeCode('profile:read', { clientId }, { query: { redirect_uri: uri } });
      expect(flow.consent.status, uri).toBe(303);
      expect(flow.consent.headers.get('location'), uri).toBe(`${uri}?code=${flow.code}&state=st-123&iss=${encodeURIComponent(`${BASE}/auth`)}`);
    }
  });

  it('still requires PKCE', async () => {
    const user = await signUp();
    const clientId = (await register({ redirect_uris: [CURSOR] })).body.client_id;
    const query = authorizeQuery(clientId, '', 'profile:read', { redirect_uri: CURSOR });
    query.delete('code_challenge');
    const res = await raw(`/auth/oauth2/authorize?${query}`, { headers: { cookie: cookieHeader(user) } });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('code_challenge is required');
  });

  it('answers a denial with a page that says so and sends error=access_denied to the app', async () => {
    const clientId = (await register({ client_name: 'Example App', redirect_uris: [REVERSE_DOMAIN] })).body.client_id;
    const { user, res, html } = await consentPage(clientId, REVERSE_DOMAIN);
    const csrf = setCookieValue(res, '__Host-csrf')!;
    const form = new URLSearchParams({ csrf, decision: 'deny' });
    for (const name of ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method'])
      form.set(name, hidden(html, name)!);
    const denied = await raw('/auth/oauth2/authorize', {
      method: 'POST',
      headers: { cookie: cookieHeader(user, csrf), 'content-type': 'application/x-www-form-urlencoded', origin: BASE },
      body: form,
    });
    expect(denied.status).toBe(200);
    expect(denied.headers.get('referrer-policy')).toBe('no-referrer');
    const page = await denied.text();
    expect(page).toContain('<h1>Access was not granted; you can close this tab</h1>');
    expect(page).toContain('Open <bdi>Example App</bdi></a>');
    expect(returnLink(page)).toBe(
      `${REVERSE_DOMAIN}?error=access_denied&error_description=The+user+denied+access&state=st-123&iss=${encodeURIComponent(`${BASE}/auth`)}`,
    );
  });

  it('matches the registered URI exactly: another path or host under the same scheme is refused on a page', async () => {
    const clientId = (await register({ redirect_uris: [CURSOR] })).body.client_id;
    for (const other of [
      'cursor://anysphere.cursor-retrieval/oauth/other',
      'cursor://evil.example/oauth/callback',
      'CURSOR://anysphere.cursor-retrieval/oauth/callback',
    ]) {
      const { res, html } = await consentPage(clientId, other);
      expect(res.status, other).toBe(400);
      expect(res.headers.get('location'), other).toBeNull();
      expect(html, other).toContain('not one it registered');
    }
  });
});

describe('Client ID Metadata Documents with a private-use scheme redirect', () => {
  const documentUrl = (name: string) => `${inject('fixtureOrigin')}/oauth-client/${name}`;

  it('let the native app sign in through it', async () => {
    const clientId = documentUrl('native-app');
    const { html } = await consentPage(clientId, 'com.example.native:/oauth2redirect');
    expect(html).toContain('Allow the app that opens <span class="host">com.example.native:</span> links');
    expect(html).toContain('It calls itself “<bdi>Native Client</bdi>”.');
    const flow = await authorizeCode('profile:read', { clientId }, { query: { redirect_uri: 'com.example.native:/oauth2redirect' } });
    expect(flow.location.protocol).toBe('com.example.native:');
    expect((await exchange(flow, { redirect_uri: 'com.example.native:/oauth2redirect' })).status).toBe(200);
  });

  it('refuse a document listing a scheme that is no app’s own, on a page, never redirecting', async () => {
    const { res, html } = await consentPage(documentUrl('script-redirect'), 'com.example.native:/oauth2redirect');
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(html).toContain('redirect_uris[1] uses a scheme that is not an app');
    expect(html).not.toContain('javascript');
  });
});
