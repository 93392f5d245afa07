import { exports } from 'cloudflare:workers';
import { expect } from 'vitest';
import { BASE, call, signUp, type TestUser } from './api';

/** An OAuth client's side of the authorization-code flow against the Worker, as a browser and a client library would drive it. */
export const REDIRECT = 'https://client.example/callback';

/** A raw request to the Worker, redirects not followed. */
export const raw = (path: string, init: RequestInit = {}) => exports.default.fetch(`${BASE}${path}`, { redirect: 'manual', ...init });

export const b64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

export async function pkce() {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  return { verifier, challenge };
}

let registrations = 0;

/**
 * Registers a client as a stock MCP client does: no session. Each comes from its own
 * documentation-range /64, so files with many clients stay under the per-address limit.
 */
export async function register(body: Record<string, unknown> = {}) {
  return call('/auth/oauth2/register', {
    headers: { 'cf-connecting-ip': `2001:db8:1:${(++registrations).toString(16)}::1` },
    body: {
      client_name: 'Test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...body,
    },
  });
}

export const cookieHeader = (user: TestUser, csrf?: string) => `__Host-session=${user.token}${csrf ? `; __Host-csrf=${csrf}` : ''}`;

/** The value of a `Set-Cookie` named `name`. */
export const setCookieValue = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1])
    .find((v) => v !== undefined);

export const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];

/** The values of the consent page's ticked scope checkboxes. */
export const tickedScopes = (html: string) => [...html.matchAll(/name="scopes" value="([^"]*)" checked/g)].map((m) => m[1]!);

/**
 * The link of the page that sends the browser to a native app (a private-use scheme redirect):
 * its `Open …` anchor's href, unescaped.
 */
export const returnLink = (html: string) => /<a href="([^"]*)" rel="noreferrer">Open /.exec(html)?.[1]?.replace(/&amp;/g, '&');

/** Whether the consent's answer goes to a native app's private-use scheme (a page of ours) rather than a site (a 303). */
const isPrivateUse = (redirectUri: string) => !['https:', 'http:'].includes(new URL(redirectUri).protocol);

export interface Flow {
  user: TestUser;
  clientId: string;
  verifier: string;
  state: string;
}

export function authorizeQuery(clientId: string, challenge: string, scope: string, extra: Record<string, string> = {}) {
  return new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: REDIRECT,
    scope,
    state: 'st-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
}

/**
 * Runs authorize and the consent form as a browser would; answers the code, where the browser
 * is sent (the redirect, or the link of the page a native app's scheme gets) and the consent's
 * response. `options.query` adds authorize parameters (`resource`, `redirect_uri`);
 * `options.untick` clears those scope checkboxes.
 */
export async function authorizeCode(
  scope: string,
  existing?: { user?: TestUser; clientId?: string },
  options: { query?: Record<string, string>; untick?: string[] } = {},
) {
  const user = existing?.user ?? (await signUp('OAuth User'));
  const clientId = existing?.clientId ?? (await register()).body.client_id;
  const { verifier, challenge } = await pkce();
  const page = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, challenge, scope, options.query)}`, { headers: { cookie: cookieHeader(user) } });
  expect(page.status).toBe(200);
  const html = await page.text();
  const csrf = setCookieValue(page, '__Host-csrf')!;
  const form = new URLSearchParams({ csrf, decision: 'allow', workspace_id: user.workspaceId });
  // The page carries the request's parameters as they came (no `scope` field when none was named).
  for (const name of ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method']) {
    const value = hidden(html, name);
    if (value !== undefined) form.set(name, value.replace(/&amp;/g, '&'));
  }
  // Every scope checkbox is ticked when the page opens, as a browser would post them.
  for (const ticked of tickedScopes(html)) if (!options.untick?.includes(ticked)) form.append('scopes', ticked);
  if (options.query?.resource) form.set('resource', options.query.resource);
  const consent = await raw('/auth/oauth2/authorize', {
    method: 'POST',
    headers: { cookie: cookieHeader(user, csrf), 'content-type': 'application/x-www-form-urlencoded', origin: BASE },
    body: form,
  });
  const toApp = isPrivateUse(form.get('redirect_uri')!);
  expect(consent.status).toBe(toApp ? 200 : 303);
  const returnPage = toApp ? await consent.text() : '';
  const location = new URL(toApp ? returnLink(returnPage)! : consent.headers.get('location')!);
  const flow: Flow = { user, clientId, verifier, state: location.searchParams.get('state')! };
  return { ...flow, code: location.searchParams.get('code')!, location, consent, returnPage };
}

export const token = (form: Record<string, string>) =>
  raw('/auth/oauth2/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });

export const exchange = (flow: { code: string; clientId: string; verifier: string }, overrides: Record<string, string> = {}) =>
  token({ grant_type: 'authorization_code', code: flow.code, client_id: flow.clientId, redirect_uri: REDIRECT, code_verifier: flow.verifier, ...overrides });

export const bearer = (accessToken: string, path = '/api/v1/profile') => call(path, { headers: { authorization: `Bearer ${accessToken}` } });

export async function tokensFor(scope: string, options: Parameters<typeof authorizeCode>[2] = {}) {
  const flow = await authorizeCode(scope, undefined, options);
  const res = await exchange(flow);
  expect(res.status).toBe(200);
  return { ...flow, tokens: (await res.json()) as Record<string, any> };
}
