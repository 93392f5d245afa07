import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { shardD1 } from '../helpers/shards';

/** docs/auth.md, Credentials: `sk_live_` + 32 random bytes in base64url. */
const KEY_FORMAT = /^sk_live_[A-Za-z0-9_-]{43}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DEFAULT_SCOPES = ['profile:read', 'agent:list'];

const sha256Hex = async (text: string) =>
  Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))), (b) => b.toString(16).padStart(2, '0')).join('');

const numericId = (id: string) => Number(id.slice('key_'.length));

const apiKeyRow = (id: string) => env.DB.prepare('SELECT * FROM api_keys WHERE id = ?').bind(numericId(id)).first<Record<string, unknown>>();

const countKeys = async (user: TestUser) => {
  const row = await env.DB.prepare('SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ?').bind(user.user.id).first<{ n: number }>();
  return row!.n;
};

const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((k) => k.id);

const revoke = (id: string, credential: { token?: string; apiKey?: string; headers?: Record<string, string> }) =>
  call(`/api/v1/api-keys/${id}/revoke`, { method: 'POST', ...credential });

/** `owner` invites `joiner` into the owner's personal workspace as a plain member, and `joiner` accepts. */
async function joinOwnersWorkspace(owner: TestUser, joiner: TestUser) {
  const invitation = await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, {
    token: owner.token,
    body: { email: joiner.email, role: 'member' },
  });
  if (invitation.status !== 201) throw new Error(`invitation failed: ${invitation.status} ${JSON.stringify(invitation.body)}`);
  const accepted = await call('/api/v1/invitations/accept', { token: joiner.token, body: { token: invitation.body.token } });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  /** Session options for `joiner` acting in the owner's workspace. */
  return { token: joiner.token, headers: { 'x-workspace-id': owner.workspaceId } };
}

