import { env } from 'cloudflare:workers';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import * as schema from '../../schema';
import { type SecretRow } from '../../schema';
import { decryptSecret, encryptSecret } from '../../workers/lib/encryption';
import { createSecret, revealSecret, secretContext, updateSecret } from '../../workers/services/secrets';
import { call, createKey, expectError, signUp, type TestUser, sessionPrincipal } from '../helpers/api';
import { shardD1, shardDbFor } from '../helpers/shards';

const VALUE = 's3cr3t-VALUE-1234';

const create = (user: TestUser, body: unknown, headers?: Record<string, string>) => call('/api/v1/secrets', { token: user.token, body, headers });
const patch = (user: TestUser, id: string, body: unknown) => call(`/api/v1/secrets/${id}`, { method: 'PATCH', token: user.token, body });
const remove = (user: TestUser, id: string) => call(`/api/v1/secrets/${id}`, { method: 'DELETE', token: user.token });
const list = (user: TestUser, query = '') => call(`/api/v1/secrets${query}`, { token: user.token });

/** The query builder over `user`'s shard. */
const db = (user: TestUser) => shardDbFor(user.workspaceId);
/** The stored row of `user`'s workspace, read straight from its shard. */
async function storedRow(user: TestUser, id: string) {
  const shard = await db(user);
  const [row] = await shard
    .select()
    .from(schema.secrets)
    .where(eq(schema.secrets.id, Number(id.slice('sec_'.length))));
  return row ?? null;
}
const decryptRow = (row: SecretRow) => decryptSecret(env.ENCRYPTION_KEY, secretContext(row.workspaceId, row.name), row.ciphertext);

describe('POST /api/v1/secrets', () => {
  it('answers 201 with the record, never the value, and stores only ciphertext', async () => {
    const user = await signUp();
    const res = await create(user, { name: 'GITHUB_TOKEN', value: VALUE });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^sec_\d+$/), name: 'GITHUB_TOKEN', createdAt: expect.any(String), updatedAt: expect.any(String) });
    const row = (await storedRow(user, res.body.id))!;
    expect(JSON.stringify(row)).not.toContain(VALUE);
    expect(row.ciphertext).not.toBe(VALUE);
    expect(await decryptRow(row)).toBe(VALUE);
  });

  it('uses a fresh IV: the same value twice gives different ciphertexts', async () => {
    const user = await signUp();
    const a = await create(user, { name: 'A', value: VALUE });
    const b = await create(user, { name: 'B', value: VALUE });
    expect((await storedRow(user, a.body.id))!.ciphertext).not.toBe((await storedRow(user, b.body.id))!.ciphertext);
  });

  it.each([
    [{ name: 'lower_case', value: 'x' }, 'name'],
    [{ name: '1ABC', value: 'x' }, 'name'],
    [{ name: 'HAS-DASH', value: 'x' }, 'name'],
    [{ name: `A${'B'.repeat(128)}`, value: 'x' }, 'name'],
    [{ value: 'x' }, 'name'],
    [{ name: 'OK' }, 'value'],
    [{ name: 'OK', value: '' }, 'value'],
    [{ name: 'OK', value: 'x'.repeat(65_537) }, 'value'],
    [{ name: 'OK', value: 42 }, 'value'],
  ])('rejects %j with 400 naming the field', async (body, field) => {
    const user = await signUp();
    expect(expectError(await create(user, body), 400, 'INVALID_INPUT').details?.field).toBe(field);
  });

  it('accepts the longest name and a 65,536-character value', async () => {
    const user = await signUp();
    const name = `A${'_'.repeat(127)}`;
    const res = await create(user, { name, value: 'é'.repeat(65_536) });
    expect(res.status).toBe(201);
    expect(await decryptRow((await storedRow(user, res.body.id))!)).toBe('é'.repeat(65_536));
  });

  it('refuses a duplicate name in the workspace with 409 ALREADY_EXISTS, not across workspaces', async () => {
    const user = await signUp();
    const other = await signUp();
    await create(user, { name: 'DUP', value: 'x' });
    expect(expectError(await create(user, { name: 'DUP', value: 'y' }), 409, 'ALREADY_EXISTS').details?.field).toBe('name');
    expect((await create(other, { name: 'DUP', value: 'y' })).status).toBe(201);
    expect((await list(user)).body.data).toHaveLength(1);
  });

  it('honours idempotency-key: one secret, the same answer replayed', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'secret-once' };
    const first = await create(user, { name: 'ONCE', value: VALUE }, headers);
    const again = await create(user, { name: 'ONCE', value: VALUE }, headers);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await list(user)).body.data).toHaveLength(1);
  });
});

