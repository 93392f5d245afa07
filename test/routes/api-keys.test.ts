import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp } from '../helpers/api';

const KEY_FORMAT = /^sk_live_[A-Za-z0-9_-]{43}$/;

describe('POST /api/v1/api-keys', () => {
  it('creates an active key with the default scopes, shown once, that authenticates', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', { token: user.token, body: { name: 'CI bot' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^key_\d+$/),
      name: 'CI bot',
      key: expect.stringMatching(KEY_FORMAT),
      keyPreview: expect.stringMatching(/^sk_live_.{4}….{4}$/),
      scopes: ['profile:read', 'agent:list'],
      status: 'active',
      workspaceId: user.workspaceId,
      createdAt: expect.any(String),
      revokedAt: null,
    });
    const profile = await call('/api/v1/profile', { apiKey: res.body.key });
    expect(profile.status).toBe(200);
    expect(profile.body.credential).toEqual({ type: 'api_key', apiKeyId: res.body.id });
    expect(profile.body.scopes).toEqual(['profile:read', 'agent:list']);
  });

  it('stores only a hash of the key', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const row = await env.DB.prepare('SELECT * FROM api_keys WHERE id = ?').bind(Number(key.id.slice(4))).first();
    expect(row).not.toBeNull();
    expect(JSON.stringify(row)).not.toContain(key.key);
    expect(String(row!.key_hash)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts named and connector scopes, and rejects unknown ones naming the field', async () => {
    const user = await signUp();
    const ok = await call('/api/v1/api-keys', {
      token: user.token,
      body: { name: 'k', scopes: ['memory:read', 'connector:mail:read', 'memory:read'] },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.scopes).toEqual(['memory:read', 'connector:mail:read']);
    const bad = expectError(
      await call('/api/v1/api-keys', { token: user.token, body: { name: 'k', scopes: ['memory:read', 'nope:read'] } }),
      400,
      'INVALID_INPUT',
    );
    expect(bad.details?.field).toBe('scopes.1');
    expectError(await call('/api/v1/api-keys', { token: user.token, body: { name: '' } }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/api-keys', { token: user.token, body: { name: 'k', scopes: [] } }), 400, 'INVALID_INPUT');
  });

  it('starts a key unactivated on request; it is refused everywhere', async () => {
    const user = await signUp();
    const key = await createKey(user, ['memory:read'], { pendingActivation: true });
    expect(key.status).toBe('unactivated');
    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/memory', { apiKey: key.key }), 403, 'FORBIDDEN');
  });

  it('lets a key grant only a subset of its own scopes', async () => {
    const user = await signUp();
    const parent = await createKey(user, ['profile:read', 'profile:write', 'agent:list']);
    const child = await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'child', scopes: ['profile:read'] } });
    expect(child.status).toBe(201);
    expect(child.body.workspaceId).toBe(user.workspaceId);

    const wider = expectError(
      await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'wider', scopes: ['memory:read'] } }),
      403,
      'FORBIDDEN',
    );
    expect(wider.details).toEqual({ scope: 'memory:read' });
    expectError(await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'all', scopes: ['*'] } }), 403, 'FORBIDDEN');
  });

  it('lets a * key grant anything, and refuses keys without profile:write', async () => {
    const user = await signUp();
    const legacy = await createKey(user, ['*']);
    const any = await call('/api/v1/api-keys', { apiKey: legacy.key, body: { name: 'any', scopes: ['*'] } });
    expect(any.status).toBe(201);
    const reader = await createKey(user, ['profile:read']);
    const error = expectError(await call('/api/v1/api-keys', { apiKey: reader.key, body: { name: 'x' } }), 403, 'FORBIDDEN');
    expect(error.message).toContain('profile:write');
  });

  it('needs a credential', async () => {
    expectError(await call('/api/v1/api-keys', { body: { name: 'x' } }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/api-keys', { apiKey: 'sk_live_garbage', body: { name: 'x' } }), 401, 'UNAUTHORIZED');
  });
});

