import { env } from 'cloudflare:workers';
import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import type { CredentialGate } from '../../durable-objects/CredentialGate';
import { forgetCredentialOwners } from '../../workers/auth/credential-gate';
import { sha256Hex } from '../../workers/lib/crypto';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { bearer, raw, token as tokenEndpoint, tokensFor } from '../helpers/oauth';

afterEach(() => resetClock());

/**
 * Every credential is answered by its owner's CredentialGate, which remembers what D1 said.
 * These tests first make a request that succeeds (so the gate holds the credential), then
 * change the credential, then check the very next request.
 */

const gateOf = (user: TestUser) => env.CREDENTIAL_GATE.getByName(user.user.id);
const memory = (options: Parameters<typeof call>[1]) => call('/api/v1/memory', options);
const revokeOAuth = (form: Record<string, string>) =>
  raw('/auth/oauth2/revoke', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
/** Pins the clock just after a window starts, so a test's requests cannot straddle two windows. */
const pinWindow = () => advanceClock(60_000 - (Date.now() % 60_000) + 1);

describe('credential gate: counting', () => {
  it('lets exactly 100 of 101 concurrent requests of one key through; the other is 429', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    pinWindow();
    const answers = await Promise.all(Array.from({ length: 101 }, () => memory({ apiKey: key.key })));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(100);
    expectError(
      answers.find((r) => r.status !== 200)!,
      429,
      'RATE_LIMITED',
    );
  });

  it('keeps one count for a key whatever isolate asks and across the gate’s eviction', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    pinWindow();
    for (let i = 0; i < 5; i++) {
      const wave = await Promise.all(Array.from({ length: 20 }, () => memory({ apiKey: key.key })));
      expect(wave.every((r) => r.status === 200)).toBe(true);
      // The next wave arrives as in a fresh isolate, at a gate that lost its memory.
      forgetCredentialOwners();
      await evictDurableObject(gateOf(user));
    }
    const limited = await memory({ apiKey: key.key });
    expectError(limited, 429, 'RATE_LIMITED');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('counts a user’s sessions and OAuth access tokens together', async () => {
    const { user, tokens } = await tokensFor('profile:read');
    const bySession = await call('/api/v1/profile', { token: user.token });
    const byToken = await bearer(tokens.access_token);
    expect(byToken.status).toBe(200);
    expect(Number(byToken.headers.get('x-ratelimit-remaining'))).toBe(Number(bySession.headers.get('x-ratelimit-remaining')) - 1);
  });
});

describe('credential gate: a change counts from the very next request', () => {
  it('refuses a revoked key', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    expect((await memory({ apiKey: key.key })).status).toBe(200);
    expect((await call(`/api/v1/api-keys/${key.id}/revoke`, { token: user.token, method: 'POST' })).status).toBe(200);
    expectError(await memory({ apiKey: key.key }), 403, 'FORBIDDEN');
  });

  it('refuses a revoked OAuth access token, and the access tokens of a revoked refresh token', async () => {
    const access = await tokensFor('memory:read');
    expect((await bearer(access.tokens.access_token, '/api/v1/memory')).status).toBe(200);
    expect((await revokeOAuth({ token: access.tokens.access_token, client_id: access.clientId })).status).toBe(200);
    expectError(await bearer(access.tokens.access_token, '/api/v1/memory'), 401, 'UNAUTHORIZED');

    const family = await tokensFor('memory:read offline_access');
    expect((await bearer(family.tokens.access_token, '/api/v1/memory')).status).toBe(200);
    expect((await revokeOAuth({ token: family.tokens.refresh_token, client_id: family.clientId })).status).toBe(200);
    expectError(await bearer(family.tokens.access_token, '/api/v1/memory'), 401, 'UNAUTHORIZED');
  });

  it('refuses the access tokens of a family whose refresh token was reused', async () => {
    const { tokens, clientId } = await tokensFor('memory:read offline_access');
    const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId };
    const rotated = (await (await tokenEndpoint(refresh)).json()) as Record<string, string>;
    expect((await bearer(rotated.access_token!, '/api/v1/memory')).status).toBe(200);
    expect((await tokenEndpoint(refresh)).status).toBe(400);
    expectError(await bearer(rotated.access_token!, '/api/v1/memory'), 401, 'UNAUTHORIZED');
  });

  it('refuses a signed-out session', async () => {
    const user = await signUp();
    expect((await memory({ token: user.token })).status).toBe(200);
    expect((await call('/auth/sign-out', { token: user.token, method: 'POST' })).status).toBe(200);
    expectError(await memory({ token: user.token }), 401, 'UNAUTHORIZED');
  });

  it('follows a key’s scopes as they are taken away and granted', async () => {
    const user = await signUp();
    const key = await createKey(user, ['memory:read', 'profile:read']);
    expect((await memory({ apiKey: key.key })).status).toBe(200);
    expect((await call(`/api/v1/agents/${key.id}/scopes/memory:read`, { token: user.token, method: 'DELETE' })).status).toBe(200);
    expect(expectError(await memory({ apiKey: key.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'memory:read' });

    const asked = await call('/api/v1/agents/request-permission', { apiKey: key.key, body: { scope: 'memory:read', reason: 'notes', mode: 'persistent' } });
    expect(asked.status).toBe(202);
    expect((await call(`/api/v1/agents/permission-requests/${asked.body.request_id}/approve`, { token: user.token, body: {} })).status).toBe(200);
    expect((await memory({ apiKey: key.key })).status).toBe(200);
  });

  it('activates an unactivated key at its approval', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*'], { pendingActivation: true });
    const pending = await call('/api/v1/agents/connect', { apiKey: key.key, body: { requestedScopes: ['memory:read'] } });
    expect(pending.status).toBe(202);
    expectError(await memory({ apiKey: key.key }), 403, 'FORBIDDEN');
    expect((await call(`/api/v1/agents/consents/${pending.body.consent_id}/approve`, { token: user.token, body: {} })).status).toBe(200);
    expect((await memory({ apiKey: key.key })).status).toBe(200);
  });

  it('re-scopes a key moved to another workspace, and a session that chose one', async () => {
    const user = await signUp();
    const team = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    expect(team.status).toBe(201);
    const inTeam = { token: user.token, headers: { 'x-workspace-id': team.body.id } };
    expect((await call('/api/v1/memory', { ...inTeam, method: 'PUT', body: { content: 'team notes' } })).status).toBe(200);
    expect((await call('/api/v1/memory', { token: user.token, method: 'PUT', body: { content: 'personal notes' } })).status).toBe(200);

    const key = await createKey(user, ['*']);
    expect((await memory({ apiKey: key.key })).body.content).toBe('personal notes');
    expect((await call('/api/v1/workspaces/current', { apiKey: key.key, method: 'PUT', body: { workspace: team.body.id } })).status).toBe(200);
    expect((await memory({ apiKey: key.key })).body.content).toBe('team notes');

    expect((await memory({ token: user.token })).body.content).toBe('personal notes');
    expect((await call('/api/v1/workspaces/current', { token: user.token, method: 'PUT', body: { workspace: team.body.id } })).status).toBe(200);
    expect((await memory({ token: user.token })).body.content).toBe('team notes');
  });

  it('lets a session name a workspace from the moment it joins it', async () => {
    const [owner, joiner] = [await signUp(), await signUp()];
    const team = await call('/api/v1/workspaces', { token: owner.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    const inTeam = { token: joiner.token, headers: { 'x-workspace-id': team.body.id } };
    expectError(await memory(inTeam), 404, 'NOT_FOUND');
    const invitation = await call(`/api/v1/workspaces/${team.body.id}/invitations`, {
      token: owner.token,
      headers: { 'x-workspace-id': team.body.id },
      body: { email: joiner.email, role: 'member' },
    });
    expect((await call('/api/v1/invitations/accept', { token: joiner.token, body: { token: invitation.body.token } })).status).toBe(200);
    expect((await memory(inTeam)).status).toBe(200);
  });
});

describe('credential gate: a run’s launcher', () => {
  it('knows what a key holds in its workspace from the key’s own resolution, without reading D1 again, until a change', async () => {
    const user = await signUp();
    const key = await createKey(user, ['memory:read', 'tool:execute']);
    expect((await memory({ apiKey: key.key })).status).toBe(200);
    const actor = {
      userId: user.user.id,
      workspaceId: user.workspaceId,
      shard: user.shard,
      role: 'owner' as const,
      credential: { type: 'api_key' as const, apiKeyId: Number(key.id.replace(/^key_/, '')) },
      scopes: key.scopes,
      origin: { requestId: 'test', ip: null, userAgent: null },
    };
    // With the gate's database taken away, a launcher check that read D1 would throw.
    const withoutD1 = () =>
      runInDurableObject(gateOf(user), async (gate: CredentialGate) => {
        const db = gate['db'];
        Object.assign(gate, {
          db: new Proxy(
            {},
            {
              get: () => {
                throw new Error('the gate read D1');
              },
            },
          ),
        });
        try {
          return await gate.launcher(actor);
        } finally {
          Object.assign(gate, { db });
        }
      });
    expect(await withoutD1()).toEqual({ role: 'owner', scopes: ['memory:read', 'tool:execute'] });

    // A change makes the gate forget it: the next check reads D1 and finds the key revoked.
    expect((await call(`/api/v1/api-keys/${key.id}/revoke`, { token: user.token, method: 'POST' })).status).toBe(200);
    await expect(withoutD1()).rejects.toThrow('the gate read D1');
    expect(await gateOf(user).launcher(actor)).toEqual({ gone: 'The credential that launched this run was revoked' });
  });
});

describe('credential gate: nothing secret held', () => {
  it('holds hashes, never a key or token, in its memory or its storage', async () => {
    const { user, tokens } = await tokensFor('memory:read');
    const key = await createKey(user, ['*']);
    for (const options of [{ apiKey: key.key }, { token: user.token }, { headers: { authorization: `Bearer ${tokens.access_token}` } }]) {
      expect((await memory(options)).status).toBe(200);
    }
    const held = await runInDurableObject(gateOf(user), (instance: CredentialGate, state) => {
      const records = (instance as unknown as { records: Map<string, unknown> }).records;
      return JSON.stringify({ records: [...records.keys()], storage: [...state.storage.kv.list()] });
    });
    for (const secret of [key.key, user.token, tokens.access_token]) {
      expect(held).not.toContain(secret);
      expect(held).toContain(await sha256Hex(secret));
    }
  });
});