describe('GET /api/v1/secrets', () => {
  it('is a cursor list, newest first, of this workspace only', async () => {
    const user = await signUp();
    const other = await signUp();
    await create(other, { name: 'THEIRS', value: VALUE });
    const ids = [];
    for (const name of ['FIRST', 'SECOND', 'THIRD']) ids.push((await create(user, { name, value: VALUE })).body.id);
    const all = await list(user);
    expect(all.status).toBe(200);
    expect(all.body.data.map((s: { name: string }) => s.name)).toEqual(['THIRD', 'SECOND', 'FIRST']);
    expect(all.body).toMatchObject({ first_id: ids[2], last_id: ids[0], has_more: false });

    const page = await list(user, '?limit=2');
    expect(page.body).toMatchObject({ first_id: ids[2], last_id: ids[1], has_more: true });
    const next = await list(user, `?limit=2&after_id=${page.body.last_id}`);
    expect(next.body.data.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
    expect(next.body.has_more).toBe(false);
    expect(expectError(await list(user, '?limit=0'), 400, 'INVALID_INPUT').details?.field).toBe('limit');
  });
});

describe('PATCH /api/v1/secrets/:id', () => {
  it('rotates the value with a new ciphertext, keeping the id', async () => {
    const user = await signUp();
    const created = await create(user, { name: 'ROTATE_ME', value: VALUE });
    const before = (await storedRow(user, created.body.id))!;
    const rotated = await patch(user, created.body.id, { value: 'new-value' });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ ...created.body, updatedAt: expect.any(String) });
    const after = (await storedRow(user, created.body.id))!;
    expect(after.id).toBe(before.id);
    expect(after.ciphertext).not.toBe(before.ciphertext);
    expect(await decryptRow(after)).toBe('new-value');
  });

  it('renames, re-encrypting the value under the new name; accepts the bare numeric id', async () => {
    const user = await signUp();
    const created = await create(user, { name: 'OLD_NAME', value: VALUE });
    const before = (await storedRow(user, created.body.id))!;
    const renamed = await patch(user, created.body.id.slice('sec_'.length), { name: 'NEW_NAME' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: created.body.id, name: 'NEW_NAME' });
    const after = (await storedRow(user, created.body.id))!;
    expect(after.ciphertext).not.toBe(before.ciphertext);
    expect(await decryptRow(after)).toBe(VALUE);
    expect(await revealSecret(env.ENCRYPTION_KEY, after)).toBe(VALUE);
  });

  it('renames and rotates at once', async () => {
    const user = await signUp();
    const created = await create(user, { name: 'BOTH', value: VALUE });
    expect((await patch(user, created.body.id, { name: 'BOTH_2', value: 'v2' })).body.name).toBe('BOTH_2');
    expect(await decryptRow((await storedRow(user, created.body.id))!)).toBe('v2');
  });

  it.each([
    [{}, 'body'],
    [{ name: 'bad name' }, 'name'],
    [{ value: '' }, 'value'],
  ])('rejects %j with 400 naming the field', async (body, field) => {
    const user = await signUp();
    const created = await create(user, { name: 'X', value: VALUE });
    expect(expectError(await patch(user, created.body.id, body), 400, 'INVALID_INPUT').details?.field).toBe(field);
  });

  it('refuses a rename onto another secret’s name with 409', async () => {
    const user = await signUp();
    const a = await create(user, { name: 'TAKEN_A', value: VALUE });
    await create(user, { name: 'TAKEN_B', value: VALUE });
    expect(expectError(await patch(user, a.body.id, { name: 'TAKEN_B' }), 409, 'ALREADY_EXISTS').details?.field).toBe('name');
    expect(await decryptRow((await storedRow(user, a.body.id))!)).toBe(VALUE);
  });
});

