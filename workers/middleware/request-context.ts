import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { openGlobal, openShard, refusingWrites, shardBinding } from '../lib/db';
import type { AppEnv } from '../env';
import { invalidInput } from '../errors';
import { traceparentOf } from '../lib/otlp';

/** A caller's request id is kept if it is short and printable; otherwise we make one. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** An `x-agent-slug` worth recording: a short slug; anything else is ignored. */
const AGENT_SLUG = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const agentSlugOf = (value: string | undefined) => (value !== undefined && AGENT_SLUG.test(value.trim()) ? value.trim() : null);

/**
 * D1 read replication, per database: a client that sends back the bookmarks of its last answer
 * reads at least that fresh, even from a replica; without them, reads may go to any replica and
 * writes (any method but GET and HEAD) start at the primary. Every answer carries a bookmark for
 * each database it used, as `global:<bookmark>,shard-<n>:<bookmark>`.
 */
export const BOOKMARK_HEADER = 'x-d1-bookmark';
const BOOKMARK = /^[0-9a-f]{1,64}(-[0-9a-f]{1,64}){0,7}$/i;
const DATABASE_NAME = /^(global|shard-[1-9][0-9]{0,3})$/;

/** The bookmarks of an `x-d1-bookmark` header by database name; undefined if it is malformed. */
function parseBookmarks(header: string): Map<string, string> | undefined {
  const bookmarks = new Map<string, string>();
  for (const entry of header.split(',')) {
    const at = entry.indexOf(':');
    const [name, bookmark] = [entry.slice(0, at).trim(), entry.slice(at + 1).trim()];
    if (at < 0 || !DATABASE_NAME.test(name) || !BOOKMARK.test(bookmark) || bookmarks.has(name) || bookmarks.size >= 8) return undefined;
    bookmarks.set(name, bookmark);
  }
  return bookmarks;
}

const shardName = (shard: number) => `shard-${shard}`;

/** The request's session on `database`: from the client's bookmark for it, else by method. */
function sessionOf(c: Context<AppEnv>, name: string, database: D1Database): D1DatabaseSession {
  const session = database.withSession(
    c.var.bookmarks.get(name) ?? (c.req.method === 'GET' || c.req.method === 'HEAD' ? 'first-unconstrained' : 'first-primary'),
  );
  c.var.sessions.set(name, session);
  return session;
}

/**
 * Opens the principal's shard for this request (`c.var.db`), in its read-replication session;
 * while a move fences the workspace (`fenced`), one that refuses writes.
 */
export function useShard(c: Context<AppEnv>, shard: number, fenced = false): void {
  const session = sessionOf(c, shardName(shard), shardBinding(c.env, shard));
  c.set('db', openShard(fenced ? refusingWrites(session) : session, shard));
}

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
 * First middleware: request id (accepted or generated, always echoed), the global database,
 * the request's origin for the audit log, and the `service-version` check.
 */
export const requestContext = createMiddleware<AppEnv>(async (c, next) => {
  const supplied = c.req.header('x-request-id');
  const requestId = supplied !== undefined && REQUEST_ID.test(supplied) ? supplied : crypto.randomUUID();
  c.set('requestId', requestId);
  c.header('x-request-id', requestId);
  c.header('service-version', CURRENT_API_VERSION);
  const header = c.req.header(BOOKMARK_HEADER);
  const bookmarks = header === undefined ? new Map<string, string>() : parseBookmarks(header);
  if (!bookmarks) {
    throw invalidInput(BOOKMARK_HEADER, 'format', `${BOOKMARK_HEADER} must be the value of an earlier answer's ${BOOKMARK_HEADER} header`);
  }
  c.set('bookmarks', bookmarks);
  c.set('sessions', new Map());
  // drizzle's D1 driver needs only prepare and batch, which a session has.
  c.set('globalDb', openGlobal(sessionOf(c, 'global', c.env.DB)));
  c.set('origin', {
    requestId,
    ip: c.req.header('cf-connecting-ip') ?? null,
    userAgent: c.req.header('user-agent')?.slice(0, 512) ?? null,
    agentSlug: agentSlugOf(c.req.header('x-agent-slug')),
    traceparent: traceparentOf(c.req.header('traceparent')),
  });
  c.set('principal', undefined);
  const version = c.req.header('service-version');
  if (version !== undefined && !isCalendarDate(version)) {
    throw invalidInput('service-version', 'date', 'service-version must be a date in the form YYYY-MM-DD');
  }
  await next();
  // The client's bookmarks of databases this request did not use go back with the new ones, so
  // echoing each answer keeps read-your-writes in every database, not only the last one used.
  const latest = new Map(bookmarks);
  for (const [name, session] of c.var.sessions) {
    const bookmark = session.getBookmark();
    if (bookmark !== null) latest.set(name, bookmark);
  }
  if (latest.size > 0) c.header(BOOKMARK_HEADER, [...latest].map(([name, bookmark]) => `${name}:${bookmark}`).join(','));
});
