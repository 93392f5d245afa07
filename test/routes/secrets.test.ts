import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { decryptSecret } from '../../workers/lib/encryption';
import { secretContext } from '../../workers/services/secrets';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';

const VALUE = 's3cr3t-VALUE-1234';
const create = (user: TestUser, body: unknown, headers?: Record<string, string>) =>
  call('/api/v1/secrets', { token: user.token, body, headers });
const storedRow = (id: string) => env.DB.prepare('SELECT * FROM secrets WHERE id = ?').bind(Number(id.slice(4))).first<Record<string, any>>();

describe('POST /api/v1/secrets', () => {
  it('stores the value encrypted and answers without it', async () => {
    const user = await signUp();
    const res = await create(user, { name: 'GITHUB_TOKEN', value: VALUE });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^sec_\d+$/), name: 'GITHUB_TOKEN', createdAt: expect.any(String), updatedAt: expect.any(String) });
    const row = await storedRow(res.body.id);
    expect(JSON.stringify(row)).not.toContain(VALUE);
    expect(await decryptSecret(env.ENCRYPTION_KEY, secretContext(user.workspaceId, row!.created_at), row!.ciphertext)).toBe(VALUE);
  });

  it('uses a fresh IV: the same value twice gives different ciphertexts', async () => {
    const user = await signUp();
    const a = await create(user, { name: 'A', value: VALUE });
    const b = await create(user, { name: 'B', value: VALUE });
    expect((await storedRow(a.body.id))!.ciphertext).not.toBe((await storedRow(b.body.id))!.ciphertext);
  });

  it('does not decrypt a ciphertext moved to another workspace', async () => {
    const user = await signUp();
    const res = await create(user, { name: 'A', value: VALUE });
    const row = await storedRow(res.body.id);
    expect(await decryptSecret(env.ENCRYPTION_KEY, secretContext('another-workspace', row!.created_at), row!.ciphertext)).toBeNull();
  });

  it.each([
    [{ name: 'lower_case', value: 'x' }, 'name'],
    [{ name: '1ABC', value: 'x' }, 'name'],
    [{ name: 'OK' }, 'value'],
    [{ name: 'OK', value: '' }, 'value'],
  ])('rejects %j naming the field', async (body, field) => {
    const user = await signUp();
    expect(expectError(await create(user, body), 400, 'INVALID_INPUT').details?.field).toBe(field);
  });

  it('refuses a duplicate name in the workspace, not across workspaces', async () => {
    const user = await signUp();
    const other = await signUp();
    await create(user, { name: 'DUP', value: 'x' });
    expect(expectError(await create(user, { name: 'DUP', value: 'y' }), 409, 'ALREADY_EXISTS').details?.field).toBe('name');
    expect((await create(other, { name: 'DUP', value: 'y' })).status).toBe(201);
  });

  it('honours idempotency-key: one secret, the same answer replayed', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'secret-once' };
    const first = await create(user, { name: 'ONCE', value: VALUE }, headers);
    const again = await create(user, { name: 'ONCE', value: VALUE }, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await call('/api/v1/secrets', { token: user.token })).body.data).toHaveLength(1);
  });
});