describe('DELETE /api/v1/secrets/:id', () => {
  it('deletes by either id form and answers {success: true}', async () => {
    const user = await signUp();
    const a = await create(user, { name: 'KEEP', value: VALUE });
    const b = await create(user, { name: 'DROP', value: VALUE });
    const deleted = await remove(user, b.body.id.slice('sec_'.length));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    expect((await list(user)).body.data.map((s: { id: string }) => s.id)).toEqual([a.body.id]);
    expect(await storedRow(user, b.body.id)).toBeNull();
    expectError(await remove(user, b.body.id), 404, 'NOT_FOUND');
  });
});

describe('ids and workspaces', () => {
  it('answers 404 for another workspace’s secret and for malformed ids', async () => {
    const user = await signUp();
    const other = await signUp();
    const theirs = await create(other, { name: 'THEIRS', value: VALUE });
    expectError(await patch(user, theirs.body.id, { value: 'x' }), 404, 'NOT_FOUND');
    expectError(await remove(user, theirs.body.id), 404, 'NOT_FOUND');
    for (const bad of ['sec_zz', 'key_1', 'sec_0', '-1', 'abc']) expectError(await remove(user, bad), 404, 'NOT_FOUND');
    expect((await list(user)).body.data).toEqual([]);
    expect(await decryptRow((await storedRow(other, theirs.body.id))!)).toBe(VALUE);
  });
});

describe('scopes', () => {
  it('reads need library:read, writes library:write', async () => {
    const user = await signUp();
    const secret = await create(user, { name: 'SCOPED', value: VALUE });
    const reader = await createKey(user, ['library:read']);
    expect((await call('/api/v1/secrets', { apiKey: reader.key })).status).toBe(200);
    const writes = [
      call('/api/v1/secrets', { apiKey: reader.key, body: { name: 'X', value: 'y' } }),
      call(`/api/v1/secrets/${secret.body.id}`, { method: 'PATCH', apiKey: reader.key, body: { value: 'y' } }),
      call(`/api/v1/secrets/${secret.body.id}`, { method: 'DELETE', apiKey: reader.key }),
    ];
    for (const res of await Promise.all(writes)) expect(expectError(res, 403, 'FORBIDDEN').details).toEqual({ scope: 'library:write' });
    const none = await createKey(user, ['profile:read']);
    const denied = expectError(await call('/api/v1/secrets', { apiKey: none.key }), 403, 'FORBIDDEN');
    expect(denied.details).toEqual({ scope: 'library:read' });
    expect(denied.message).toContain('library:read');

    const writer = await createKey(user, ['library:write']);
    expect((await call('/api/v1/secrets', { apiKey: writer.key, body: { name: 'BY_KEY', value: VALUE } })).status).toBe(201);
  });
});

describe('the value never leaves', () => {
  it('is absent from every response, audit entry and activity line', async () => {
    const user = await signUp();
    const created = await create(user, { name: 'LEAK_CHECK', value: VALUE });
    const bodies = [
      created.body,
      (await list(user)).body,
      (await patch(user, created.body.id, { value: `${VALUE}-2` })).body,
      (await patch(user, created.body.id, { name: 'LEAK_CHECK_2' })).body,
      (await remove(user, created.body.id)).body,
      (await call('/api/v1/audit-logs?limit=100', { token: user.token })).body,
      (await call('/api/v1/activity?limit=100', { token: user.token })).body,
    ];
    for (const body of bodies) expect(JSON.stringify(body)).not.toContain(VALUE);

    const audit = await call('/api/v1/audit-logs?resource_type=secret', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['secret.deleted', 'secret.updated', 'secret.updated', 'secret.created']);
    for (const entry of audit.body.data) expect(entry.resourceId).toBe(created.body.id);
    expect(audit.body.data[1].metadata).toEqual({ name: 'LEAK_CHECK_2', renamedFrom: 'LEAK_CHECK', rotated: false });
    expect(audit.body.data[2].metadata).toEqual({ name: 'LEAK_CHECK', rotated: true });
    const activity = await call('/api/v1/activity?type=secret.created', { token: user.token });
    expect(activity.body.data.map((e: { summary: string }) => e.summary)).toEqual(['Secret LEAK_CHECK was added']);
  });
});

