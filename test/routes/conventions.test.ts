import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp } from '../helpers/api';

describe('error envelope', () => {
  it('answers unknown routes 404 NOT_FOUND, with or without a credential', async () => {
    const user = await signUp();
    expectError(await call('/api/v1/no-such-thing'), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/no-such-thing', { token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/nowhere'), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/profile', { method: 'PUT', token: user.token, body: {} }), 404, 'NOT_FOUND');
  });

  it('answers malformed JSON with 400 INVALID_INPUT on field body', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/memory', { method: 'PUT', token: user.token, rawBody: '{"content": ' }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'json' });
  });

  it('refuses a JSON body sent under another content type (400 on field content-type) instead of reading it as {}', async () => {
    const user = await signUp();
    const error = expectError(
      await call('/api/v1/memory', { method: 'PUT', token: user.token, rawBody: '{"content": "typed"}', headers: { 'content-type': 'text/plain' } }),
      400,
      'INVALID_INPUT',
    );
    expect(error.details).toMatchObject({ field: 'content-type', rule: 'media_type' });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe('');
    expect(
      (
        await call('/api/v1/memory', {
          method: 'PUT',
          token: user.token,
          rawBody: '{"content": "typed"}',
          headers: { 'content-type': 'application/json; charset=utf-8' },
        })
      ).status,
    ).toBe(200);
  });

  it('names the field and rule of a validation failure, and lists every issue', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/workspaces', { token: user.token, body: { name: 42, slug: 'Bad Slug' } }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'name', rule: 'invalid_type' });
    expect(error.details?.issues.map((i: { field: string }) => i.field)).toEqual(['name', 'slug']);
  });

  it('caps request bodies: over MAX_BODY_BYTES is 413 INVALID_INPUT and nothing is written', async () => {
    const user = await signUp();
    const huge = 'x'.repeat(Number(env.MAX_BODY_BYTES) + 1);
    const error = expectError(await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: huge } }), 413, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'max_size' });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe('');
  });
});

describe('x-request-id', () => {
  it('echoes a caller-supplied id, on success and on error', async () => {
    const user = await signUp();
    const ok = await call('/api/v1/profile', { token: user.token, headers: { 'x-request-id': 'client-req-42' } });
    expect(ok.headers.get('x-request-id')).toBe('client-req-42');
    const failed = await call('/api/v1/profile', { headers: { 'x-request-id': 'client-req-43' } });
    expect(failed.status).toBe(401);
    expect(failed.headers.get('x-request-id')).toBe('client-req-43');
  });

  it('generates one when absent or unusable', async () => {
    const generated = await call('/api/v1/openapi.json');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const replaced = await call('/api/v1/openapi.json', { headers: { 'x-request-id': 'has spaces in it' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('service-version', () => {
  it('accepts a YYYY-MM-DD date and answers with the version applied', async () => {
    const user = await signUp();
    const res = await call('/api/v1/profile', { token: user.token, headers: { 'service-version': '2026-11-01' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('service-version')).toBe('2026-11-01');
  });

  it.each(['2026-13-01', '2026-02-30', '26-11-01', 'latest'])('rejects %s with 400 naming the header', async (version) => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/profile', { token: user.token, headers: { 'service-version': version } }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'service-version', rule: 'date' });
  });
});

/** An `x-d1-bookmark` answer's bookmarks by database (`global`, `shard-<n>`); throws if it is not in that format. */
function bookmarksOf(header: string | null): Map<string, string> {
  expect(header).toMatch(/^(global|shard-[1-9][0-9]*):[0-9a-f]+(-[0-9a-f]+)*(,(global|shard-[1-9][0-9]*):[0-9a-f]+(-[0-9a-f]+)*)*$/i);
  return new Map(header!.split(',').map((entry) => entry.split(':') as [string, string]));
}

describe('x-d1-bookmark (D1 read replication)', () => {
  it('answers a bookmark with every request; a read that sends it back sees the write it came from', async () => {
    const user = await signUp();
    const write = await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'written first' } });
    const bookmark = write.headers.get('x-d1-bookmark');
    expect(bookmarksOf(bookmark).has(`shard-${user.shard}`)).toBe(true);
    const read = await call('/api/v1/memory', { token: user.token, headers: { 'x-d1-bookmark': bookmark! } });
    expect(read.body.content).toBe('written first');
    expect(bookmarksOf(read.headers.get('x-d1-bookmark')).has(`shard-${user.shard}`)).toBe(true);
  });

  it('answers a bookmark of the global database for a write there; a read that sends it back sees the write', async () => {
    const user = await signUp();
    const write = await call('/api/v1/profile', { method: 'PATCH', token: user.token, body: { name: 'Renamed' } });
    expect(write.status).toBe(200);
    const bookmark = write.headers.get('x-d1-bookmark');
    expect(bookmarksOf(bookmark).has('global')).toBe(true);
    const read = await call('/api/v1/profile', { token: user.token, headers: { 'x-d1-bookmark': bookmark! } });
    expect(read.body.name).toBe('Renamed');
  });

  it('hands back the bookmarks of databases a request did not use: a write in one workspace stays visible after a read in another on another shard', async () => {
    const user = await signUp();
    // New workspaces go to the shard with the fewest: one of a few lands on the other shard.
    let other: { id: string; shard: string } | undefined;
    for (let i = 0; i < 6 && !other; i++) {
      const created = await call('/api/v1/workspaces', { token: user.token, body: { name: `Other ${i}`, slug: `other-${crypto.randomUUID().slice(0, 8)}` } });
      const read = await call('/api/v1/memory', { token: user.token, headers: { 'x-workspace-id': created.body.id } });
      const shard = [...bookmarksOf(read.headers.get('x-d1-bookmark')).keys()].find((name) => name.startsWith('shard-'))!;
      if (shard !== `shard-${user.shard}`) other = { id: created.body.id, shard };
    }
    expect(other).toBeDefined();
    const written = await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'kept' } });
    const mine = bookmarksOf(written.headers.get('x-d1-bookmark')).get(`shard-${user.shard}`);
    const elsewhere = await call('/api/v1/memory', {
      token: user.token,
      headers: { 'x-workspace-id': other!.id, 'x-d1-bookmark': written.headers.get('x-d1-bookmark')! },
    });
    const echoed = bookmarksOf(elsewhere.headers.get('x-d1-bookmark'));
    expect(echoed.has(other!.shard)).toBe(true);
    expect(echoed.get(`shard-${user.shard}`)).toBe(mine);
    const read = await call('/api/v1/memory', { token: user.token, headers: { 'x-d1-bookmark': elsewhere.headers.get('x-d1-bookmark')! } });
    expect(read.body.content).toBe('kept');
  });

  it('refuses a malformed bookmark with 400 INVALID_INPUT naming the header, before anything runs', async () => {
    const user = await signUp();
    const error = expectError(
      await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'x' }, headers: { 'x-d1-bookmark': 'not a bookmark' } }),
      400,
      'INVALID_INPUT',
    );
    expect(error.details).toMatchObject({ field: 'x-d1-bookmark', rule: 'format' });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe('');
  });
});