describe('POST /api/v1/api-keys', () => {
  it('creates an active key with the default scopes, shows it once, and the key authenticates', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', { token: user.token, body: { name: 'CI bot' } });

    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^key_\d+$/),
      name: 'CI bot',
      key: expect.stringMatching(KEY_FORMAT),
      keyPreview: expect.any(String),
      scopes: DEFAULT_SCOPES,
      status: 'active',
      workspaceId: user.workspaceId,
      createdAt: expect.stringMatching(ISO),
      revokedAt: null,
    });
    // The preview identifies the key without revealing it.
    expect(res.body.keyPreview.startsWith('sk_live_')).toBe(true);
    expect(res.body.keyPreview).not.toBe(res.body.key);
    expect(res.body.keyPreview.length).toBeLessThan(res.body.key.length);

    const profile = await call('/api/v1/profile', { apiKey: res.body.key });
    expect(profile.status).toBe(200);
    expect(profile.body.credential).toEqual({ type: 'api_key', apiKeyId: res.body.id });
    expect(profile.body.scopes).toEqual(DEFAULT_SCOPES);
    expect(profile.body.workspace.id).toBe(user.workspaceId);
  });

  it('issues a different key value every time', async () => {
    const user = await signUp();
    const a = await createKey(user);
    const b = await createKey(user);
    expect(a.id).not.toBe(b.id);
    expect(a.key).not.toBe(b.key);
  });

  it('trims the name', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', { token: user.token, body: { name: '  deploy  ' } });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe('deploy');
  });

  it('stores only a SHA-256 hash and the preview, never the key in clear', async () => {
    const user = await signUp();
    const created = await createKey(user);
    const row = await apiKeyRow(created.id);

    expect(row).not.toBeNull();
    expect(row!.key_hash).not.toBe(created.key);
    expect(row!.key_hash).toBe(await sha256Hex(created.key));
    expect(row!.user_id).toBe(user.user.id);
    expect(row!.workspace_id).toBe(user.workspaceId);
    expect(row!.status).toBe('active');
    expect(JSON.stringify(row)).not.toContain(created.key);
  });

  it('accepts an explicit list of known scopes, without duplicates', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', {
      token: user.token,
      body: { name: 'k', scopes: ['memory:read', 'memory:write', 'trace:write', 'memory:read'] },
    });
    expect(res.status).toBe(201);
    expect(res.body.scopes).toEqual(['memory:read', 'memory:write', 'trace:write']);
    expect((await call('/api/v1/profile', { apiKey: res.body.key })).status).toBe(403); // no profile:read asked for
    expect((await call('/api/v1/memory', { apiKey: res.body.key })).status).toBe(200);
  });

  it('accepts connector scopes of the form connector:<app>:read|exec', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', {
      token: user.token,
      body: { name: 'mail agent', scopes: ['connector:mail:read', 'connector:calendar:exec'] },
    });
    expect(res.status).toBe(201);
    expect(res.body.scopes).toEqual(['connector:mail:read', 'connector:calendar:exec']);
  });

  it('rejects an unknown scope with 400 INVALID_INPUT naming its position, and creates nothing', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/api-keys', { token: user.token, body: { name: 'k', scopes: ['nope:read'] } }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('scopes.0');

    const second = expectError(
      await call('/api/v1/api-keys', { token: user.token, body: { name: 'k', scopes: ['memory:read', 'connector:mail:write'] } }),
      400,
      'INVALID_INPUT',
    );
    expect(second.details?.field).toBe('scopes.1');
    expect(await countKeys(user)).toBe(0);
  });

  it.each([
    ['a missing name', { scopes: ['profile:read'] }, 'name'],
    ['an empty name', { name: '' }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name over 100 characters', { name: 'n'.repeat(101) }, 'name'],
    ['a non-string name', { name: 42 }, 'name'],
    ['an empty scope list', { name: 'k', scopes: [] }, 'scopes'],
    ['scopes that are not a list', { name: 'k', scopes: 'profile:read' }, 'scopes'],
    ['a non-boolean pendingActivation', { name: 'k', pendingActivation: 'yes' }, 'pendingActivation'],
  ])('rejects %s with 400 naming the field', async (_label, body, field) => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/api-keys', { token: user.token, body }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe(field);
    expect(await countKeys(user)).toBe(0);
  });

  it('rejects a body that is not JSON', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/api-keys', { token: user.token, rawBody: '{"name":' }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'json' });
  });

  it('starts a key unactivated on request; such a key is refused with 403 on every call', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', {
      token: user.token,
      body: { name: 'agent', scopes: ['profile:read', 'memory:read', 'agent:list'], pendingActivation: true },
    });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('unactivated');
    expect(res.body.key).toMatch(KEY_FORMAT);
    expect((await apiKeyRow(res.body.id))!.status).toBe('unactivated');

    expectError(await call('/api/v1/profile', { apiKey: res.body.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/memory', { apiKey: res.body.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/api-keys', { apiKey: res.body.key }), 403, 'FORBIDDEN');
  });

  it('creates an active key when pendingActivation is false', async () => {
    const user = await signUp();
    const key = await createKey(user, undefined, { pendingActivation: false });
    expect(key.status).toBe('active');
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
  });

  describe('when a key creates a key', () => {
    it('grants a subset of its own scopes, in its own workspace', async () => {
      const user = await signUp();
      const parent = await createKey(user, ['profile:read', 'profile:write', 'agent:list']);
      const child = await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'child', scopes: ['profile:read'] } });
      expect(child.status).toBe(201);
      expect(child.body).toMatchObject({ scopes: ['profile:read'], status: 'active', workspaceId: user.workspaceId });
      expect((await call('/api/v1/profile', { apiKey: child.body.key })).status).toBe(200);
    });

    it('gets the default scopes when it holds them', async () => {
      const user = await signUp();
      const parent = await createKey(user, ['profile:read', 'profile:write', 'agent:list']);
      const child = await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'child' } });
      expect(child.status).toBe(201);
      expect(child.body.scopes).toEqual(DEFAULT_SCOPES);
    });

    it('refuses a scope it does not hold with 403 FORBIDDEN naming the scope', async () => {
      const user = await signUp();
      const parent = await createKey(user, ['profile:read', 'profile:write', 'agent:list']);
      const before = await countKeys(user);
      const error = expectError(
        await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'wider', scopes: ['profile:read', 'memory:read'] } }),
        403,
        'FORBIDDEN',
      );
      expect(error.details).toEqual({ scope: 'memory:read' });
      expect(await countKeys(user)).toBe(before);
    });

    it('refuses the default scopes when it does not hold them all', async () => {
      const user = await signUp();
      const parent = await createKey(user, ['profile:read', 'profile:write']);
      const error = expectError(await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'child' } }), 403, 'FORBIDDEN');
      expect(error.details).toEqual({ scope: 'agent:list' });
    });

    it('refuses a * key', async () => {
      const user = await signUp();
      const parent = await createKey(user, ['profile:read', 'profile:write', 'agent:list']);
      const error = expectError(await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'all', scopes: ['*'] } }), 403, 'FORBIDDEN');
      expect(error.details).toEqual({ scope: '*' });
    });

    it('may grant anything, * included, when it is a * key made by a session', async () => {
      const user = await signUp();
      const legacy = await createKey(user, ['*']);
      expect(legacy.scopes).toEqual(['*']);
      for (const scopes of [['*'], ['memory:write', 'tool:execute'], ['connector:mail:exec']]) {
        const res = await call('/api/v1/api-keys', { apiKey: legacy.key, body: { name: 'any', scopes } });
        expect(res.status).toBe(201);
        expect(res.body.scopes).toEqual(scopes);
      }
    });

    it('cannot create keys at all without profile:write', async () => {
      const user = await signUp();
      const reader = await createKey(user, ['profile:read', 'agent:list']);
      const error = expectError(await call('/api/v1/api-keys', { apiKey: reader.key, body: { name: 'x' } }), 403, 'FORBIDDEN');
      expect(error.details).toEqual({ scope: 'profile:write' });
      expect(error.message).toContain('profile:write');
    });
  });

  it('answers 401 UNAUTHORIZED without a usable credential', async () => {
    const none = expectError(await call('/api/v1/api-keys', { body: { name: 'x' } }), 401, 'UNAUTHORIZED');
    expect(none.message).toEqual(expect.any(String));
    expectError(await call('/api/v1/api-keys', { apiKey: 'garbage', body: { name: 'x' } }), 401, 'UNAUTHORIZED');
    // Well-formed, but never issued.
    expectError(await call('/api/v1/api-keys', { apiKey: `sk_live_${'A'.repeat(43)}`, body: { name: 'x' } }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/api-keys', { token: 'not-a-session', body: { name: 'x' } }), 401, 'UNAUTHORIZED');
  });
});

