import { cors } from 'hono/cors';

/** Request headers a client on another origin may send: the credentials and the API's own headers. */
const REQUEST_HEADERS = [
  'content-type',
  'x-api-key',
  'x-auth-token',
  'authorization',
  'x-workspace-id',
  'x-permission-grant',
  'idempotency-key',
  'service-version',
  'x-request-id',
  'x-agent-slug',
  'x-d1-bookmark',
];

/** Response headers clients read: rate limits, retries, request ids, replays, challenges, versions, file names, read-your-writes bookmarks. */
const RESPONSE_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'retry-after',
  'x-request-id',
  'idempotency-replayed',
  'www-authenticate',
  'service-version',
  'content-disposition',
  'x-d1-bookmark',
];

/** Browsers cache a preflight this long (seconds). */
const PREFLIGHT_MAX_AGE = 600;

/**
 * `/api/v1` for pages on any origin: its credentials travel in headers, never in the page's
 * cookie, so any origin may call it and no response allows credentials (a cross-origin page
 * can never ride on a signed-in person's cookie). Preflights answer 204 before authentication.
 */
export const apiCors = cors({
  origin: '*',
  allowHeaders: REQUEST_HEADERS,
  exposeHeaders: RESPONSE_HEADERS,
  maxAge: PREFLIGHT_MAX_AGE,
});

/**
 * Streams whose credential is in the URL (the signed execution stream, `/api/events?apiKey=`):
 * an `EventSource` on any origin may read them.
 */
export const urlCredentialCors = cors({ origin: '*', allowMethods: ['GET'], exposeHeaders: ['x-request-id'], maxAge: PREFLIGHT_MAX_AGE });
