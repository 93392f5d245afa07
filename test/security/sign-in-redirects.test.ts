import { env, exports } from 'cloudflare:workers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { oauthClients } from '../../schema';
import { createApp } from '../../workers/app';
import type { Env } from '../../workers/env';
import { addressKey } from '../../workers/lib/client-address';
import { advanceClock, freezeClock, now, resetClock } from '../../workers/lib/clock';
import { globalDbOf } from '../../workers/lib/db';
import { BASE, call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { authorizeQuery, cookieHeader, hidden, pkce, raw, REDIRECT, register, setCookieValue } from '../helpers/oauth';

/**
 * Sign-in and redirects: a return address is a path here or nothing, the authorization endpoint
 * redirects to a client only after a person answered, client-chosen text cannot rearrange the
 * consent page, password guessing slows the guesser without locking the owner out, and /mcp
 * trusts loopback browser origins only in local development.
 */

afterEach(() => resetClock());

/** Posts the sign-in form (with a valid CSRF pair) from `ip`. */
async function signInPage(values: { email: string; password: string; next?: string }, ip = '192.0.2.10') {
  const opened = await raw('/auth/sign-in');
  const csrf = setCookieValue(opened, '__Host-csrf')!;
  return raw('/auth/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-csrf=${csrf}`, origin: BASE, 'cf-connecting-ip': ip },
    body: new URLSearchParams({ csrf, ...values }),
  });
}

const signInApi = (email: string, password: string, ip: string) =>
  call('/auth/sign-in/email', { body: { email, password }, headers: { 'cf-connecting-ip': ip } });

describe('the return address after signing in', () => {
  // Each decodes (once, as a query or form value) to something a browser reads as another host, or that cannot be a Location.
  const hostile = [
    '/\t/evil.example',
    '/\n/evil.example',
    '/\r\n/evil.example',
    '/ /evil.example',
    '//evil.example',
    '/\\evil.example',
    '/\\/evil.example',
    'https://evil.example/',
    '/\u200b/evil.example',
    'evil.example',
  ];

  it.each(hostile.map((next) => [JSON.stringify(next), next]))(
    'falls back to the sign-in page for next=%s, never another host and never a 500',
    async (_label, next) => {
      const user = await signUp();
      const posted = await signInPage({ email: user.email, password: user.password, next });
      expect(posted.status).toBe(303);
      expect(posted.headers.get('location')).toBe('/auth/sign-in');

      // Already signed in, the page sends the browser straight on.
      const signedIn = await raw(`/auth/sign-in?next=${encodeURIComponent(next)}`, { headers: { cookie: cookieHeader(user) } });
      expect(signedIn.status).toBe(302);
      expect(signedIn.headers.get('location')).toBe('/auth/sign-in');
      // The form carries the checked value, not the hostile one.
      const fresh = await raw(`/auth/sign-in?next=${encodeURIComponent(next)}`);
      expect(hidden(await fresh.text(), 'next')).toBe('/auth/sign-in');
    },
  );

  it('keeps a path here, with its query and fragment, as the URL parser writes it', async () => {
    const user = await signUp();
    const next = '/auth/oauth2/authorize?client_id=x&scope=a%20b#top';
    const posted = await signInPage({ email: user.email, password: user.password, next });
    expect(posted.headers.get('location')).toBe(next);
    const dotted = await raw(`/auth/sign-in?next=${encodeURIComponent('/a/../activate')}`, { headers: { cookie: cookieHeader(user) } });
    expect(dotted.headers.get('location')).toBe('/activate');
  });
});