describe('POST /api/v1/api-keys with idempotency-key', () => {
  it('replays the first answer (same id, same key) with idempotency-replayed: true, creating one key', async () => {
    const user = await signUp();
    const send = () => call('/api/v1/api-keys', { token: user.token, headers: { 'idempotency-key': 'create-bot-1' }, body: { name: 'bot' } });
    const first = await send();
    const retry = await send();

    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.headers.get('content-type')).toContain('application/json');
    expect(retry.body).toEqual(first.body);
    expect(retry.body.key).toBe(first.body.key);

    const list = await call('/api/v1/api-keys', { token: user.token });
    expect(ids(list)).toEqual([first.body.id]);
    expect(await countKeys(user)).toBe(1);
  });

  it('answers 409 CONFLICT for the same idempotency-key with a different body, creating nothing', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'shared-key' };
    expect((await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'one' } })).status).toBe(201);
    const conflict = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'two' } });
    expectError(conflict, 409, 'CONFLICT');
    expect(conflict.headers.get('idempotency-replayed')).toBeNull();
    expect(await countKeys(user)).toBe(1);
  });

  it('scopes idempotency keys per workspace: another user with the same key gets their own new key', async () => {
    const user = await signUp();
    const other = await signUp();
    const headers = { 'idempotency-key': 'shared-key' };
    const mine = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'one' } });
    const theirs = await call('/api/v1/api-keys', { token: other.token, headers, body: { name: 'one' } });

    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotency-replayed')).toBeNull();
    expect(theirs.body.workspaceId).toBe(other.workspaceId);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.key).not.toBe(mine.body.key);
    expect(await countKeys(user)).toBe(1);
    expect(await countKeys(other)).toBe(1);
  });

  it('replays a validation failure as the same 400', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'bad-body' };
    const first = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: '' } });
    const again = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: '' } });

    expect(expectError(first, 400, 'INVALID_INPUT').details?.field).toBe('name');
    expectError(again, 400, 'INVALID_INPUT');
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await countKeys(user)).toBe(0);
  });

  it.each([
    ['longer than 255 characters', 'x'.repeat(300)],
    ['holding a space', 'two words'],
  ])('rejects an idempotency-key %s with 400 naming the header, creating nothing', async (_label, value) => {
    const user = await signUp();
    const error = expectError(
      await call('/api/v1/api-keys', { token: user.token, headers: { 'idempotency-key': value }, body: { name: 'k' } }),
      400,
      'INVALID_INPUT',
    );
    expect(error.details?.field).toBe('idempotency-key');
    expect(await countKeys(user)).toBe(0);
  });

  it('creates exactly one key for concurrent retries', async () => {
    const user = await signUp();
    const send = () => call('/api/v1/api-keys', { token: user.token, headers: { 'idempotency-key': 'race' }, body: { name: 'racer' } });
    const answers = await Promise.all([send(), send(), send()]);

    const created = answers.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.key)).size).toBe(1);
    // The others were replays of that answer, or refused while it was in flight.
    for (const r of answers.filter((a) => a.status !== 201)) expectError(r, 409, 'CONFLICT');
    expect(await countKeys(user)).toBe(1);
  });

  it('never hands a narrower key the wider key another credential created with the same idempotency-key', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'make-admin-key' };
    const body = { name: 'admin', scopes: ['*'] };
    const wide = await call('/api/v1/api-keys', { token: user.token, headers, body });
    expect(wide.status).toBe(201);

    // Without the idempotency-key this key is refused a * key (403); the same must hold with it.
    const narrow = await createKey(user, ['profile:read', 'profile:write', 'agent:list']);
    const res = await call('/api/v1/api-keys', { apiKey: narrow.key, headers, body });
    expect([403, 409]).toContain(res.status);
    expect(JSON.stringify(res.body)).not.toContain(wide.body.key);
  });

  it('never hands another member of the workspace the key a colleague created with the same idempotency-key', async () => {
    const owner = await signUp();
    const member = await signUp();
    const asMember = await joinOwnersWorkspace(owner, member);
    const body = { name: 'deploy' };
    const ownerKey = await call('/api/v1/api-keys', { token: owner.token, headers: { 'idempotency-key': 'deploy-key' }, body });
    expect(ownerKey.status).toBe(201);

    const res = await call('/api/v1/api-keys', { ...asMember, headers: { ...asMember.headers, 'idempotency-key': 'deploy-key' }, body });
    expect(res.headers.get('idempotency-replayed')).toBeNull();
    expect(JSON.stringify(res.body)).not.toContain(ownerKey.body.key);
  });
});

