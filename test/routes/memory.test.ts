import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { shardD1 } from '../helpers/shards';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MAX_CHARS = 524288;

const put = (user: TestUser, content: unknown, headers?: Record<string, string>) =>
  call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content }, headers });

const read = (user: TestUser, headers?: Record<string, string>) => call('/api/v1/memory', { token: user.token, headers });

const memoryRow = async (workspaceId: string) =>
  (await shardD1(workspaceId)).prepare('SELECT * FROM memory WHERE workspace_id = ?').bind(workspaceId).first<Record<string, unknown>>();

describe('GET /api/v1/memory', () => {
  it('answers an empty document with updatedAt null for a new workspace', async () => {
    const user = await signUp();
    const res = await read(user);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ content: '', updatedAt: null });
    expect(await memoryRow(user.workspaceId)).toBeNull();
  });

  it('answers 401 UNAUTHORIZED without a usable credential', async () => {
    expectError(await call('/api/v1/memory'), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/memory', { apiKey: 'sk_live_garbage' }), 401, 'UNAUTHORIZED');
  });
});

describe('PUT /api/v1/memory', () => {
  it('stores the document and answers it with updatedAt; GET then returns it', async () => {
    const user = await signUp();
    const res = await put(user, 'Project: Apollo');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ content: 'Project: Apollo', updatedAt: expect.stringMatching(ISO) });

    const got = await read(user);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);

    const row = await memoryRow(user.workspaceId);
    expect(row).toMatchObject({ content: 'Project: Apollo', updated_by: user.user.id });
  });

  it('replaces the whole document', async () => {
    const user = await signUp();
    const first = await put(user, 'first line\nsecond line\nthird line');
    const second = await put(user, 'only this');
    expect(second.status).toBe(200);
    expect(second.body.content).toBe('only this');
    expect(Date.parse(second.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(first.body.updatedAt));
    expect((await read(user)).body).toEqual(second.body);
  });

  it('accepts an empty string, clearing the document', async () => {
    const user = await signUp();
    await put(user, 'something');
    const res = await put(user, '');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ content: '', updatedAt: expect.stringMatching(ISO) });
    expect((await read(user)).body.content).toBe('');
  });

  it(`accepts exactly ${MAX_CHARS} characters`, async () => {
    const user = await signUp();
    const content = 'x'.repeat(MAX_CHARS);
    const res = await put(user, content);
    expect(res.status).toBe(200);
    expect((await read(user)).body.content).toBe(content);
  });

  it('round-trips Unicode exactly: emoji, right-to-left text, combining marks, astral characters', async () => {
    const user = await signUp();
    const content = [
      'Notes 📝 👩🏽‍💻 🇯🇵 ❤️',
      'עברית: שלום עולם',
      'العربية: مرحبا بالعالم \u200f(RLM)\u200e',
      'e\u0301 vs é; Å; ﬁ ligature',
      '中文 日本語 한국어',
      '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚 𐍈',
      'tabs\tand\r\nCRLF and "quotes" \\ backslash',
      '---',
    ].join('\n\n');
    const res = await put(user, content);
    expect(res.status).toBe(200);
    expect(res.body.content).toBe(content);
    expect((await read(user)).body.content).toBe(content);
    expect((await memoryRow(user.workspaceId))!.content).toBe(content);
  });

  it.each([
    ['a missing content', {}, 'content', 'invalid_type'],
    ['a number', { content: 42 }, 'content', 'invalid_type'],
    ['null', { content: null }, 'content', 'invalid_type'],
    ['an array', { content: ['a'] }, 'content', 'invalid_type'],
    [`more than ${MAX_CHARS} characters`, { content: 'x'.repeat(MAX_CHARS + 1) }, 'content', 'too_big'],
  ])('rejects %s with 400 naming the field, keeping the document', async (_label, body, field, rule) => {
    const user = await signUp();
    const kept = await put(user, 'keep me');
    const error = expectError(await call('/api/v1/memory', { method: 'PUT', token: user.token, body }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field, rule });
    expect((await read(user)).body).toEqual(kept.body);
  });

  it('rejects a malformed JSON body with 400 field body rule json, keeping the document', async () => {
    const user = await signUp();
    const kept = await put(user, 'keep me');
    const error = expectError(await call('/api/v1/memory', { method: 'PUT', token: user.token, rawBody: '{"content": "unterminated' }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'json' });
    expect((await read(user)).body).toEqual(kept.body);
  });

  it('answers 401 UNAUTHORIZED without a credential and changes nothing', async () => {
    const user = await signUp();
    await put(user, 'mine');
    expectError(await call('/api/v1/memory', { method: 'PUT', body: { content: 'x' } }), 401, 'UNAUTHORIZED');
    expect((await read(user)).body.content).toBe('mine');
  });
});

