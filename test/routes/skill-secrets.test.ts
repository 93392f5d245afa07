import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { shardD1 } from '../helpers/shards';

const VALUE = 's3cr3t-VALUE-1234';

/** An installed skill, written straight into D1 (these tests are about bindings, not installs). */
async function installSkill(user: TestUser, slug: string) {
  const t = Date.now();
  const shard = await shardD1(user.workspaceId);
  await shard.prepare('INSERT INTO skills (workspace_id, slug, created_at, updated_at) VALUES (?,?,?,?)').bind(user.workspaceId, slug, t, t).run();
}

const createSecret = async (user: TestUser, name: string) => {
  const res = await call('/api/v1/secrets', { token: user.token, body: { name, value: VALUE } });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
};
const bindings = (user: TestUser, slug: string) => call(`/api/v1/skills/${slug}/secrets`, { token: user.token });
const bind = (user: TestUser, slug: string, body: unknown) => call(`/api/v1/skills/${slug}/secrets`, { token: user.token, body });
const unbind = (user: TestUser, slug: string, id: number | string) => call(`/api/v1/skills/${slug}/secrets/${id}`, { method: 'DELETE', token: user.token });

describe('skill secret bindings', () => {
  it('binds (201), lists as a bare array oldest first, and unbinds', async () => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    const secret = await createSecret(user, 'DEPLOY_TOKEN');
    expect((await bindings(user, 'deployer')).body).toEqual([]);

    const bound = await bind(user, 'deployer', { secretId: secret.id, envVar: 'TOKEN' });
    expect(bound.status).toBe(201);
    expect(bound.body).toEqual({
      id: expect.any(Number),
      skillSlug: 'deployer',
      secretId: secret.id,
      secretName: 'DEPLOY_TOKEN',
      envVar: 'TOKEN',
      origins: [],
      createdAt: expect.any(String),
    });
    // The raw numeric id, as a string or a number, names the same secret.
    const second = await bind(user, 'deployer', { secretId: secret.id.slice('sec_'.length), envVar: 'OTHER' });
    const third = await bind(user, 'deployer', { secretId: Number(secret.id.slice('sec_'.length)), envVar: 'THIRD' });
    expect([second.status, third.status]).toEqual([201, 201]);
    expect(third.body.secretId).toBe(secret.id);

    const listed = await bindings(user, 'deployer');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([bound.body, second.body, third.body]);

    const deleted = await unbind(user, 'deployer', second.body.id);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    expect((await bindings(user, 'deployer')).body).toEqual([bound.body, third.body]);
    expectError(await unbind(user, 'deployer', second.body.id), 404, 'NOT_FOUND');
  });

  it('shows the secret’s current name after a rename', async () => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    const secret = await createSecret(user, 'BEFORE');
    await bind(user, 'deployer', { secretId: secret.id, envVar: 'TOKEN' });
    await call(`/api/v1/secrets/${secret.id}`, { method: 'PATCH', token: user.token, body: { name: 'AFTER' } });
    expect((await bindings(user, 'deployer')).body[0]).toMatchObject({ secretName: 'AFTER', envVar: 'TOKEN' });
  });

  it('refuses the same envVar twice for a skill with 409, but allows it on another skill', async () => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    await installSkill(user, 'reviewer');
    const a = await createSecret(user, 'A');
    const b = await createSecret(user, 'B');
    await bind(user, 'deployer', { secretId: a.id, envVar: 'TOKEN' });
    const duplicate = expectError(await bind(user, 'deployer', { secretId: b.id, envVar: 'TOKEN' }), 409, 'ALREADY_EXISTS');
    expect(duplicate.details?.field).toBe('envVar');
    expect((await bind(user, 'reviewer', { secretId: a.id, envVar: 'TOKEN' })).status).toBe(201);
    expect((await bindings(user, 'deployer')).body).toHaveLength(1);
  });

  it.each([
    [{ secretId: 'sec_1', envVar: 'bad-name' }, 'envVar'],
    [{ secretId: 'sec_1', envVar: '1ABC' }, 'envVar'],
    [{ secretId: 'sec_1' }, 'envVar'],
    [{ envVar: 'OK' }, 'secretId'],
    [{ secretId: true, envVar: 'OK' }, 'secretId'],
    [{ secretId: 1.5, envVar: 'OK' }, 'secretId'],
  ])('rejects %j with 400 naming the field', async (body, field) => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    expect(expectError(await bind(user, 'deployer', body), 400, 'INVALID_INPUT').details?.field).toBe(field);
  });

  it('answers 404 for a skill not installed in this workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    await installSkill(other, 'theirs-only');
    const secret = await createSecret(user, 'MINE');
    expectError(await bindings(user, 'theirs-only'), 404, 'NOT_FOUND');
    expectError(await bind(user, 'theirs-only', { secretId: secret.id, envVar: 'X' }), 404, 'NOT_FOUND');
    expectError(await unbind(user, 'theirs-only', 1), 404, 'NOT_FOUND');
  });

  it('answers 404 with field secretId for a secret not in this workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    await installSkill(user, 'deployer');
    const theirs = await createSecret(other, 'THEIRS');
    for (const secretId of [theirs.id, 'sec_999999999', 'nonsense']) {
      const error = expectError(await bind(user, 'deployer', { secretId, envVar: 'X' }), 404, 'NOT_FOUND');
      expect(error.details?.field).toBe('secretId');
    }
    expect((await bindings(user, 'deployer')).body).toEqual([]);
  });

  it('answers 404 for a binding of another skill or another workspace, and leaves it', async () => {
    const user = await signUp();
    const other = await signUp();
    for (const u of [user, other]) await installSkill(u, 'deployer');
    await installSkill(user, 'reviewer');
    const mine = await createSecret(user, 'MINE');
    const theirs = await createSecret(other, 'THEIRS');
    const myBinding = await bind(user, 'deployer', { secretId: mine.id, envVar: 'X' });
    const theirBinding = await bind(other, 'deployer', { secretId: theirs.id, envVar: 'X' });

    expectError(await unbind(user, 'deployer', theirBinding.body.id), 404, 'NOT_FOUND');
    expectError(await unbind(user, 'reviewer', myBinding.body.id), 404, 'NOT_FOUND');
    for (const bad of ['abc', '0', 'sec_1']) expectError(await unbind(user, 'deployer', bad), 404, 'NOT_FOUND');
    expect((await bindings(other, 'deployer')).body).toEqual([theirBinding.body]);
    expect((await bindings(user, 'deployer')).body).toEqual([myBinding.body]);
  });

  it('deleting a secret removes its bindings (D1 enforces the foreign key cascade)', async () => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    await installSkill(user, 'reviewer');
    const doomed = await createSecret(user, 'DOOMED');
    const kept = await createSecret(user, 'KEPT');
    await bind(user, 'deployer', { secretId: doomed.id, envVar: 'A' });
    await bind(user, 'reviewer', { secretId: doomed.id, envVar: 'A' });
    const survivor = await bind(user, 'deployer', { secretId: kept.id, envVar: 'B' });

    await call(`/api/v1/secrets/${doomed.id}`, { method: 'DELETE', token: user.token });
    expect((await bindings(user, 'deployer')).body).toEqual([survivor.body]);
    expect((await bindings(user, 'reviewer')).body).toEqual([]);
    const shard = await shardD1(user.workspaceId);
    const left = await shard
      .prepare('SELECT COUNT(*) AS n FROM skill_secret_bindings WHERE secret_id = ?')
      .bind(Number(doomed.id.slice('sec_'.length)))
      .first<{ n: number }>();
    expect(left!.n).toBe(0);

    // Removing the skill (as uninstall does) removes its bindings too.
    await shard.prepare('DELETE FROM skills WHERE workspace_id = ? AND slug = ?').bind(user.workspaceId, 'deployer').run();
    const orphans = await shard.prepare('SELECT COUNT(*) AS n FROM skill_secret_bindings WHERE id = ?').bind(survivor.body.id).first<{ n: number }>();
    expect(orphans!.n).toBe(0);
  });

  it('reads need library:read, writes library:write', async () => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    const secret = await createSecret(user, 'SCOPED');
    const binding = await bind(user, 'deployer', { secretId: secret.id, envVar: 'X' });
    const reader = await createKey(user, ['library:read']);
    expect((await call('/api/v1/skills/deployer/secrets', { apiKey: reader.key })).body).toEqual([binding.body]);
    const writes = [
      call('/api/v1/skills/deployer/secrets', { apiKey: reader.key, body: { secretId: secret.id, envVar: 'Y' } }),
      call(`/api/v1/skills/deployer/secrets/${binding.body.id}`, { method: 'DELETE', apiKey: reader.key }),
    ];
    for (const res of await Promise.all(writes)) expect(expectError(res, 403, 'FORBIDDEN').details).toEqual({ scope: 'library:write' });
    const none = await createKey(user, ['profile:read']);
    expect(expectError(await call('/api/v1/skills/deployer/secrets', { apiKey: none.key }), 403, 'FORBIDDEN').details).toEqual({
      scope: 'library:read',
    });

    const writer = await createKey(user, ['library:write']);
    expect((await call('/api/v1/skills/deployer/secrets', { apiKey: writer.key, body: { secretId: secret.id, envVar: 'Y' } })).status).toBe(201);
  });

  it('never shows the value, and records skill_secret.bound and .unbound', async () => {
    const user = await signUp();
    await installSkill(user, 'deployer');
    const secret = await createSecret(user, 'LEAK_CHECK');
    const bound = await bind(user, 'deployer', { secretId: secret.id, envVar: 'K' });
    const bodies = [
      bound.body,
      (await bindings(user, 'deployer')).body,
      (await unbind(user, 'deployer', bound.body.id)).body,
      (await call('/api/v1/audit-logs?limit=100', { token: user.token })).body,
      (await call('/api/v1/activity?limit=100', { token: user.token })).body,
    ];
    for (const body of bodies) expect(JSON.stringify(body)).not.toContain(VALUE);

    const audit = await call('/api/v1/audit-logs?resource_type=skill_secret', { token: user.token });
    expect(audit.body.data).toMatchObject([
      { action: 'skill_secret.unbound', resourceId: String(bound.body.id), metadata: { skillSlug: 'deployer', secretId: secret.id, envVar: 'K' } },
      { action: 'skill_secret.bound', resourceId: String(bound.body.id), metadata: { skillSlug: 'deployer', secretId: secret.id, envVar: 'K' } },
    ]);
    const activity = await call('/api/v1/activity?type=skill_secret.bound', { token: user.token });
    expect(activity.body.data.map((e: { summary: string }) => e.summary)).toEqual(['Secret LEAK_CHECK was bound to "deployer" as K']);
  });
});