describe('GET /api/v1/api-keys', () => {
  it("lists the caller's keys newest first, with keyPreview and never the key", async () => {
    const user = await signUp();
    const created = [await createKey(user), await createKey(user, ['memory:read']), await createKey(user, ['*'])];
    const res = await call('/api/v1/api-keys', { token: user.token });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: created
        .slice()
        .reverse()
        .map(({ key: _key, ...record }) => record),
      first_id: created[2]!.id,
      last_id: created[0]!.id,
      has_more: false,
    });
    for (const item of res.body.data) {
      expect(item).not.toHaveProperty('key');
      expect(item.keyPreview).toMatch(/^sk_live_/);
    }
    for (const k of created) expect(JSON.stringify(res.body)).not.toContain(k.key);
  });

  it('answers an empty envelope for a workspace without keys', async () => {
    const user = await signUp();
    const res = await call('/api/v1/api-keys', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], first_id: null, last_id: null, has_more: false });
  });

  it('pages with limit, after_id and before_id, taking key_N or N as the cursor', async () => {
    const user = await signUp();
    const [k1, k2, k3, k4] = [await createKey(user), await createKey(user), await createKey(user), await createKey(user)];

    const page1 = await call('/api/v1/api-keys?limit=2', { token: user.token });
    expect(page1.status).toBe(200);
    expect(ids(page1)).toEqual([k4!.id, k3!.id]);
    expect(page1.body).toMatchObject({ first_id: k4!.id, last_id: k3!.id, has_more: true });

    const page2 = await call(`/api/v1/api-keys?limit=2&after_id=${page1.body.last_id}`, { token: user.token });
    expect(ids(page2)).toEqual([k2!.id, k1!.id]);
    expect(page2.body).toMatchObject({ first_id: k2!.id, last_id: k1!.id, has_more: false });

    const numeric = await call(`/api/v1/api-keys?limit=2&after_id=${numericId(k3!.id)}`, { token: user.token });
    expect(ids(numeric)).toEqual([k2!.id, k1!.id]);

    const back = await call(`/api/v1/api-keys?limit=2&before_id=${k1!.id}`, { token: user.token });
    expect(ids(back)).toEqual([k3!.id, k2!.id]);
    expect(back.body.has_more).toBe(true);

    const backToStart = await call(`/api/v1/api-keys?limit=2&before_id=${k3!.id}`, { token: user.token });
    expect(ids(backToStart)).toEqual([k4!.id]);
    expect(backToStart.body.has_more).toBe(false);
  });

  it('pages 20 at a time by default', async () => {
    const user = await signUp();
    const created = [];
    for (let i = 0; i < 21; i++) created.push(await createKey(user));
    const res = await call('/api/v1/api-keys', { token: user.token });
    expect(res.body.data).toHaveLength(20);
    expect(res.body.has_more).toBe(true);
    expect(res.body.first_id).toBe(created[20]!.id);
    const rest = await call(`/api/v1/api-keys?after_id=${res.body.last_id}`, { token: user.token });
    expect(ids(rest)).toEqual([created[0]!.id]);
  });

  it.each([
    ['limit=101', 'limit'],
    ['limit=0', 'limit'],
    ['limit=ten', 'limit'],
    ['after_id=abc', 'after_id'],
    ['before_id=key_x', 'before_id'],
  ])('rejects %s with 400 naming the parameter', async (query, field) => {
    const user = await signUp();
    const error = expectError(await call(`/api/v1/api-keys?${query}`, { token: user.token }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe(field);
  });

  it('accepts limit=100', async () => {
    const user = await signUp();
    expect((await call('/api/v1/api-keys?limit=100', { token: user.token })).status).toBe(200);
  });

  it("shows nothing of another workspace's keys", async () => {
    const user = await signUp();
    const other = await signUp();
    await createKey(other);
    expect((await call('/api/v1/api-keys', { token: user.token })).body.data).toEqual([]);
  });

  it('shows a key the keys of its user in its workspace', async () => {
    const user = await signUp();
    const first = await createKey(user);
    const lister = await createKey(user, ['agent:list']);
    const res = await call('/api/v1/api-keys', { apiKey: lister.key });
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([lister.id, first.id]);
  });

  it('needs agent:list', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    const error = expectError(await call('/api/v1/api-keys', { apiKey: key.key }), 403, 'FORBIDDEN');
    expect(error.details).toEqual({ scope: 'agent:list' });
  });

  it('answers 401 UNAUTHORIZED without a usable credential', async () => {
    expectError(await call('/api/v1/api-keys'), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/api-keys', { apiKey: 'sk_live_garbage' }), 401, 'UNAUTHORIZED');
  });
});

