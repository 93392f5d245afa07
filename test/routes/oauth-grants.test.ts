import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { ACCESS_TOKEN_TTL_S } from '../../workers/auth/oauth/metadata';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { ENDED_GRANT_KEPT_MS } from '../../workers/services/oauth-grants';
import { call, createKey, expectError, signUp } from '../helpers/api';
import { runHousekeeping } from '../helpers/housekeeping';
import { connectMcp } from '../helpers/mcp';
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

describe('housekeeping', () => {
  it('deletes a grant 30 days after it was revoked or its last token expired, with its MCP log level', async () => {
    const user = await signUp('Grant Ender');
    const revoked = await connect(user, 'memory:read offline_access', 'Revoked app');
    const client = await connectMcp({ authorization: `Bearer ${revoked.tokens.access_token}` });
    await client.setLoggingLevel('error');
    await client.close();
    // Two apps signed in for an hour only: one is revoked late, the other left to expire.
    await connect(user, 'profile:read', 'Late revoked app');
    await connect(user, 'profile:read', 'Expired app');
    const ids = Object.fromEntries((await grantsOf(user.token)).map((g) => [g.clientName as string, g.id as string]));
    const revoke = (name: string) => call(`/api/v1/oauth-grants/${ids[name]}/revoke`, { method: 'POST', token: user.token });
    expect((await revoke('Revoked app')).status).toBe(200);
    const logLevel = () => env.DB.prepare('SELECT level FROM mcp_log_levels WHERE credential = ?').bind(`oauth:${ids['Revoked app']}`).first();
    expect(await logLevel()).toEqual({ level: 'error' });

    // Just inside the window every grant is still there: revoking again answers it as it is.
    advanceClock(ENDED_GRANT_KEPT_MS - 60_000);
    await runHousekeeping();
    expect(await revoke('Revoked app')).toMatchObject({ status: 200, body: { revokedAt: expect.any(String) } });

    // Past it, the revoked grant is gone; those that expired an hour after they began are kept that hour longer.
    advanceClock(30 * 60_000);
    await runHousekeeping();
    expectError(await revoke('Revoked app'), 404, 'NOT_FOUND');
    expect(await logLevel()).toBeNull();
    expect((await revoke('Late revoked app')).status).toBe(200);

    advanceClock(ACCESS_TOKEN_TTL_S * 1000);
    await runHousekeeping();
    expectError(await revoke('Expired app'), 404, 'NOT_FOUND');
    // It had ended when it expired: revoking it later did not keep it longer.
    expectError(await revoke('Late revoked app'), 404, 'NOT_FOUND');
    // The app's registration outlives its grants: it signs the person in again as it is.
    await authorizeCode('profile:read', { user, clientId: revoked.clientId });
  });
});