describe('POST /api/v1/api-keys with idempotency-key', () => {
  it('replays the first answer, key included, and creates one key', async () => {
    const user = await signUp();
    const send = () =>
      call('/api/v1/api-keys', { token: user.token, headers: { 'idempotency-key': 'create-bot-1' }, body: { name: 'bot' } });
    const first = await send();
    const retry = await send();
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    const list = await call('/api/v1/api-keys', { token: user.token });
    expect(list.body.data.filter((k: { name: string }) => k.name === 'bot')).toHaveLength(1);
  });

  it('refuses the same key with a different body, and scopes keys per workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    const headers = { 'idempotency-key': 'shared-key' };
    expect((await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'one' } })).status).toBe(201);
    expectError(await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'two' } }), 409, 'CONFLICT');
    const elsewhere = await call('/api/v1/api-keys', { token: other.token, headers, body: { name: 'one' } });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.headers.get('idempotency-replayed')).toBeNull();
    expect(elsewhere.body.workspaceId).toBe(other.workspaceId);
  });

  it('replays a validation failure as it was, and rejects an unusable idempotency-key', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'bad-body' };
    const first = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: '' } });
    const again = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: '' } });
    expectError(first, 400, 'INVALID_INPUT');
    expectError(again, 400, 'INVALID_INPUT');
    expect(again.headers.get('idempotency-replayed')).toBe('true');

    const error = expectError(
      await call('/api/v1/api-keys', { token: user.token, headers: { 'idempotency-key': 'x'.repeat(300) }, body: { name: 'k' } }),
      400,
      'INVALID_INPUT',
    );
    expect(error.details?.field).toBe('idempotency-key');
  });
});

describe('GET /api/v1/api-keys', () => {
  it('lists the caller’s keys newest first, never with the key, in cursor pages', async () => {
    const user = await signUp();
    const keys = [await createKey(user), await createKey(user), await createKey(user)];
    const all = await call('/api/v1/api-keys', { token: user.token });
    expect(all.status).toBe(200);
    expect(all.body.data.map((k: { id: string }) => k.id)).toEqual(keys.map((k) => k.id).reverse());
    expect(JSON.stringify(all.body)).not.toContain('"key":');
    for (const k of keys) expect(JSON.stringify(all.body)).not.toContain(k.key);

    const page1 = await call('/api/v1/api-keys?limit=2', { token: user.token });
    expect(page1.body).toMatchObject({ first_id: keys[2]!.id, last_id: keys[1]!.id, has_more: true });
    const page2 = await call(`/api/v1/api-keys?limit=2&after_id=${page1.body.last_id}`, { token: user.token });
    expect(page2.body).toMatchObject({ data: [{ id: keys[0]!.id }], has_more: false });
    const back = await call(`/api/v1/api-keys?limit=2&before_id=${keys[0]!.id}`, { token: user.token });
    expect(back.body.data.map((k: { id: string }) => k.id)).toEqual([keys[2]!.id, keys[1]!.id]);

    expect(expectError(await call('/api/v1/api-keys?limit=101', { token: user.token }), 400, 'INVALID_INPUT').details?.field).toBe('limit');
  });

  it('shows nothing of another workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    await createKey(other);
    expect((await call('/api/v1/api-keys', { token: user.token })).body.data).toEqual([]);
  });
});

describe('POST /api/v1/api-keys/:id/revoke', () => {
  it('revokes by key_N or N; the key fails from its next request; revoking again is harmless', async () => {
    const user = await signUp();
    const a = await createKey(user, ['*']);
    const b = await createKey(user, ['*']);
    const res = await call(`/api/v1/api-keys/${a.id}/revoke`, { method: 'POST', token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: a.id, status: 'revoked', revokedAt: expect.any(String) });
    expectError(await call('/api/v1/profile', { apiKey: a.key }), 403, 'FORBIDDEN');
    expect((await call(`/api/v1/api-keys/${a.id}/revoke`, { method: 'POST', token: user.token })).body.status).toBe('revoked');

    const numeric = await call(`/api/v1/api-keys/${b.id.slice(4)}/revoke`, { method: 'POST', token: user.token });
    expect(numeric.body).toMatchObject({ id: b.id, status: 'revoked' });
  });

  it('answers 404 for another workspace’s key and for ids that are not ids', async () => {
    const user = await signUp();
    const other = await signUp();
    const theirs = await createKey(other, ['*']);
    expectError(await call(`/api/v1/api-keys/${theirs.id}/revoke`, { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/profile', { apiKey: theirs.key })).status).toBe(200);
    expectError(await call('/api/v1/api-keys/key_abc/revoke', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/api-keys/0/revoke', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
  });
});
