import { exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { MEMORY_SEPARATOR } from '../../workers/services/memory';
import { BASE, call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { tokensFor } from '../helpers/oauth';

/**
 * Limits that count what they should: every call of an MCP batch against the rate limit,
 * `/api/events` like any credentialed route (rate limit, token audience), and working memory's
 * cap in UTF-8 bytes for writes and appends alike.
 */

afterEach(() => resetClock());

/** The documented cap (docs/behaviour.md). */
const MAX_MEMORY_BYTES = 524_288;

/** Pins the clock just inside a fresh rate-limit window, so a test's requests cannot straddle two. */
const freshWindow = () => advanceClock(60_000 - (now() % 60_000) + 1);

const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));

describe('MCP batches (protocol 2025-03-26)', () => {
  const batch = (key: string, size: number) =>
    exports.default.fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': key, 'mcp-protocol-version': '2025-03-26' },
      body: JSON.stringify(Array.from({ length: size }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' }))),
    });

  it('count each call against the rate limit', async () => {
    const { key } = await createKey(await signUp(), ['*']);
    freshWindow();
    const res = await batch(key, 5);
    expect(res.status).toBe(200);
    expect(await res.json()).toHaveLength(5);
    expect(remaining(res)).toBe(95);
    expect(remaining(await call('/api/v1/profile', { apiKey: key }))).toBe(94);
  });

  it('are refused whole, counting nothing, when they do not fit in what is left', async () => {
    const { key } = await createKey(await signUp(), ['*']);
    freshWindow();
    for (let i = 0; i < 5; i++) expect((await batch(key, 19)).status).toBe(200);
    const refused = await batch(key, 6);
    const error = (await refused.json<any>()).error;
    expect(refused.status).toBe(429);
    expect(error.code).toBe('RATE_LIMITED');
    expect(error.message).toContain('batch of 6');
    expect(remaining(refused)).toBe(5);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const fits = await batch(key, 5);
    expect(fits.status).toBe(200);
    expect(remaining(fits)).toBe(0);
  });

  it('carry at most 20 messages', async () => {
    const { key } = await createKey(await signUp(), ['*']);
    freshWindow();
    const refused = await batch(key, 21);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('at most 20') } });
    expect(remaining(refused)).toBe(99);
  });
});

const openEvents = (query: string, headers: Record<string, string> = {}) => exports.default.fetch(`${BASE}/api/events${query}`, { headers });

describe('GET /api/events', () => {
  it('refuses an access token issued for /mcp with 401, as /api/v1 does', async () => {
    const { tokens } = await tokensFor('channel:read profile:read', { query: { resource: `${BASE}/mcp` } });
    const authorization = `Bearer ${tokens.access_token}`;
    expectError(await call('/api/v1/profile', { headers: { authorization } }), 401, 'UNAUTHORIZED');
    const res = await openEvents('', { authorization });
    expect(res.status).toBe(401);
    expect((await res.json<any>()).error.code).toBe('UNAUTHORIZED');
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="This access token was issued for ${BASE}/mcp, not for this endpoint"`,
    );
  });

  it('counts against the credential’s rate limit, with its headers, and is refused past it', async () => {
    const { key } = await createKey(await signUp(), ['*']);
    freshWindow();
    const open = await openEvents(`?apiKey=${key}`);
    expect(open.status).toBe(200);
    expect(open.headers.get('x-ratelimit-limit')).toBe('100');
    expect(remaining(open)).toBe(99);
    await open.body!.cancel();
    for (let i = 1; i < 100; i += 11) await Promise.all(Array.from({ length: Math.min(11, 100 - i) }, () => call('/api/v1/profile', { apiKey: key })));
    const limited = await openEvents('', { 'x-api-key': key });
    expect(limited.status).toBe(429);
    expect((await limited.json<any>()).error.code).toBe('RATE_LIMITED');
  });
});

describe('working memory’s cap', () => {
  const put = (user: TestUser, content: string, mode?: 'append') =>
    call('/api/v1/memory', { method: 'PUT', token: user.token, body: mode ? { content, mode } : { content } });
  const bytes = (text: string) => new TextEncoder().encode(text).byteLength;
  const stored = async (user: TestUser) => (await call('/api/v1/memory', { token: user.token })).body.content as string;

  it('is the same number of UTF-8 bytes for a write and for appends, multi-byte characters included', async () => {
    const user = await signUp();
    // 4 bytes each (2 UTF-16 units, 1 character to SQLite): the whole cap in one entry.
    const emoji = '😀'.repeat(MAX_MEMORY_BYTES / 4);
    expect((await put(user, emoji, 'append')).status).toBe(200);
    const appended = expectError(await put(user, 'x', 'append'), 400, 'INVALID_INPUT');
    const written = expectError(await put(user, `${emoji}${MEMORY_SEPARATOR}x`), 400, 'INVALID_INPUT');
    expect(appended).toEqual(written);
    expect(appended.details).toMatchObject({ field: 'content', rule: 'too_big', limit: MAX_MEMORY_BYTES });
    expect(await stored(user)).toBe(emoji);

    // Two-byte characters: half the cap's count of them is already over it, for a write as for an append.
    const accents = 'é'.repeat(MAX_MEMORY_BYTES / 2 + 1);
    expect(expectError(await put(user, accents), 400, 'INVALID_INPUT')).toEqual(written);
    expect(expectError(await put(user, accents, 'append'), 400, 'INVALID_INPUT')).toEqual(written);
  });

  it('lets appends fill the document to exactly the cap, separators counted, and no further', async () => {
    const user = await signUp();
    const start = 'x'.repeat(MAX_MEMORY_BYTES - bytes(MEMORY_SEPARATOR) - 4 - bytes(MEMORY_SEPARATOR) - 1);
    expect((await put(user, start)).status).toBe(200);
    expect((await put(user, '😀', 'append')).status).toBe(200);
    expect((await put(user, 'é', 'append')).status).toBe(400);
    expect((await put(user, 'y', 'append')).status).toBe(200);
    expect(bytes(await stored(user))).toBe(MAX_MEMORY_BYTES);
    expect((await put(user, 'z', 'append')).status).toBe(400);
  });
});
