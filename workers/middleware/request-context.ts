import { createMiddleware } from 'hono/factory';
import { openDb } from '../lib/db';
import type { AppEnv } from '../env';
import { invalidInput } from '../errors';

/** A caller's request id is kept if it is short and printable; otherwise we make one. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** An `x-agent-slug` worth recording: a short slug; anything else is ignored. */
const AGENT_SLUG = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const agentSlugOf = (value: string | undefined) => (value !== undefined && AGENT_SLUG.test(value.trim()) ? value.trim() : null);

/**
 * D1 read replication: a client that sends back the bookmark of its last answer reads at least
 * that fresh, even from a replica; without one, reads may go to any replica and writes (any
 * method but GET and HEAD) start at the primary. Every answer carries the session's bookmark.
 */
export const BOOKMARK_HEADER = 'x-d1-bookmark';
const BOOKMARK = /^[0-9a-f]{1,64}(-[0-9a-f]{1,64}){0,7}$/i;

/** Spec 9: the latest (and so far only) dated API version. */
export const CURRENT_API_VERSION = '2026-11-01';
const VERSION_DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A real date: `2026-02-30` parses (and rolls over) and `2026-13-01` does not, so compare back. */
const isCalendarDate = (value: string) => {
  if (!VERSION_DATE.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
};

/**
 * First middleware: request id (accepted or generated, always echoed), the database handle,
 * the request's origin for the audit log, and the `service-version` check.
 */
export const requestContext = createMiddleware<AppEnv>(async (c, next) => {
  const supplied = c.req.header('x-request-id');
  const requestId = supplied !== undefined && REQUEST_ID.test(supplied) ? supplied : crypto.randomUUID();
  c.set('requestId', requestId);
  c.header('x-request-id', requestId);
  c.header('service-version', CURRENT_API_VERSION);
  const bookmark = c.req.header(BOOKMARK_HEADER);
  if (bookmark !== undefined && !BOOKMARK.test(bookmark)) {
    throw invalidInput(BOOKMARK_HEADER, 'format', `${BOOKMARK_HEADER} must be a bookmark from an earlier answer's ${BOOKMARK_HEADER} header`);
  }
  const session = c.env.DB.withSession(bookmark ?? (c.req.method === 'GET' || c.req.method === 'HEAD' ? 'first-unconstrained' : 'first-primary'));
  // drizzle's D1 driver needs only prepare and batch, which a session has.
  c.set('db', openDb(session));
  c.set('origin', {
    requestId,
    ip: c.req.header('cf-connecting-ip') ?? null,
    userAgent: c.req.header('user-agent')?.slice(0, 512) ?? null,
    agentSlug: agentSlugOf(c.req.header('x-agent-slug')),
  });
  c.set('principal', undefined);
  const version = c.req.header('service-version');
  if (version !== undefined && !isCalendarDate(version)) {
    throw invalidInput('service-version', 'date', 'service-version must be a date in the form YYYY-MM-DD');
  }
  await next();
  const latest = session.getBookmark();
  if (latest !== null) c.header(BOOKMARK_HEADER, latest);
});