describe('authorization errors before consent (RFC 9700 4.11.2)', () => {
  // A client anyone can register, with an https redirect URI: its errors must not bounce a browser there.
  it.each([
    ['response_type=token', { response_type: 'token' }],
    ['an unknown scope', { scope: 'profile:read made:up' }],
    ['no PKCE challenge', { code_challenge: '' }],
    ['plain PKCE', { code_challenge_method: 'plain' }],
    ['a short PKCE challenge', { code_challenge: 'short' }],
    ['a foreign resource', { resource: 'https://evil.example' }],
  ])('shows %s on a page, signed in or not, and never redirects to the client', async (_label, override) => {
    const user = await signUp();
    const clientId = (await register({ redirect_uris: ['https://attacker.example/landing'] })).body.client_id;
    const query = authorizeQuery(clientId, (await pkce()).challenge, 'profile:read', { redirect_uri: 'https://attacker.example/landing', ...override });
    for (const [k, v] of Object.entries(override)) if (v === '') query.delete(k);
    const signedOutAndIn: Record<string, string>[] = [{}, { cookie: cookieHeader(user) }];
    for (const headers of signedOutAndIn) {
      const res = await raw(`/auth/oauth2/authorize?${query}`, { headers });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toContain('text/html');
      const html = await res.text();
      expect(html).toContain('This sign-in link does not work');
      expect(html).not.toContain('attacker.example');
    }
  });

  it('answers a tampered consent form on a page too; only a decision goes back to the client', async () => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const opened = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read')}`, {
      headers: { cookie: cookieHeader(user) },
    });
    const html = await opened.text();
    const csrf = setCookieValue(opened, '__Host-csrf')!;
    const fields = new URLSearchParams({ csrf });
    for (const name of ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method'])
      fields.set(name, hidden(html, name)!);
    const post = (decision: string, changes: Record<string, string> = {}) => {
      const body = new URLSearchParams(fields);
      body.set('decision', decision);
      for (const [k, v] of Object.entries(changes)) body.set(k, v);
      return raw('/auth/oauth2/authorize', {
        method: 'POST',
        headers: { cookie: cookieHeader(user, csrf), 'content-type': 'application/x-www-form-urlencoded', origin: BASE },
        body,
      });
    };
    const tampered = await post('allow', { response_type: 'token' });
    expect(tampered.status).toBe(400);
    expect(tampered.headers.get('location')).toBeNull();

    const denied = await post('deny');
    expect(denied.status).toBe(303);
    const back = new URL(denied.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('access_denied');
  });
});

describe('client-chosen text on the decision pages', () => {
  const SPOOF = 'Helpful App\u202E\u2066 moc.elpmaxe-live\u2069\u200b\u200f\u061c\ufeff';

  const consentPage = async (clientId: string) => {
    const user = await signUp();
    const res = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read')}`, {
      headers: { cookie: cookieHeader(user) },
    });
    expect(res.status).toBe(200);
    return res.text();
  };

  const HIDDEN = /[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c\u2060\ufeff]/;

  it('shows a client name without its bidirectional and invisible characters, isolated, and the redirect sentence intact', async () => {
    const registered = await register({ client_name: SPOOF });
    expect(registered.status).toBe(201);
    expect(registered.body.client_name).not.toMatch(HIDDEN);
    const html = await consentPage(registered.body.client_id);
    expect(html).not.toMatch(HIDDEN);
    // Registration trims the trailing byte order mark (it is white space); the rest show as U+FFFD.
    expect(html).toContain('It calls itself “<bdi>Helpful App\ufffd\ufffd moc.elpmaxe-live\ufffd\ufffd\ufffd\ufffd</bdi>”.');
    expect(html).toContain('After you answer you go back to <strong>client.example</strong>.');
  });

  it('neutralises a name stored before names were cleaned', async () => {
    const id = `legacy-${crypto.randomUUID()}`;
    await globalDbOf(env)
      .insert(oauthClients)
      .values({ id, name: SPOOF, redirectUris: [REDIRECT], grantTypes: ['authorization_code'], applicationType: 'web', createdBy: null, createdAt: now() });
    const html = await consentPage(id);
    expect(html).not.toMatch(HIDDEN);
    expect(html).toContain('<bdi>Helpful App\ufffd');
    expect(html).toContain('After you answer you go back to <strong>client.example</strong>.');
  });

  it('neutralises a device label on /activate and an agent’s name and reason on /approve', async () => {
    const user = await signUp();
    const started = await call('/api/v1/activate', { body: { client_label: 'CLI\u202Eevil' } });
    const activate = await raw(`/activate?user_code=${started.body.user_code}`, { headers: { cookie: cookieHeader(user) } });
    const activateHtml = await activate.text();
    expect(activateHtml).not.toMatch(HIDDEN);
    expect(activateHtml).toContain('Connect “<bdi>CLI\ufffdevil</bdi>”?');

    const key = await createKey(user, ['profile:read']);
    const connect = await call('/api/v1/agents/connect', {
      apiKey: key.key,
      body: { requestedScopes: ['memory:read'], agentDisplayName: 'Bot\u202E', reason: 'Line one\nline two\u2067' },
    });
    expect(connect.status).toBe(202);
    const approve = await raw(`/approve?code=${connect.body.link_code}`, { headers: { cookie: cookieHeader(user) } });
    const approveHtml = await approve.text();
    expect(approveHtml).not.toMatch(HIDDEN);
    expect(approveHtml).toContain('<bdi>Bot\ufffd</bdi> asks for access');
    expect(approveHtml).toContain('<bdi>Line one\nline two\ufffd</bdi>');
  });
});