describe('memory isolation between workspaces', () => {
  it("gives each user's workspace its own document", async () => {
    const a = await signUp();
    const b = await signUp();
    await put(a, 'A only');
    expect((await read(b)).body).toEqual({ content: '', updatedAt: null });
    await put(b, 'B only');
    expect((await read(a)).body.content).toBe('A only');
    expect((await read(b)).body.content).toBe('B only');
  });

  it("lets a key bound to workspace A read and write A's document", async () => {
    const a = await signUp();
    await put(a, 'A only');
    const key = await createKey(a, ['memory:read', 'memory:write']);
    expect((await call('/api/v1/memory', { apiKey: key.key })).body.content).toBe('A only');

    const written = await call('/api/v1/memory', { method: 'PUT', apiKey: key.key, body: { content: 'by key' } });
    expect(written.status).toBe(200);
    expect((await read(a)).body.content).toBe('by key');
    expect((await memoryRow(a.workspaceId))!.updated_by).toBe(a.user.id);
  });

  it("keeps a key on its own workspace's document even when x-workspace-id names another", async () => {
    const user = await signUp();
    const team = await call('/api/v1/workspaces', {
      token: user.token,
      body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` },
    });
    expect(team.status).toBe(201);
    const inTeam = { 'x-workspace-id': team.body.id };

    await put(user, 'personal notes');
    await put(user, 'team notes', inTeam);
    expect((await read(user, inTeam)).body.content).toBe('team notes');
    expect((await read(user)).body.content).toBe('personal notes');

    const key = await createKey(user, ['memory:read']); // bound to the personal workspace
    const res = await call('/api/v1/memory', { apiKey: key.key, headers: inTeam });
    expect(res.status).toBe(200);
    expect(res.body.content).toBe('personal notes');
  });
});

describe('memory scopes', () => {
  it('lets a key with memory:read read but not write, naming memory:write', async () => {
    const user = await signUp();
    await put(user, 'original');
    const reader = await createKey(user, ['memory:read']);

    const got = await call('/api/v1/memory', { apiKey: reader.key });
    expect(got.status).toBe(200);
    expect(got.body.content).toBe('original');

    const denied = expectError(await call('/api/v1/memory', { method: 'PUT', apiKey: reader.key, body: { content: 'overwritten' } }), 403, 'FORBIDDEN');
    expect(denied.details).toEqual({ scope: 'memory:write' });
    expect(denied.message).toContain('memory:write');
    expect((await read(user)).body.content).toBe('original');
  });

  it('refuses a key without memory:read, naming memory:read', async () => {
    const user = await signUp();
    const key = await createKey(user); // profile:read, agent:list
    const denied = expectError(await call('/api/v1/memory', { apiKey: key.key }), 403, 'FORBIDDEN');
    expect(denied.details).toEqual({ scope: 'memory:read' });
    expect(denied.message).toContain('memory:read');

    const writer = await createKey(user, ['memory:write']);
    expect((await call('/api/v1/memory', { method: 'PUT', apiKey: writer.key, body: { content: 'x' } })).status).toBe(200);
    expect(expectError(await call('/api/v1/memory', { apiKey: writer.key }), 403, 'FORBIDDEN').details).toEqual({
      scope: 'memory:read',
    });
  });

  it('lets a * key read and write', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    expect((await call('/api/v1/memory', { method: 'PUT', apiKey: key.key, body: { content: 'wild' } })).status).toBe(200);
    expect((await call('/api/v1/memory', { apiKey: key.key })).body.content).toBe('wild');
  });
});
