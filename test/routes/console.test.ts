import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { CONSOLE_PAGES } from '../../workers/console/pages';
import { BASE, call, createKey, expectError, signUp, type TestUser } from '../helpers/api';

/** The console page a signed-in browser gets, and the CSRF token it carries (meta and cookie). */
async function consolePage(user: TestUser, path = '/') {
  const res = await call(path, { headers: { cookie: `__Host-session=${user.token}` } });
  const html = String(res.body);
  const csrf = /<meta name="csrf-token" content="([^"]+)"/.exec(html)?.[1];
  return { res, html, csrf };
}

/** An API call as the console makes it: the session cookie, the page's CSRF token in the cookie and the header. */
const cookieCall = (user: TestUser, csrf: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
  call(path, { ...options, headers: { cookie: `__Host-session=${user.token}; __Host-csrf=${csrf}`, 'x-csrf-token': csrf, ...options.headers } });

describe('the console pages', () => {
  it('GET / is the landing page with Sign in and Sign up for someone signed out', async () => {
    const res = await call('/');
    expect(res.status).toBe(200);
    expect(res.body).toContain('<h1>Workspace AI Skills Service</h1>');
    expect(res.body).toContain('>Sign in</a>');
    expect(res.body).toContain('>Sign up</a>');
  });

  it('GET / is the console for a signed-in person: navigation, a nonce-only script policy and a fingerprinted script', async () => {
    const user = await signUp();
    const { res, html, csrf } = await consolePage(user);
    expect(res.status).toBe(200);
    for (const name of ['Home', 'Marketplace', 'Skills', 'Runs', 'Workflows', 'Traces', 'Memory', 'Settings']) expect(html).toContain(`>${name}</a>`);
    expect(html).toContain('<a href="/" aria-current="page">Home</a>');
    const csp = res.headers.get('content-security-policy')!;
    const nonce = /script-src 'nonce-([A-Za-z0-9_-]+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("connect-src 'self'");
    // The only script is the bundle, carrying the nonce; no inline script, no handler attributes.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toMatch(new RegExp(`<script nonce="${nonce}" src="/console/assets/console\\.[0-9a-f]{16}\\.js" defer="">`));
    expect(html).not.toMatch(/\son[a-z]+=/);
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{32,64}$/);
    expect(res.headers.get('set-cookie')).toContain(`__Host-csrf=${csrf}`);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('serves every page of the one list with its heading, its view, the item its path names (its parameters joined by /) and its section current in the navigation', async () => {
    const user = await signUp();
    for (const page of CONSOLE_PAGES) {
      let n = 0;
      const path = page.path.replace(/:\w+/g, () => `item-${++n}`);
      const { res, html } = await consolePage(user, path);
      expect(res.status, path).toBe(200);
      expect(html, path).toContain(`<h1>${page.title}</h1>`);
      expect(html, path).toContain(`data-view="${page.view}"`);
      if (n) expect(html, path).toContain(`data-item="${Array.from({ length: n }, (_, i) => `item-${i + 1}`).join('/')}"`);
      expect(html, path).toMatch(new RegExp(`<a href="[^"]*" aria-current="page">${page.section}</a>`));
      expect(html.match(/aria-current="page"/g), path).toHaveLength(1);
    }
  });

  it('sends someone signed out from a console page to sign in and back', async () => {
    const res = await exports.default.fetch(`${BASE}/runs/exec_1`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/auth/sign-in?next=%2Fruns%2Fexec_1');
  });

  it('serves the bundle and stylesheet immutable under their content hash, and nothing else there', async () => {
    const user = await signUp();
    const { html } = await consolePage(user, '/settings');
    for (const path of [/src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!, /href="(\/console\/assets\/[^"]+\.css)"/.exec(html)![1]!]) {
      const asset = await call(path);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(asset.headers.get('content-type')).toMatch(path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expect(String(asset.body).length).toBeGreaterThan(1000);
    }
    expect((await call('/console/assets/console.0000000000000000.js')).status).toBe(404);
  });
});

describe('the session cookie on /api/v1', () => {
  it('acts as the session with the page’s CSRF token, reading and writing', async () => {
    const user = await signUp();
    const { csrf } = await consolePage(user);
    const profile = await cookieCall(user, csrf!, '/api/v1/profile');
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({ id: user.user.id, credential: { type: 'session' } });
    const created = await cookieCall(user, csrf!, '/api/v1/api-keys', {
      body: { name: 'from the console', scopes: ['profile:read'] },
      headers: { origin: BASE },
    });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('from the console');
  });

  it('ignores the cookie without the CSRF header: the request has no credential', async () => {
    const user = await signUp();
    const res = await call('/api/v1/profile', { headers: { cookie: `__Host-session=${user.token}` } });
    expectError(res, 401, 'UNAUTHORIZED');
    const write = await call('/api/v1/api-keys', { body: { name: 'forged' }, headers: { cookie: `__Host-session=${user.token}` } });
    expectError(write, 401, 'UNAUTHORIZED');
  });

  it('refuses a CSRF token that does not match the cookie, and a request from another origin', async () => {
    const user = await signUp();
    const { csrf } = await consolePage(user);
    const wrong = await call('/api/v1/profile', {
      headers: { cookie: `__Host-session=${user.token}; __Host-csrf=${csrf}`, 'x-csrf-token': 'A'.repeat(32) },
    });
    expectError(wrong, 403, 'FORBIDDEN');
    const noCookie = await call('/api/v1/profile', { headers: { cookie: `__Host-session=${user.token}`, 'x-csrf-token': csrf! } });
    expectError(noCookie, 403, 'FORBIDDEN');
    const elsewhere = await cookieCall(user, csrf!, '/api/v1/api-keys', { body: { name: 'forged' }, headers: { origin: 'https://evil.example' } });
    expectError(elsewhere, 403, 'FORBIDDEN');
    const keys = await cookieCall(user, csrf!, '/api/v1/api-keys');
    expect(keys.body.data.map((k: { name: string }) => k.name)).not.toContain('forged');
  });

  it('lets a credential in a header win over the cookie', async () => {
    const [cookieUser, keyUser] = await Promise.all([signUp('Cookie'), signUp('Key')]);
    const key = await createKey(keyUser, ['profile:read']);
    const res = await call('/api/v1/profile', {
      apiKey: key.key,
      headers: { cookie: `__Host-session=${cookieUser.token}; __Host-csrf=${'B'.repeat(32)}`, 'x-csrf-token': 'C'.repeat(32) },
    });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(keyUser.user.id);
  });
});