describe('password guessing', () => {
  // Waits are counted in seconds: the clock stands still unless a test moves it.
  beforeEach(() => freezeClock());
  let n = 0;
  /** A fresh IPv4 address of TEST-NET-2 and a fresh /64 of the documentation range, per call. */
  const ipv4 = () => `198.51.100.${++n}`;
  const net64 = () => `2001:db8:5:${(++n).toString(16)}`;

  it('never locks the owner out: after 12 failures from one address, the right password from another works', async () => {
    const user = await signUp();
    const stranger = ipv4();
    for (let failures = 0; failures < 12;) {
      const res = await signInApi(user.email, `guess-${failures}`, stranger);
      if (res.status === 401) failures++;
      else {
        // Waits, never a lockout: the stranger waits out each one and guesses on.
        expect(expectError(res, 429, 'RATE_LIMITED').details!.retryAfterSeconds).toBeLessThanOrEqual(60);
        advanceClock(res.body.error.details.retryAfterSeconds * 1000);
      }
    }
    expect((await signInApi(user.email, user.password, ipv4())).status).toBe(200);
    // Through the sign-in page too.
    const page = await signInPage({ email: user.email, password: user.password, next: '/' }, ipv4());
    expect(page.status).toBe(303);
  });

  it('slows the guessing address with waits that double: 429 RATE_LIMITED with a growing Retry-After', async () => {
    const user = await signUp();
    const stranger = ipv4();
    for (let i = 0; i < 6; i++) expectError(await signInApi(user.email, `guess-${i}`, stranger), 401, 'UNAUTHORIZED');
    const waits: number[] = [];
    for (let round = 0; round < 4; round++) {
      const res = await call('/auth/sign-in/email', { body: { email: user.email, password: user.password }, headers: { 'cf-connecting-ip': stranger } });
      const error = expectError(res, 429, 'RATE_LIMITED');
      expect(res.headers.get('retry-after')).toBe(String(error.details!.retryAfterSeconds));
      waits.push(error.details!.retryAfterSeconds);
      advanceClock(error.details!.retryAfterSeconds * 1000);
      expectError(await signInApi(user.email, `late-guess-${round}`, stranger), 401, 'UNAUTHORIZED');
    }
    expect(waits).toEqual([1, 2, 4, 8]);
    // The page says how long, with the same status and header.
    const page = await signInPage({ email: user.email, password: 'another guess' }, stranger);
    expect(page.status).toBe(429);
    expect(Number(page.headers.get('retry-after'))).toBe(16);
    expect(await page.text()).toContain('Wait 16 seconds and try again.');
  });

  it('counts the addresses of one IPv6 /64 together, and another /64 apart', async () => {
    const user = await signUp();
    const shared = net64();
    for (let i = 0; i < 6; i++) expectError(await signInApi(user.email, `guess-${i}`, `${shared}::${i + 1}`), 401, 'UNAUTHORIZED');
    expectError(await signInApi(user.email, user.password, `${shared}:ffff:ffff:ffff:ffff`), 429, 'RATE_LIMITED');
    expect((await signInApi(user.email, user.password, `${net64()}::1`)).status).toBe(200);
  });

  it('starts an address’s count on an account again after a successful sign-in from it', async () => {
    const user = await signUp();
    const home = ipv4();
    for (let i = 0; i < 5; i++) expectError(await signInApi(user.email, `typo-${i}`, home), 401, 'UNAUTHORIZED');
    expect((await signInApi(user.email, user.password, home)).status).toBe(200);
    for (let i = 0; i < 5; i++) expectError(await signInApi(user.email, `typo-again-${i}`, home), 401, 'UNAUTHORIZED');
    expect((await signInApi(user.email, user.password, home)).status).toBe(200);
  });

  it('slows guesses spread over many addresses, but not the account’s own familiar address', async () => {
    // The account's object, with small numbers: 3 free failures from unfamiliar addresses.
    const account = env.RATE_LIMITER.getByName(`signin:account:campaign-${crypto.randomUUID()}@example.test`);
    const fromAddress = { free: 5, firstDelayMs: 1000, maxDelayMs: 900_000 };
    const fromUnfamiliar = { free: 3, firstDelayMs: 1000, maxDelayMs: 900_000 };
    const home = await account.signInToAccount('192.0.2.1', fromAddress, fromUnfamiliar);
    if (!home.allowed) throw new Error('the first attempt was refused');
    await account.settleSignIn(home.ticket, true);
    // Four strangers fail once each: the fourth failure starts a wait for every unfamiliar address.
    for (let i = 0; i < 4; i++) expect((await account.signInToAccount(`198.51.100.${200 + i}`, fromAddress, fromUnfamiliar)).allowed).toBe(true);
    const elsewhere = await account.signInToAccount('203.0.113.9', fromAddress, fromUnfamiliar);
    expect(elsewhere.allowed).toBe(false);
    expect(elsewhere.allowed === false && elsewhere.retryAfterMs).toBeGreaterThan(0);
    expect((await account.signInToAccount('192.0.2.1', fromAddress, fromUnfamiliar)).allowed).toBe(true);
  });

  // 32 password checks: slow on a busy machine.
  it('slows one address guessing across many accounts', { timeout: 90_000 }, async () => {
    const stranger = ipv4();
    for (let i = 0; i < 30; i++) expectError(await signInApi(`nobody-${i}-${crypto.randomUUID()}@example.test`, 'guess', stranger), 401, 'UNAUTHORIZED');
    expectError(await signInApi(`nobody-${crypto.randomUUID()}@example.test`, 'guess', stranger), 401, 'UNAUTHORIZED');
    expectError(await signInApi(`nobody-${crypto.randomUUID()}@example.test`, 'guess', stranger), 429, 'RATE_LIMITED');
  });
});