describe('POST /api/v1/api-keys/:id/revoke', () => {
  it('revokes by key_N: 200 with status revoked and revokedAt; the key fails from its next request', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);

    const res = await revoke(key.id, { token: user.token });
    expect(res.status).toBe(200);
    const { key: _key, ...record } = key as typeof key & Record<string, unknown>;
    expect(res.body).toEqual({ ...record, status: 'revoked', revokedAt: expect.stringMatching(ISO) });
    expect(res.body).not.toHaveProperty('key');

    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/memory', { apiKey: key.key }), 403, 'FORBIDDEN');

    const row = await apiKeyRow(key.id);
    expect(row!.status).toBe('revoked');
    expect(row!.revoked_at).not.toBeNull();
    const listed = await call('/api/v1/api-keys', { token: user.token });
    expect(listed.body.data[0]).toMatchObject({ id: key.id, status: 'revoked', revokedAt: res.body.revokedAt });
  });

  it('revokes by the bare number N', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const res = await revoke(String(numericId(key.id)), { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: key.id, status: 'revoked', revokedAt: expect.stringMatching(ISO) });
    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
  });

  it('answers 200 again, unchanged, when the key is already revoked', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const first = await revoke(key.id, { token: user.token });
    const again = await revoke(key.id, { token: user.token });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('lets a key with profile:write revoke another key, or itself', async () => {
    const user = await signUp();
    const admin = await createKey(user, ['profile:read', 'profile:write']);
    const victim = await createKey(user);
    expect((await revoke(victim.id, { apiKey: admin.key })).body.status).toBe('revoked');
    expect((await revoke(admin.id, { apiKey: admin.key })).body.status).toBe('revoked');
    expectError(await call('/api/v1/profile', { apiKey: admin.key }), 403, 'FORBIDDEN');
  });

  it('needs profile:write', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const error = expectError(await revoke(key.id, { apiKey: key.key }), 403, 'FORBIDDEN');
    expect(error.details).toEqual({ scope: 'profile:write' });
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
  });

  it("answers 404 NOT_FOUND for another workspace's key and leaves it working", async () => {
    const user = await signUp();
    const other = await signUp();
    const theirs = await createKey(other, ['*']);
    expectError(await revoke(theirs.id, { token: user.token }), 404, 'NOT_FOUND');
    expectError(await revoke(String(numericId(theirs.id)), { token: user.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/profile', { apiKey: theirs.key })).status).toBe(200);
    expect((await apiKeyRow(theirs.id))!.status).toBe('active');
  });

  it("answers 404 NOT_FOUND for another member's key in the same workspace", async () => {
    const owner = await signUp();
    const member = await signUp();
    const asMember = await joinOwnersWorkspace(owner, member);
    const ownerKey = await createKey(owner, ['*']);
    expectError(await revoke(ownerKey.id, asMember), 404, 'NOT_FOUND');
    expect((await call('/api/v1/profile', { apiKey: ownerKey.key })).status).toBe(200);
  });

  it.each(['key_abc', 'key_0', '0', 'exec_1', 'key_99999999'])('answers 404 NOT_FOUND for the id %s', async (id) => {
    const user = await signUp();
    await createKey(user);
    expectError(await revoke(id, { token: user.token }), 404, 'NOT_FOUND');
  });

  it('answers 401 UNAUTHORIZED without a credential', async () => {
    const user = await signUp();
    const key = await createKey(user);
    expectError(await revoke(key.id, {}), 401, 'UNAUTHORIZED');
    expect((await apiKeyRow(key.id))!.status).toBe('active');
  });
});

describe('stored idempotent answers', () => {
  it('keep a new key encrypted at rest, and replay it intact', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': 'sealed-at-rest' };
    const first = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'sealed' } });
    const rows = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT body FROM idempotency_records WHERE key = ?')
      .bind('sealed-at-rest')
      .all<{ body: string }>();
    expect(rows.results).toHaveLength(1);
    expect(rows.results[0]!.body.startsWith('enc:')).toBe(true);
    expect(rows.results[0]!.body).not.toContain(first.body.key);
    const replay = await call('/api/v1/api-keys', { token: user.token, headers, body: { name: 'sealed' } });
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.body.key).toBe(first.body.key);
  });
});