describe('credentials', () => {
  it('answers 401 UNAUTHORIZED without a credential, or with an unknown key or token', async () => {
    expectError(await call('/api/v1/profile'), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/profile', { apiKey: 'sk_live_not-a-real-key' }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/profile', { token: 'not-a-session' }), 401, 'UNAUTHORIZED');
  });

  it('refuses a key missing the route scope with 403 naming the scope', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
    const error = expectError(await call('/api/v1/memory', { apiKey: key.key }), 403, 'FORBIDDEN');
    expect(error.message).toContain('memory:read');
    expect(error.details).toEqual({ scope: 'memory:read' });
  });

  it('lets a legacy * key past every scope check', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    expect((await call('/api/v1/memory', { apiKey: key.key })).status).toBe(200);
    expect((await call('/api/v1/audit-logs', { apiKey: key.key })).status).toBe(200);
  });

  it('refuses an unactivated key on every call', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*'], { pendingActivation: true });
    expect(key.status).toBe('unactivated');
    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/api-keys', { apiKey: key.key }), 403, 'FORBIDDEN');
  });

  it('fails a revoked key on its very next request', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
    expect((await call(`/api/v1/api-keys/${key.id}/revoke`, { method: 'POST', token: user.token })).status).toBe(200);
    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
  });

  it('keeps session-only routes from API keys', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    expectError(await call('/api/v1/invitations/accept', { apiKey: key.key, body: { token: 'x' } }), 403, 'FORBIDDEN');
  });

  it('ignores x-workspace-id for API keys', async () => {
    const owner = await signUp();
    const other = await signUp();
    const key = await createKey(owner, ['*']);
    const res = await call('/api/v1/workspaces/current', { apiKey: key.key, headers: { 'x-workspace-id': other.workspaceId } });
    expect(res.body.id).toBe(owner.workspaceId);
  });

  it('answers 404 for an x-workspace-id the session user is not a member of', async () => {
    const user = await signUp();
    const stranger = await signUp();
    expectError(await call('/api/v1/profile', { token: user.token, headers: { 'x-workspace-id': stranger.workspaceId } }), 404, 'NOT_FOUND');
  });
});