describe('encryption', () => {
  it('round-trips and binds the ciphertext to its workspace and name', async () => {
    const user = await signUp();
    const a = (await storedRow(user, (await create(user, { name: 'ROW_A', value: VALUE })).body.id))!;
    const b = (await storedRow(user, (await create(user, { name: 'ROW_B', value: 'other' })).body.id))!;
    expect(await decryptRow(a)).toBe(VALUE);
    // The ciphertext copied into another row of the same workspace, or another workspace's row.
    expect(await decryptRow({ ...b, ciphertext: a.ciphertext })).toBeNull();
    expect(await decryptRow({ ...a, workspaceId: 'another-workspace' })).toBeNull();
    await (await shardD1(user.workspaceId)).prepare('UPDATE secrets SET ciphertext = ? WHERE id = ?').bind(a.ciphertext, b.id).run();
    await expect(revealSecret(env.ENCRYPTION_KEY, (await storedRow(user, `sec_${b.id}`))!)).rejects.toThrow(/does not decrypt/);
    expect(await decryptSecret(env.ENCRYPTION_KEY, 'ctx', 'not base64!')).toBeNull();
    expect(await decryptSecret(env.ENCRYPTION_KEY, 'ctx', btoa('short'))).toBeNull();
  });

  it('answers 503 SERVICE_UNAVAILABLE naming ENCRYPTION_KEY when it is missing or malformed, writing nothing', async () => {
    const user = await signUp();
    const unavailable = { code: 'SERVICE_UNAVAILABLE', status: 503, message: expect.stringContaining('ENCRYPTION_KEY') };
    await expect(createSecret(await db(user), sessionPrincipal(user), undefined, { name: 'X', value: VALUE })).rejects.toMatchObject(unavailable);
    await expect(createSecret(await db(user), sessionPrincipal(user), '', { name: 'X', value: VALUE })).rejects.toMatchObject(unavailable);
    await expect(createSecret(await db(user), sessionPrincipal(user), btoa('sixteen byte key'), { name: 'X', value: VALUE })).rejects.toMatchObject(
      unavailable,
    );
    await expect(createSecret(await db(user), sessionPrincipal(user), 'not base64!', { name: 'X', value: VALUE })).rejects.toMatchObject(unavailable);
    expect((await list(user)).body.data).toEqual([]);

    const created = await create(user, { name: 'EXISTING', value: VALUE });
    const before = (await storedRow(user, created.body.id))!;
    await expect(updateSecret(await db(user), sessionPrincipal(user), undefined, created.body.id, { value: 'x' })).rejects.toMatchObject(unavailable);
    await expect(updateSecret(await db(user), sessionPrincipal(user), undefined, created.body.id, { name: 'RENAMED' })).rejects.toMatchObject(unavailable);
    expect(await storedRow(user, created.body.id)).toEqual(before);
    await expect(decryptSecret(undefined, 'ctx', before.ciphertext)).rejects.toMatchObject(unavailable);
  });

  it('does not decrypt under another key', async () => {
    const otherKey = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
    const sealed = await encryptSecret(env.ENCRYPTION_KEY, 'ctx', VALUE);
    expect(await decryptSecret(env.ENCRYPTION_KEY, 'ctx', sealed)).toBe(VALUE);
    expect(await decryptSecret(otherKey, 'ctx', sealed)).toBeNull();
    expect(atob(sealed)).toHaveLength(12 + new TextEncoder().encode(VALUE).length + 16);
  });
});
