import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp } from '../helpers/api';

describe('GET /api/v1/profile', () => {
  it('describes the user, the workspace and the credential of a session', async () => {
    const user = await signUp('Ada Lovelace');
    const res = await call('/api/v1/profile', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: user.user.id,
      email: user.email,
      name: 'Ada Lovelace',
      createdAt: expect.any(String),
      workspace: { id: user.workspaceId, name: "Ada Lovelace's workspace", slug: expect.stringMatching(/^ada-lovelace-/), role: 'owner' },
      credential: { type: 'session', apiKeyId: null },
      scopes: ['*'],
    });
  });

  it('shows a key its own scopes', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read', 'memory:read']);
    const res = await call('/api/v1/profile', { apiKey: key.key });
    expect(res.body.credential).toEqual({ type: 'api_key', apiKeyId: key.id });
    expect(res.body.scopes).toEqual(['profile:read', 'memory:read']);
  });
});

describe('PATCH /api/v1/profile', () => {
  it('renames the user (trimmed) and ignores other fields', async () => {
    const user = await signUp('Old Name');
    const res = await call('/api/v1/profile', {
      method: 'PATCH',
      token: user.token,
      body: { name: '  New Name  ', email: 'hijack@example.test' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'New Name', email: user.email });
    expect((await call('/api/v1/profile', { token: user.token })).body.name).toBe('New Name');
  });

  it.each([[{}], [{ name: '   ' }], [{ name: 'x'.repeat(101) }], [{ name: 7 }]])('rejects %j naming the field', async (body) => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/profile', { method: 'PATCH', token: user.token, body }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('name');
  });

  it('needs profile:write', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    const error = expectError(await call('/api/v1/profile', { method: 'PATCH', apiKey: key.key, body: { name: 'x' } }), 403, 'FORBIDDEN');
    expect(error.message).toContain('profile:write');
  });
});
