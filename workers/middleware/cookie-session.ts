import { createMiddleware } from 'hono/factory';
import { CSRF_HEADER, csrfValid, sessionCookie } from '../auth/web';
import type { AppEnv } from '../env';
import { forbidden } from '../errors';

/** The credentials a caller names in headers; any one of them wins over the cookie. */
const HEADER_CREDENTIALS = ['x-api-key', 'x-auth-token', 'authorization'];

/**
 * The browser's session cookie on `/api/v1`, for the console (same origin only). A cookie rides
 * along on requests another site makes the browser send, so it counts only with the page's CSRF
 * token in `x-csrf-token` (the double-submit value the console page was rendered with; another
 * site can neither read it nor, without a CORS preflight this API refuses credentials to, send
 * a custom header) and, when the browser names one, our own Origin. A wrong token is 403; no
 * token means the cookie is ignored (the request has no credential). Accepted, the cookie's token
 * goes on as `x-auth-token`: from here on it is an ordinary session request.
 */
export const cookieSession = createMiddleware<AppEnv>(async (c, next) => {
  const token = sessionCookie(c);
  const submitted = c.req.header(CSRF_HEADER);
  if (!token || submitted === undefined || HEADER_CREDENTIALS.some((h) => c.req.header(h) !== undefined)) return next();
  if (!csrfValid(c, submitted)) throw forbidden('The CSRF token or Origin of this cookie-authenticated request is not valid; reload the page');
  const headers = new Headers(c.req.raw.headers);
  headers.set('x-auth-token', token);
  c.req.raw = new Request(c.req.raw, { headers });
  await next();
});
