import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { SLOT_LEASE_MS } from '../../workers/lib/stream-slots';
import { MEMORY_SEPARATOR } from '../../workers/services/memory';
import { BASE, call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { callFollowed } from '../helpers/mcp';
import { tokensFor } from '../helpers/oauth';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

/**
 * Limits that count what they should: every call of an MCP batch against the rate limit,
 * `/api/events` like any credentialed route (rate limit, token audience), open event streams
 * and WebSockets per credential (signed URLs count toward the credential that asked for them),
 * and working memory's cap in UTF-8 bytes for writes and appends alike.
 */

afterEach(() => resetClock());

/** The documented caps (docs/api-conventions.md, docs/behaviour.md). */
const CAP = 20;
const MAX_MEMORY_BYTES = 524_288;

/** Pins the clock just inside a fresh rate-limit window, so a test's requests cannot straddle two. */
const freshWindow = () => advanceClock(60_000 - (now() % 60_000) + 1);

const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));

async function until(check: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

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

describe('open streams per credential', () => {
  it(`holds at most ${CAP} event streams open at once; closing one frees its slot`, async () => {
    const user = await signUp();
    const { key } = await createKey(user, ['channel:read']);
    const streams = await Promise.all(Array.from({ length: CAP }, () => openEvents(`?apiKey=${key}`)));
    expect(streams.map((s) => s.status)).toEqual(Array(CAP).fill(200));
    const refused = await openEvents(`?apiKey=${key}`);
    expect(refused.status).toBe(429);
    const error = (await refused.json<any>()).error;
    expect(error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: CAP, kind: 'sse' } });
    expect(error.message).toContain(`${CAP} open event streams`);
    // Another credential of the same user has slots of its own.
    const other = await createKey(user, ['channel:read']);
    const theirs = await openEvents(`?apiKey=${other.key}`);
    expect(theirs.status).toBe(200);

    await streams.pop()!.body!.cancel();
    let reopened: Response | undefined;
    await until(async () => {
      const res = await openEvents(`?apiKey=${key}`);
      if (res.status === 200) reopened = res;
      else await res.body?.cancel();
      return res.status === 200;
    }, 'a freed slot');
    await Promise.all([...streams, reopened!, theirs].map((s) => s.body!.cancel()));
  });

  it('counts the streams of a signed URL toward the credential that asked for it', async () => {
    const user = await signUp();
    const skill = { name: 'Held', description: 'Stream target.', category: 'productivity', prompt: '# Held\nEcho.' };
    expect((await call('/api/v1/skills/held-skill', { method: 'PUT', token: user.token, body: skill })).status).toBe(200);
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'held-skill', input: 'hello' } });
    const { sseUrl } = (await call(`/api/v1/executions/${created.body.id}/stream-token`, { token: user.token })).body;
    const url = new URL(sseUrl);
    const streams = await Promise.all(Array.from({ length: CAP }, () => openEvents('', { 'x-auth-token': user.token })));
    expect(streams.every((s) => s.status === 200)).toBe(true);
    const refused = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`);
    expect(refused.status).toBe(429);
    expect((await refused.json<any>()).error.code).toBe('RATE_LIMITED');
    await streams.pop()!.body!.cancel();
    await until(async () => {
      const res = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`);
      await res.body?.cancel();
      return res.status !== 429;
    }, 'a freed slot');
    await Promise.all(streams.map((s) => s.body!.cancel()));
  });

  it(`holds at most ${CAP} control-plane WebSockets open at once; closing one frees its slot`, async () => {
    const user = await signUp();
    const key = await createKey(user, ['channel:read']);
    const connect = async () => {
      const { url } = (await call('/api/v1/events/subscribe-url', { apiKey: key.key })).body;
      const u = new URL(url);
      return exports.default.fetch(`${BASE}${u.pathname}${u.search}`, { headers: { upgrade: 'websocket' } });
    };
    const sockets: WebSocket[] = [];
    for (let i = 0; i < CAP; i++) {
      const res = await connect();
      expect(res.status).toBe(101);
      res.webSocket!.accept();
      sockets.push(res.webSocket!);
    }
    const refused = await connect();
    expect(refused.status).toBe(429);
    expect(refused.webSocket).toBeNull();
    const error = (await refused.json<any>()).error;
    expect(error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: CAP, kind: 'websocket' } });
    // A session of the same user is another credential.
    const { url } = (await call('/api/v1/events/subscribe-url', { token: user.token })).body;
    const session = await exports.default.fetch(`${BASE}${new URL(url).pathname}${new URL(url).search}`, { headers: { upgrade: 'websocket' } });
    expect(session.status).toBe(101);
    session.webSocket!.accept();

    sockets.pop()!.close(1000, 'done');
    let reopened: WebSocket | undefined;
    await until(async () => {
      const res = await connect();
      if (res.status === 101) {
        reopened = res.webSocket!;
        reopened.accept();
      }
      return res.status === 101;
    }, 'a freed slot');
    for (const ws of [...sockets, reopened!, session.webSocket!]) ws.close(1000, 'done');
  });

  it('counts workflow run streams and followed MCP calls as event streams', async () => {
    const user = await signUp();
    const { key } = await createKey(user, ['*']);
    const streams = await Promise.all(Array.from({ length: CAP }, () => openEvents(`?apiKey=${key}`)));
    expect(streams.every((s) => s.status === 200)).toBe(true);
    expectError(await call('/api/v1/workflows/runs/run_nope/events', { apiKey: key }), 429, 'RATE_LIMITED');
    expectError(await call('/api/v1/workflows/wf_nope/stream', { apiKey: key, body: { inputData: {} } }), 429, 'RATE_LIMITED');
    const followed = await callFollowed(key, 'execute-skill', { slug: 'notes', input: 'x' });
    expect(followed.status).toBe(429);
    expect((await followed.json<any>()).error.code).toBe('RATE_LIMITED');
    await Promise.all(streams.map((s) => s.body!.cancel()));
  });

  it('gives a slot back when a stream the service writes itself ends, and when it never opens', async () => {
    const user = await signUp();
    await install(user, 'quick', definition('quick', [mapping('done', { ok: { value: true } })]));
    const runId = await launch(user, 'quick');
    await waitForRun(user, runId, ['success']);
    const streams = await Promise.all(Array.from({ length: CAP - 1 }, () => openEvents('', { 'x-auth-token': user.token })));
    expect(streams.every((s) => s.status === 200)).toBe(true);
    for (let i = 0; i < 3; i++) {
      // A finished run's stream sends its snapshot and closes; a missing run is 404 before any stream.
      const ended = await call(`/api/v1/workflows/runs/${runId}/events`, { token: user.token });
      expect(ended.status).toBe(200);
      expectError(await call('/api/v1/workflows/runs/run_nope/events', { token: user.token }), 404, 'NOT_FOUND');
    }
    let last: Response | undefined;
    await until(async () => {
      last = await openEvents('', { 'x-auth-token': user.token });
      if (last.status !== 200) await last.body?.cancel();
      return last.status === 200;
    }, 'the slots given back');
    expect((await openEvents('', { 'x-auth-token': user.token })).status).toBe(429);
    await Promise.all([...streams, last!].map((s) => s.body!.cancel()));
  });

  it('frees the slot of a holder that stopped renewing after one lease', async () => {
    const slots = env.RATE_LIMITER.getByName(`streams:sse:test-${crypto.randomUUID()}`);
    const held = [await slots.takeSlot(2, SLOT_LEASE_MS), await slots.takeSlot(2, SLOT_LEASE_MS)];
    expect(held.every((lease) => typeof lease === 'string')).toBe(true);
    expect(await slots.takeSlot(2, SLOT_LEASE_MS)).toBeNull();
    advanceClock(SLOT_LEASE_MS / 2);
    expect(await slots.renewSlot(held[0]!, SLOT_LEASE_MS)).toBe(true);
    advanceClock(SLOT_LEASE_MS / 2);
    // The renewed lease still holds; the other expired, so its slot is free.
    expect(await slots.takeSlot(2, SLOT_LEASE_MS)).toEqual(expect.any(String));
    expect(await slots.takeSlot(2, SLOT_LEASE_MS)).toBeNull();
    expect(await slots.renewSlot(held[1]!, SLOT_LEASE_MS)).toBe(false);
    await slots.releaseSlot(held[0]!);
    expect(await slots.takeSlot(2, SLOT_LEASE_MS)).toEqual(expect.any(String));
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