describe('GET, PATCH and DELETE /api/v1/secrets', () => {
  it('lists newest first, renames and rotates keeping the id, deletes', async () => {
    const user = await signUp();
    const a = await create(user, { name: 'FIRST', value: VALUE });
    const b = await create(user, { name: 'SECOND', value: VALUE });
    const list = await call('/api/v1/secrets', { token: user.token });
    expect(list.body.data.map((s: { name: string }) => s.name)).toEqual(['SECOND', 'FIRST']);

    const before = (await storedRow(a.body.id))!.ciphertext;
    const rotated = await call(`/api/v1/secrets/${a.body.id}`, { method: 'PATCH', token: user.token, body: { name: 'RENAMED', value: 'new-value' } });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ id: a.body.id, name: 'RENAMED' });
    const row = await storedRow(a.body.id);
    expect(row!.ciphertext).not.toBe(before);
    expect(await decryptSecret(env.ENCRYPTION_KEY, secretContext(user.workspaceId, row!.created_at), row!.ciphertext)).toBe('new-value');

    expect(expectError(await call(`/api/v1/secrets/${a.body.id}`, { method: 'PATCH', token: user.token, body: {} }), 400, 'INVALID_INPUT').details?.field).toBe('body');
    expectError(await call(`/api/v1/secrets/${a.body.id}`, { method: 'PATCH', token: user.token, body: { name: 'SECOND' } }), 409, 'ALREADY_EXISTS');

    const deleted = await call(`/api/v1/secrets/${b.body.id.slice(4)}`, { method: 'DELETE', token: user.token });
    expect(deleted.body).toEqual({ success: true });
    expect((await call('/api/v1/secrets', { token: user.token })).body.data.map((s: { id: string }) => s.id)).toEqual([a.body.id]);
  });

  it('answers 404 for another workspace’s secret', async () => {
    const user = await signUp();
    const other = await signUp();
    const theirs = await create(other, { name: 'THEIRS', value: VALUE });
    expectError(await call(`/api/v1/secrets/${theirs.body.id}`, { method: 'PATCH', token: user.token, body: { value: 'x' } }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/secrets/${theirs.body.id}`, { method: 'DELETE', token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/secrets/sec_zz', { method: 'DELETE', token: user.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/secrets', { token: user.token })).body.data).toEqual([]);
  });

  it('checks library:read and library:write', async () => {
    const user = await signUp();
    const reader = await createKey(user, ['library:read']);
    expect((await call('/api/v1/secrets', { apiKey: reader.key })).status).toBe(200);
    const error = expectError(await call('/api/v1/secrets', { apiKey: reader.key, body: { name: 'X', value: 'y' } }), 403, 'FORBIDDEN');
    expect(error.details).toEqual({ scope: 'library:write' });
    const none = await createKey(user, ['profile:read']);
    expect(expectError(await call('/api/v1/secrets', { apiKey: none.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'library:read' });
  });

  it('answers 503 naming ENCRYPTION_KEY when it is not configured, writing nothing', async () => {
    const { createSecret } = await import('../../workers/services/secrets');
    const { drizzle } = await import('drizzle-orm/d1');
    const schema = await import('../../schema');
    const user = await signUp();
    const principal = {
      userId: user.user.id,
      workspaceId: user.workspaceId,
      role: 'owner' as const,
      credential: { type: 'session' as const, sessionId: 'x' },
      scopes: ['*'],
      origin: { requestId: 'r', ip: null, userAgent: null },
    };
    await expect(createSecret(drizzle(env.DB, { schema }), principal, undefined, { name: 'X', value: 'y' })).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      message: expect.stringContaining('ENCRYPTION_KEY'),
    });
    expect((await call('/api/v1/secrets', { token: user.token })).body.data).toEqual([]);
  });
});

describe('skill secret bindings', () => {
  const installAuthored = (user: TestUser, slug: string) =>
    call(`/api/v1/skills/${slug}`, {
      method: 'PUT',
      token: user.token,
      body: { name: slug, description: 'd', category: 'development', prompt: 'p' },
    });

  it('binds, lists and unbinds; deleting the secret removes its bindings', async () => {
    const user = await signUp();
    await installAuthored(user, 'deployer');
    const secret = await create(user, { name: 'DEPLOY_TOKEN', value: VALUE });
    const bound = await call('/api/v1/skills/deployer/secrets', { token: user.token, body: { secretId: secret.body.id, envVar: 'TOKEN' } });
    expect(bound.status).toBe(201);
    expect(bound.body).toEqual({
      id: expect.any(Number),
      skillSlug: 'deployer',
      secretId: secret.body.id,
      secretName: 'DEPLOY_TOKEN',
      envVar: 'TOKEN',
      createdAt: expect.any(String),
    });
    expect((await call('/api/v1/skills/deployer/secrets', { token: user.token })).body).toEqual([bound.body]);
    expectError(await call('/api/v1/skills/deployer/secrets', { token: user.token, body: { secretId: secret.body.id, envVar: 'TOKEN' } }), 409, 'ALREADY_EXISTS');

    const second = await call('/api/v1/skills/deployer/secrets', { token: user.token, body: { secretId: secret.body.id.slice(4), envVar: 'OTHER' } });
    expect((await call(`/api/v1/skills/deployer/secrets/${second.body.id}`, { method: 'DELETE', token: user.token })).body).toEqual({ success: true });

    await call(`/api/v1/secrets/${secret.body.id}`, { method: 'DELETE', token: user.token });
    expect((await call('/api/v1/skills/deployer/secrets', { token: user.token })).body).toEqual([]);
  });

  it('answers 404 for a skill not installed, a secret of another workspace, or a foreign binding', async () => {
    const user = await signUp();
    const other = await signUp();
    await installAuthored(user, 'deployer');
    await installAuthored(other, 'deployer');
    const mine = await create(user, { name: 'MINE', value: VALUE });
    const theirs = await create(other, { name: 'THEIRS', value: VALUE });
    expectError(await call('/api/v1/skills/not-installed/secrets', { token: user.token }), 404, 'NOT_FOUND');
    const foreign = expectError(
      await call('/api/v1/skills/deployer/secrets', { token: user.token, body: { secretId: theirs.body.id, envVar: 'X' } }),
      404,
      'NOT_FOUND',
    );
    expect(foreign.details?.field).toBe('secretId');
    const theirBinding = await call('/api/v1/skills/deployer/secrets', { token: other.token, body: { secretId: theirs.body.id, envVar: 'X' } });
    expectError(await call(`/api/v1/skills/deployer/secrets/${theirBinding.body.id}`, { method: 'DELETE', token: user.token }), 404, 'NOT_FOUND');
    expect(expectError(await call('/api/v1/skills/deployer/secrets', { token: user.token, body: { secretId: mine.body.id, envVar: 'bad-name' } }), 400, 'INVALID_INPUT').details?.field).toBe('envVar');
  });

  it('never shows the value in any response, audit entry or activity line', async () => {
    const user = await signUp();
    await installAuthored(user, 'deployer');
    const secret = await create(user, { name: 'LEAK_CHECK', value: VALUE });
    const bodies = [
      secret.body,
      (await call('/api/v1/secrets', { token: user.token })).body,
      (await call(`/api/v1/secrets/${secret.body.id}`, { method: 'PATCH', token: user.token, body: { value: `${VALUE}-2` } })).body,
      (await call('/api/v1/skills/deployer/secrets', { token: user.token, body: { secretId: secret.body.id, envVar: 'K' } })).body,
      (await call('/api/v1/skills/deployer/secrets', { token: user.token })).body,
      (await call('/api/v1/audit-logs?limit=100', { token: user.token })).body,
      (await call('/api/v1/activity?limit=100', { token: user.token })).body,
      (await call(`/api/v1/secrets/${secret.body.id}`, { method: 'DELETE', token: user.token })).body,
    ];
    for (const body of bodies) expect(JSON.stringify(body)).not.toContain(VALUE);
    const actions = (await call('/api/v1/audit-logs?resource_type=secret', { token: user.token })).body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(['secret.deleted', 'secret.updated', 'secret.created']);
  });
});