describe('per-address limits count an IPv6 /64 as one address', () => {
  it('keys IPv4 by the address and IPv6 by its /64', () => {
    expect(addressKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:DB8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff::')).toBe('2001:db8:1:2::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey(null)).toBe('unknown');
  });

  it('limits client registrations per /64, whichever address of it registers', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 21; i++) {
      const res = await raw('/auth/oauth2/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'cf-connecting-ip': `2001:db8:6:1::${i.toString(16)}` },
        body: JSON.stringify({ redirect_uris: [REDIRECT] }),
      });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 20).every((s) => s === 201)).toBe(true);
    expect(statuses[20]).toBe(429);
  });
});

describe('/mcp from a browser on a loopback origin', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  };
  const post = (overrides: Partial<Env>, origin: string, user: TestUser) =>
    createApp().fetch(
      new Request(`${BASE}/mcp`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-auth-token': user.token },
        body: JSON.stringify(initialize),
      }),
      { ...env, ...overrides },
    );
  const preflight = (overrides: Partial<Env>, origin: string) =>
    createApp().fetch(new Request(`${BASE}/mcp`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } }), {
      ...env,
      ...overrides,
    });

  it('is refused in a deployment (local development off); the public origin still works', async () => {
    const user = await signUp();
    const deployed = { LOCAL_DEVELOPMENT: undefined };
    for (const origin of ['http://localhost:6274', 'http://127.0.0.1:5173', 'http://[::1]:8080']) {
      expect((await post(deployed, origin, user)).status, origin).toBe(403);
      expect((await preflight(deployed, origin)).headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    expect((await post(deployed, BASE, user)).status).toBe(200);
  });

  it('is accepted in local development', async () => {
    const user = await signUp();
    const res = await post({ LOCAL_DEVELOPMENT: 'true' }, 'http://localhost:6274', user);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    expect(
      (await exports.default.fetch(`${BASE}/mcp`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:5173', 'access-control-request-method': 'POST' } }))
        .status,
    ).toBe(204);
  });
});
