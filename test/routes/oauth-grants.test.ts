import { afterEach, describe, expect, it } from 'vitest';
import { ACCESS_TOKEN_TTL_S } from '../../workers/auth/oauth/metadata';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp } from '../helpers/api';
import { authorizeCode, bearer, exchange, register, token } from '../helpers/oauth';

afterEach(() => resetClock());

/** A consent by `user` in `workspaceId` and its exchange: the app's tokens. */
async function connect(user: Awaited<ReturnType<typeof signUp>>, scope: string, clientName = 'Notes app', workspaceId = user.workspaceId) {
  const clientId = (await register({ client_name: clientName })).body.client_id as string;
  const flow = await authorizeCode(scope, { user: { ...user, workspaceId }, clientId });
  const res = await exchange(flow);
  expect(res.status).toBe(200);
  return { clientId, tokens: (await res.json()) as { access_token: string; refresh_token?: string } };
}

const grantsOf = async (sessionToken: string) => {
  const res = await call('/api/v1/oauth-grants', { token: sessionToken });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as Record<string, any>[];
};

describe('GET /api/v1/oauth-grants', () => {
  it("lists the signed-in person's connected apps in every workspace, newest first, with what each may do", async () => {
    const user = await signUp('Grant Lister');
    const team = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Team Room', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    const notes = await connect(user, 'profile:read memory:read offline_access', 'Notes app');
    const editor = await connect(user, 'memory:write', 'Editor', team.body.id);
    // Someone else's app is not theirs to see.
    await connect(await signUp('Other Person'), 'profile:read', 'Stranger app');

    const grants = await grantsOf(user.token);
    expect(grants.map((g) => g.clientName)).toEqual(['Editor', 'Notes app']);
    expect(grants[1]).toEqual({
      id: expect.any(String),
      clientId: notes.clientId,
      clientName: 'Notes app',
      clientUri: null,
      workspace: { id: user.workspaceId, name: expect.any(String) },
      scopes: ['profile:read', 'memory:read', 'offline_access'],
      createdAt: expect.any(String),
      lastTokenAt: expect.any(String),
      expiresAt: expect.any(String),
      revokedAt: null,
    });
    expect(grants[0]).toMatchObject({ clientId: editor.clientId, workspace: { id: team.body.id, name: 'Team Room' }, scopes: ['memory:write'] });

    // An app signed in without offline_access lets itself in for an hour: then it is gone from the list.
    advanceClock(ACCESS_TOKEN_TTL_S * 1000 + 1);
    expect((await grantsOf(user.token)).map((g) => g.clientName)).toEqual(['Notes app']);
  });

  it('is for a signed-in person only: an API key or an app is refused', async () => {
    const user = await signUp('Grant Keeper');
    const { tokens } = await connect(user, 'profile:read profile:write');
    expectError(await call('/api/v1/oauth-grants', { apiKey: (await createKey(user, ['*'])).key }), 403, 'FORBIDDEN');
    expectError(await bearer(tokens.access_token, '/api/v1/oauth-grants'), 403, 'FORBIDDEN');
  });
});

describe('POST /api/v1/oauth-grants/:id/revoke', () => {
  it("ends the app's access and refresh tokens at once and records it in the grant's workspace", async () => {
    const user = await signUp('Grant Revoker');
    const { clientId, tokens } = await connect(user, 'profile:read offline_access');
    // Used once, so the person's gate has the token in mind when the grant is revoked.
    expect((await bearer(tokens.access_token)).status).toBe(200);
    const [grant] = await grantsOf(user.token);

    const revoked = await call(`/api/v1/oauth-grants/${grant!.id}/revoke`, { method: 'POST', token: user.token });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: grant!.id, clientName: 'Notes app', revokedAt: expect.any(String), expiresAt: null });

    expect((await bearer(tokens.access_token)).status).toBe(401);
    const refresh = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId });
    expect(refresh.status).toBe(400);
    expect(await refresh.json()).toMatchObject({ error: 'invalid_grant' });
    expect(await grantsOf(user.token)).toEqual([]);

    // Again: the same answer, nothing more recorded.
    const again = await call(`/api/v1/oauth-grants/${grant!.id}/revoke`, { method: 'POST', token: user.token });
    expect(again.body).toEqual(revoked.body);
    const audit = await call('/api/v1/audit-logs?action=oauth_grant.revoked', { token: user.token });
    expect(audit.body.data).toEqual([
      expect.objectContaining({
        action: 'oauth_grant.revoked',
        resourceType: 'oauth_grant',
        resourceId: grant!.id,
        metadata: { clientId, clientName: 'Notes app' },
      }),
    ]);
  });

  it("is 404 for another person's grant and for an id of none, and leaves the grant working", async () => {
    const owner = await signUp('Grant Owner');
    const { tokens } = await connect(owner, 'profile:read');
    const [grant] = await grantsOf(owner.token);
    const other = await signUp('Grant Thief');
    expectError(await call(`/api/v1/oauth-grants/${grant!.id}/revoke`, { method: 'POST', token: other.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/oauth-grants/${crypto.randomUUID()}/revoke`, { method: 'POST', token: owner.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/oauth-grants/not-a-grant/revoke', { method: 'POST', token: owner.token }), 404, 'NOT_FOUND');
    expect((await bearer(tokens.access_token)).status).toBe(200);
  });
});
