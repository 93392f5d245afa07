import { and, eq } from 'drizzle-orm';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { JSX } from 'hono/jsx/jsx-runtime';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { members } from '../../schema';
import type { AppEnv, GlobalDb } from '../env';
import { randomToken, timingSafeEqual } from '../lib/crypto';
import { sameOriginPath } from '../lib/same-origin-path';
import { resolvePrincipal, SESSION_TTL_MS } from './credentials';
import type { Principal } from './principal';

/**
 * The browser side of sessions: the same session token as
 * `x-auth-token`, in an HttpOnly, Secure, SameSite=Lax cookie. The `__Host-` prefix pins it to
 * this host and path `/` (RFC 6265bis 4.1.3.2).
 */
export const SESSION_COOKIE = '__Host-session';
const CSRF_COOKIE = '__Host-csrf';

type Ctx = Context<AppEnv>;

const cookieOptions = { httpOnly: true, secure: true, sameSite: 'Lax' as const, path: '/' };

export function setSessionCookie(c: Ctx, token: string) {
  setCookie(c, SESSION_COOKIE, token, { ...cookieOptions, maxAge: Math.floor(SESSION_TTL_MS / 1000) });
}

export const sessionCookie = (c: Ctx) => getCookie(c, SESSION_COOKIE);

export const clearSessionCookie = (c: Ctx) => deleteCookie(c, SESSION_COOKIE, cookieOptions);

/** The signed-in person of a page request, or undefined (no cookie, or an ended session). */
export async function pagePrincipal(c: Ctx): Promise<Principal | undefined> {
  const token = sessionCookie(c);
  if (!token) return undefined;
  try {
    return await resolvePrincipal(c.var.globalDb, { apiKey: undefined, sessionToken: token, workspaceSelector: undefined }, c.var.origin);
  } catch {
    return undefined;
  }
}

/**
 * CSRF (RFC 9700 4.7 for the consent form; OWASP double-submit cookie): every form carries the
 * value of an HttpOnly cookie the page set; a cross-site post can send the cookie but cannot
 * read it into the form. A present `Origin` must also be ours.
 */
export function csrfToken(c: Ctx): string {
  const existing = getCookie(c, CSRF_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
  const token = randomToken(24);
  setCookie(c, CSRF_COOKIE, token, cookieOptions);
  return token;
}

/** The header the console's API calls carry the CSRF token in (the cookie session on `/api/v1`). */
export const CSRF_HEADER = 'x-csrf-token';

export function csrfValid(c: Ctx, submitted: unknown): boolean {
  const origin = c.req.header('origin');
  if (origin !== undefined && origin !== new URL(c.req.url).origin) return false;
  const cookie = getCookie(c, CSRF_COOKIE);
  return typeof submitted === 'string' && !!cookie && timingSafeEqual(cookie, submitted);
}

/**
 * What a page may allow beyond the defaults. `formTargets` adds where a form's redirect may
 * lead (the client's redirect URI): browsers apply `form-action` to the redirect after a post
 * too. `noReferrer` is for a page without forms whose links carry a secret (a code).
 */
export interface PagePolicy {
  formTargets?: string[];
  noReferrer?: boolean;
}

/**
 * Headers for every page: a nonce-based CSP with `frame-ancestors 'none'` (RFC 9700 4.16,
 * clickjacking of the consent screen), no referrer to other sites (authorize URLs carry state;
 * `no-referrer` would also turn our own forms' Origin into "null"), no caching.
 */
function pageHeaders(c: Ctx, nonce: string, policy: PagePolicy) {
  const formAction = ["'self'", ...(policy.formTargets ?? [])].join(' ');
  pageSecurityHeaders(
    c,
    `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  if (policy.noReferrer) c.header('referrer-policy', 'no-referrer');
}

/** The headers every page of ours sends, with its own content security policy. */
export function pageSecurityHeaders(c: Ctx, csp: string) {
  c.header('content-security-policy', csp);
  c.header('x-frame-options', 'DENY');
  c.header('x-content-type-options', 'nosniff');
  c.header('referrer-policy', 'same-origin');
  c.header('cache-control', 'no-store');
}

/**
 * Where to go after signing in (`next`): a path on this site only, parsed against the
 * request's own origin (no open redirect); anything else goes to the sign-in page, which
 * shows who is signed in.
 */
export const safeNext = (c: Ctx, value: unknown): string => sameOriginPath(value, new URL(c.req.url).origin) ?? '/auth/sign-in';

/** Sends the browser to sign in, then back to `returnTo` (a path here: `safeNext` checks it on the way back). */
export const signInThenReturn = (c: Ctx, returnTo: string) => c.redirect(`/auth/sign-in?next=${encodeURIComponent(returnTo)}`, 302);

export const newNonce = () => randomToken(16);

/** The signed-in person acting in another of their workspaces, or undefined if not a member. */
export async function asMemberOf(db: GlobalDb, principal: Principal, workspaceId: string): Promise<Principal | undefined> {
  const [member] = await db
    .select({ role: members.role })
    .from(members)
    .where(and(eq(members.userId, principal.userId), eq(members.workspaceId, workspaceId)))
    .limit(1);
  return member ? { ...principal, workspaceId, role: member.role } : undefined;
}

/** Answers a page with the headers above; `body` gets the CSP nonce for its stylesheet. */
export function renderPage(c: Ctx, status: ContentfulStatusCode, body: (nonce: string) => JSX.Element, policy: PagePolicy = {}) {
  const nonce = newNonce();
  pageHeaders(c, nonce, policy);
  return c.html(body(nonce), status);
}
