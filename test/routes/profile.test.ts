import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const patch = (user: TestUser, body: unknown) => call('/api/v1/profile', { method: 'PATCH', token: user.token, body });

const userRow = (user: TestUser) => env.DB.prepare('SELECT email, name FROM users WHERE id = ?').bind(user.user.id).first<{ email: string; name: string }>();

describe('GET /api/v1/profile', () => {
  it('describes the user, their workspace and the session credential, with scopes [*]', async () => {
    const user = await signUp('Ada Lovelace');
    const res = await call('/api/v1/profile', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: user.user.id,
      email: user.email,
      name: 'Ada Lovelace',
      createdAt: expect.stringMatching(ISO),
      workspace: {
        id: user.workspaceId,
        name: "Ada Lovelace's workspace",
        slug: expect.stringMatching(/^ada-lovelace/),
        role: 'owner',
      },
      credential: { type: 'session', apiKeyId: null },
      scopes: ['*'],
    });
  });

  it("describes an API key credential with the key's id and scopes", async () => {
    const user = await signUp('Key Holder');
    const key = await createKey(user, ['profile:read', 'memory:read']);
    const bySession = await call('/api/v1/profile', { token: user.token });
    const res = await call('/api/v1/profile', { apiKey: key.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...bySession.body,
      credential: { type: 'api_key', apiKeyId: key.id },
      scopes: ['profile:read', 'memory:read'],
    });
  });

  it('shows a * key the scopes [*]', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    const res = await call('/api/v1/profile', { apiKey: key.key });
    expect(res.body.credential).toEqual({ type: 'api_key', apiKeyId: key.id });
    expect(res.body.scopes).toEqual(['*']);
  });

  it('needs profile:read', async () => {
    const user = await signUp();
    const key = await createKey(user, ['memory:read']);
    const error = expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
    expect(error.details).toEqual({ scope: 'profile:read' });
  });

  it('answers 401 UNAUTHORIZED without a usable credential', async () => {
    expectError(await call('/api/v1/profile'), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/profile', { token: 'not-a-session' }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/profile', { apiKey: 'sk_live_garbage' }), 401, 'UNAUTHORIZED');
  });
});

describe('PATCH /api/v1/profile', () => {
  it('renames the user and answers the updated profile', async () => {
    const user = await signUp('Old Name');
    const before = await call('/api/v1/profile', { token: user.token });
    const res = await patch(user, { name: 'New Name' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...before.body, name: 'New Name' });
    expect((await call('/api/v1/profile', { token: user.token })).body).toEqual(res.body);
    expect(await userRow(user)).toEqual({ email: user.email, name: 'New Name' });
  });

  it('trims the name', async () => {
    const user = await signUp();
    const res = await patch(user, { name: '  Grace Hopper \n' });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Grace Hopper');
    expect((await userRow(user))!.name).toBe('Grace Hopper');
  });

  it('accepts a name of exactly 100 characters (after trimming)', async () => {
    const user = await signUp();
    const name = 'n'.repeat(100);
    const res = await patch(user, { name: `  ${name}  ` });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe(name);
  });

  it('keeps Unicode names exactly', async () => {
    const user = await signUp();
    const res = await patch(user, { name: 'Zoë Ñandú 山田 👩🏽‍🔬' });
    expect(res.status).toBe(200);
    expect((await call('/api/v1/profile', { token: user.token })).body.name).toBe('Zoë Ñandú 山田 👩🏽‍🔬');
  });

  it.each([
    ['a missing name', {}],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['a name over 100 characters', { name: 'x'.repeat(101) }],
    ['a non-string name', { name: 7 }],
    ['a null name', { name: null }],
  ])('rejects %s with 400 naming the field, keeping the name', async (_label, body) => {
    const user = await signUp('Kept Name');
    const error = expectError(await patch(user, body), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('name');
    expect((await userRow(user))!.name).toBe('Kept Name');
  });

  it('rejects a malformed JSON body with 400 field body', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/profile', { method: 'PATCH', token: user.token, rawBody: '{name:' }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'json' });
  });

  describe('email', () => {
    it('is never changed: extra fields beside name are ignored', async () => {
      const user = await signUp('Before');
      const res = await patch(user, { name: 'After', email: 'hijack@example.test', id: 'someone-else', scopes: ['*'] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: user.user.id, name: 'After', email: user.email });
      expect((await call('/api/v1/profile', { token: user.token })).body.email).toBe(user.email);
      expect(await userRow(user)).toEqual({ email: user.email, name: 'After' });
    });

    it('cannot be sent alone to change it: the patch still needs a name', async () => {
      const user = await signUp();
      const error = expectError(await patch(user, { email: 'hijack@example.test' }), 400, 'INVALID_INPUT');
      expect(error.details?.field).toBe('name');
      expect((await userRow(user))!.email).toBe(user.email);
    });

    it('still signs the user in with the original email after an attempted change', async () => {
      const user = await signUp();
      await patch(user, { name: 'Renamed', email: 'hijack@example.test' });
      const signIn = await call('/auth/sign-in/email', { body: { email: user.email, password: user.password } });
      expect(signIn.status).toBe(200);
      expect(signIn.body.user).toEqual({ id: user.user.id, email: user.email, name: 'Renamed' });
    });
  });

  it('lets a key with profile:write rename its user', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read', 'profile:write']);
    const res = await call('/api/v1/profile', { method: 'PATCH', apiKey: key.key, body: { name: 'Via Key' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Via Key', credential: { type: 'api_key', apiKeyId: key.id } });
    expect((await userRow(user))!.name).toBe('Via Key');
  });

  it('refuses a key without profile:write, naming it', async () => {
    const user = await signUp('Unchanged');
    const key = await createKey(user, ['profile:read']);
    const error = expectError(await call('/api/v1/profile', { method: 'PATCH', apiKey: key.key, body: { name: 'x' } }), 403, 'FORBIDDEN');
    expect(error.details).toEqual({ scope: 'profile:write' });
    expect(error.message).toContain('profile:write');
    expect((await userRow(user))!.name).toBe('Unchanged');
  });

  it('answers 401 UNAUTHORIZED without a credential', async () => {
    expectError(await call('/api/v1/profile', { method: 'PATCH', body: { name: 'x' } }), 401, 'UNAUTHORIZED');
  });
});
