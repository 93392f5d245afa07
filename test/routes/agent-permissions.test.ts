import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { connectMcp, failure, ok } from '../helpers/mcp';

/** RFC 8628's consonant alphabet, as `XXXX-XXXX`. */
const LINK_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

afterEach(() => resetClock());

const keyScopes = async (id: string) => {
  const row = await env.DB.prepare('SELECT scopes, status FROM api_keys WHERE id = ?')
    .bind(Number(id.slice(4)))
    .first<{ scopes: string; status: string }>();
  return { scopes: (JSON.parse(row!.scopes) as string[]).sort(), status: row!.status };
};

const connect = (apiKey: string, body: unknown = {}) => call('/api/v1/agents/connect', { apiKey, body });
const pollConsent = (apiKey: string, id: string) => call(`/api/v1/agents/connect/poll/${id}`, { apiKey });
const approveConsent = (user: TestUser, id: string, body: unknown = {}) => call(`/api/v1/agents/consents/${id}/approve`, { token: user.token, body });
const denyConsent = (user: TestUser, id: string) => call(`/api/v1/agents/consents/${id}/deny`, { token: user.token, method: 'POST' });
const requestPermission = (apiKey: string, body: unknown) => call('/api/v1/agents/request-permission', { apiKey, body });
const pollRequest = (apiKey: string, id: string) => call(`/api/v1/agents/request-permission/poll/${id}`, { apiKey });
const approveRequest = (user: TestUser, id: string, body: unknown = {}) =>
  call(`/api/v1/agents/permission-requests/${id}/approve`, { token: user.token, body });
const denyRequest = (user: TestUser, id: string) => call(`/api/v1/agents/permission-requests/${id}/deny`, { token: user.token, method: 'POST' });
const readMemory = (apiKey: string, headers: Record<string, string> = {}) => call('/api/v1/memory', { apiKey, headers });

/** A pending request for `scope`, approved by its owner in `mode`. */
async function granted(user: TestUser, apiKey: string, scope: string, mode: string) {
  const asked = await requestPermission(apiKey, { scope, reason: 'to read the notes', mode });
  expect(asked.status).toBe(202);
  expect((await approveRequest(user, asked.body.request_id)).status).toBe(200);
  return asked.body.request_id as string;
}

describe('POST /api/v1/agents/connect', () => {
  it('answers 200 active when the active key already holds the scopes, defaulting to profile:read and agent:list', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const res = await connect(key.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'active', scopes: ['profile:read', 'agent:list'] });
    expect((await connect(key.key, { requestedScopes: ['agent:list'] })).body.status).toBe('active');
  });

  it('opens a pending consent (202) with a link code, a poll url and a 3 s interval when a scope is missing', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const res = await connect(key.key, { requestedScopes: ['memory:read', 'tool:execute'], agentDisplayName: 'Coder', reason: 'to run skills' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      status: 'pending',
      consent_id: expect.stringMatching(UUID),
      link_code: expect.stringMatching(LINK_CODE),
      poll_url: `${BASE}/api/v1/agents/connect/poll/${res.body.consent_id}`,
      poll_interval_seconds: 3,
      approval_url: `${BASE}/approve?code=${res.body.link_code}`,
      expires_at: expect.stringMatching(ISO),
    });
    expect(Date.parse(res.body.expires_at) - Date.now()).toBeGreaterThan(4.9 * 60_000);
    expect((await pollConsent(key.key, res.body.consent_id)).body).toEqual({ status: 'pending' });
  });

  it('always pends for a wildcard key, and approving narrows the key to the approved scopes', async () => {
    const user = await signUp();
    const key = await createKey(user, ['*']);
    const res = await connect(key.key, { requestedScopes: ['profile:read', 'memory:read'] });
    expect(res.status).toBe(202);
    const approved = await approveConsent(user, res.body.consent_id, { scopes: ['memory:read'] });
    expect(approved.status).toBe(200);
    expect(approved.body.scopes).toEqual(['memory:read']);
    expect(await keyScopes(key.id)).toEqual({ scopes: ['memory:read'], status: 'active' });
    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
    expect((await readMemory(key.key)).status).toBe(200);
  });

  it('rejects unknown scopes, the wildcard and over-long reasons with 400 and the field', async () => {
    const user = await signUp();
    const key = await createKey(user);
    expect(expectError(await connect(key.key, { requestedScopes: ['nope:read'] }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'requestedScopes.0',
    });
    expect(expectError(await connect(key.key, { requestedScopes: ['*'] }), 400, 'INVALID_INPUT').details?.field).toBe('requestedScopes.0');
    expect(expectError(await connect(key.key, { reason: 'x'.repeat(281) }), 400, 'INVALID_INPUT').details?.field).toBe('reason');
    expect(expectError(await connect(key.key, { requestedScopes: 'memory:read' }), 400, 'INVALID_INPUT').details?.field).toBe('requestedScopes');
  });

  it('is for API keys: a session is 403 and no credential 401', async () => {
    const user = await signUp();
    expectError(await call('/api/v1/agents/connect', { token: user.token, body: {} }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/agents/connect', { body: {} }), 401, 'UNAUTHORIZED');
  });
});

describe('a consent from pending to granted', () => {
  it('is found by link code, approved (narrowed), and the first granted poll alone carries the grant token', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const pending = await connect(key.key, { requestedScopes: ['memory:read', 'memory:write'], agentDisplayName: 'Notes bot', reason: 'to keep notes' });

    const found = await call('/api/v1/agents/connect/by-code', {
      token: user.token,
      body: { link_code: pending.body.link_code.toLowerCase().replace('-', ' ') },
    });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({
      kind: 'consent',
      consent_id: pending.body.consent_id,
      status: 'pending',
      agent_display_name: 'Notes bot',
      reason: 'to keep notes',
      key: { id: key.id, name: expect.any(String) },
      requested_scopes: [
        { scope: 'memory:read', sensitive: false },
        { scope: 'memory:write', sensitive: true },
      ],
    });

    expectError(await approveConsent(user, pending.body.consent_id, { scopes: ['tool:execute'] }), 400, 'INVALID_INPUT');
    const approved = await approveConsent(user, pending.body.consent_id, { scopes: ['memory:read'] });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: 'granted', granted_scopes: ['memory:read'] });

    const first = await pollConsent(key.key, pending.body.consent_id);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      status: 'granted',
      scopes: expect.arrayContaining(['profile:read', 'agent:list', 'memory:read']),
      grant_token: expect.stringMatching(/^pgt_[A-Za-z0-9_-]{43}$/),
      token_header: 'x-permission-grant',
    });
    expect(first.body.scopes).not.toContain('memory:write');
    const second = await pollConsent(key.key, pending.body.consent_id);
    expect(second.body).toEqual({ status: 'granted', scopes: first.body.scopes });

    // The original call, retried with the same key (and the token, which is accepted).
    expect((await readMemory(key.key, { 'x-permission-grant': first.body.grant_token })).status).toBe(200);
    expect((await readMemory(key.key)).status).toBe(200);
    expectError(await call('/api/v1/memory', { apiKey: key.key, method: 'PUT', body: { content: 'x' } }), 403, 'FORBIDDEN');
  });

  it('answers 409 CONFLICT to a second decision and denied to the poll after a denial', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const a = await connect(key.key, { requestedScopes: ['memory:read'] });
    expect((await approveConsent(user, a.body.consent_id)).status).toBe(200);
    expectError(await approveConsent(user, a.body.consent_id), 409, 'CONFLICT');
    expectError(await denyConsent(user, a.body.consent_id), 409, 'CONFLICT');

    const b = await connect(key.key, { requestedScopes: ['billing:read'] });
    const denied = await denyConsent(user, b.body.consent_id);
    expect(denied.status).toBe(200);
    expect(denied.body.status).toBe('denied');
    expect((await pollConsent(key.key, b.body.consent_id)).body).toEqual({ status: 'denied' });
    expectError(await approveConsent(user, b.body.consent_id), 409, 'CONFLICT');
    expect((await keyScopes(key.id)).scopes).not.toContain('billing:read');
  });

  it('two decisions racing: exactly one lands (and is audited), the other is 409 CONFLICT', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const pending = await connect(key.key, { requestedScopes: ['memory:read', 'billing:read'] });
    const answers = await Promise.all([
      approveConsent(user, pending.body.consent_id, { scopes: ['memory:read'] }),
      approveConsent(user, pending.body.consent_id, { scopes: ['billing:read'] }),
      denyConsent(user, pending.body.consent_id),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    for (const lost of answers.filter((a) => a.status === 409)) expectError(lost, 409, 'CONFLICT');
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    const decisions = audit.body.data.filter(
      (e: { action: string; resourceId: string }) =>
        e.resourceId === pending.body.consent_id && (e.action === 'agent.consent_approved' || e.action === 'agent.consent_denied'),
    );
    expect(decisions).toHaveLength(1);
    const scopes = (await keyScopes(key.id)).scopes;
    expect(scopes.filter((s) => s === 'memory:read' || s === 'billing:read').length).toBeLessThanOrEqual(1);
  });

  it('expires after 5 minutes: the poll says expired and a late decision is 410 EXPIRED', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const pending = await connect(key.key, { requestedScopes: ['memory:read'] });
    advanceClock(5 * 60_000 - 1000);
    expect((await pollConsent(key.key, pending.body.consent_id)).body).toEqual({ status: 'pending' });
    advanceClock(1001);
    expect((await pollConsent(key.key, pending.body.consent_id)).body).toEqual({ status: 'expired' });
    expectError(await approveConsent(user, pending.body.consent_id), 410, 'EXPIRED');
    expectError(await denyConsent(user, pending.body.consent_id), 410, 'EXPIRED');
    const found = await call('/api/v1/agents/connect/by-code', { token: user.token, body: { link_code: pending.body.link_code } });
    expect(found.body.status).toBe('expired');
  });

  it('is 404 for an unknown consent, another key of the same person, and another workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    const key = await createKey(user);
    const sibling = await createKey(user);
    const pending = await connect(key.key, { requestedScopes: ['memory:read'] });
    expectError(await pollConsent(key.key, '0190a7c2-0000-7000-8000-000000000000'), 404, 'NOT_FOUND');
    expectError(await pollConsent(key.key, 'not-an-id'), 404, 'NOT_FOUND');
    expectError(await pollConsent(sibling.key, pending.body.consent_id), 404, 'NOT_FOUND');
    expectError(await approveConsent(other, pending.body.consent_id), 404, 'NOT_FOUND');
    expectError(await denyConsent(other, pending.body.consent_id), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/agents/connect/by-code', { token: other.token, body: { link_code: pending.body.link_code } }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/agents/connect/by-code', { token: user.token, body: { link_code: 'AAAA-AAAA' } }), 404, 'NOT_FOUND');
    expect(expectError(await call('/api/v1/agents/connect/by-code', { token: user.token, body: {} }), 400, 'INVALID_INPUT').details?.field).toBe('link_code');
    // The decision routes are the app's: an API key cannot approve its own consent.
    expectError(await call(`/api/v1/agents/consents/${pending.body.consent_id}/approve`, { apiKey: key.key, body: {} }), 403, 'FORBIDDEN');
  });
});

describe('GET /api/v1/agents/consents', () => {
  it("lists the person's consents in this workspace, newest first, by status; an expired one is not pending", async () => {
    const user = await signUp();
    const other = await signUp();
    const key = await createKey(user);
    const older = await connect(key.key, { requestedScopes: ['memory:read'], agentDisplayName: 'Old agent', reason: 'earlier' });
    advanceClock(6 * 60_000); // past the older consent's 5-minute window
    const pending = await connect(key.key, { requestedScopes: ['memory:read', 'tool:execute'], agentDisplayName: 'Coder', reason: 'to run skills' });
    await connect((await createKey(other)).key, { requestedScopes: ['memory:read'] });

    const list = await call('/api/v1/agents/consents?status=pending', { token: user.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      {
        kind: 'consent',
        consent_id: pending.body.consent_id,
        status: 'pending',
        agent_display_name: 'Coder',
        reason: 'to run skills',
        key: { id: key.id, name: expect.any(String) },
        requested_scopes: [
          { scope: 'memory:read', sensitive: false },
          { scope: 'tool:execute', sensitive: true },
        ],
        granted_scopes: null,
        created_at: expect.stringMatching(ISO),
        expires_at: expect.stringMatching(ISO),
        decided_at: null,
      },
    ]);
    const all = await call('/api/v1/agents/consents', { token: user.token });
    expect(all.body.data.map((c: { consent_id: string; status: string }) => [c.consent_id, c.status])).toEqual([
      [pending.body.consent_id, 'pending'],
      [older.body.consent_id, 'expired'],
    ]);
    expect((await call('/api/v1/agents/consents?status=expired', { token: user.token })).body.data).toHaveLength(1);

    await approveConsent(user, pending.body.consent_id, { scopes: ['memory:read'] });
    const decided = await call('/api/v1/agents/consents?status=granted', { token: user.token });
    expect(decided.body.data).toMatchObject([{ consent_id: pending.body.consent_id, status: 'granted', granted_scopes: ['memory:read'] }]);
    expect((await call('/api/v1/agents/consents?status=pending', { token: user.token })).body.data).toEqual([]);

    // Another workspace of the same person holds none of them.
    const team = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    expect((await call('/api/v1/agents/consents', { token: user.token, headers: { 'x-workspace-id': team.body.id } })).body.data).toEqual([]);
    expect(expectError(await call('/api/v1/agents/consents?status=maybe', { token: user.token }), 400, 'INVALID_INPUT').details?.field).toBe('status');
    expect(expectError(await call('/api/v1/agents/consents?limit=0', { token: user.token }), 400, 'INVALID_INPUT').details?.field).toBe('limit');
    expectError(await call('/api/v1/agents/consents', { apiKey: key.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/agents/consents'), 401, 'UNAUTHORIZED');
  });
});

describe('unactivated keys (spec 3.5)', () => {
  it('get 403 on every call until a consent is approved, then work', async () => {
    const user = await signUp();
    const key = await createKey(user, undefined, { pendingActivation: true });
    expect(key.status).toBe('unactivated');
    expectError(await call('/api/v1/profile', { apiKey: key.key }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/api-keys', { apiKey: key.key }), 403, 'FORBIDDEN');

    // Even when it holds the scopes, an unactivated key is not `active`: the consent activates it.
    const pending = await connect(key.key);
    expect(pending.status).toBe(202);
    expect((await pollConsent(key.key, pending.body.consent_id)).body).toEqual({ status: 'pending' });
    expect((await approveConsent(user, pending.body.consent_id)).status).toBe(200);
    expect(await keyScopes(key.id)).toEqual({ scopes: ['agent:list', 'profile:read'], status: 'active' });
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
    const again = await connect(key.key);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('active');
    expect(again.body.scopes.sort()).toEqual(['agent:list', 'profile:read']);
  });

  it('cannot request a permission: 409 ACTIVATION_REQUIRED with the activation url', async () => {
    const user = await signUp();
    const key = await createKey(user, undefined, { pendingActivation: true });
    const error = expectError(await requestPermission(key.key, { scope: 'memory:read', reason: 'notes' }), 409, 'ACTIVATION_REQUIRED');
    expect(error.details).toEqual({ activation_url: `${BASE}/api/v1/agents/connect` });
  });

  it('a revoked key is refused even on the agent routes', async () => {
    const user = await signUp();
    const key = await createKey(user);
    await call(`/api/v1/api-keys/${key.id}/revoke`, { token: user.token, method: 'POST' });
    expectError(await connect(key.key), 403, 'FORBIDDEN');
  });
});

describe('POST /api/v1/agents/request-permission', () => {
  it('validates scope and reason (1..280 characters) with 400 and the field', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const field = async (body: unknown) => expectError(await requestPermission(key.key, body), 400, 'INVALID_INPUT').details?.field;
    expect(await field({ scope: 'memory:read' })).toBe('reason');
    expect(await field({ scope: 'memory:read', reason: '' })).toBe('reason');
    expect(await field({ scope: 'memory:read', reason: '   ' })).toBe('reason');
    expect(await field({ scope: 'memory:read', reason: 'x'.repeat(281) })).toBe('reason');
    expect(await field({ scope: 'made:up', reason: 'why' })).toBe('scope');
    expect(await field({ scope: '*', reason: 'why' })).toBe('scope');
    expect(await field({ reason: 'why' })).toBe('scope');
    // 280 characters, counted as people count them (each emoji is one).
    expect((await requestPermission(key.key, { scope: 'memory:read', reason: '🙂'.repeat(280) })).status).toBe(202);
  });

  it('answers already_granted for a scope the key holds', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const res = await requestPermission(key.key, { scope: 'profile:read', reason: 'who am I' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'already_granted', grant_token: null });
  });

  it('opens a pending request (202) with a 2 s poll; an omitted or unknown mode becomes session', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const res = await requestPermission(key.key, { scope: 'memory:read', reason: 'to read the notes' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      status: 'pending',
      request_id: expect.stringMatching(UUID),
      poll_url: `${BASE}/api/v1/agents/request-permission/poll/${res.body.request_id}`,
      poll_interval_seconds: 2,
      link_code: expect.stringMatching(LINK_CODE),
      approval_url: `${BASE}/approve?code=${res.body.link_code}`,
      mode: 'session',
      expires_at: expect.stringMatching(ISO),
    });
    expect((await requestPermission(key.key, { scope: 'memory:read', reason: 'r', mode: 'forever' })).body.mode).toBe('session');
    expect((await requestPermission(key.key, { scope: 'memory:read', reason: 'r', mode: 'one_time' })).body.mode).toBe('one_time');
    expect((await pollRequest(key.key, res.body.request_id)).body).toEqual({ status: 'pending' });

    const list = await call('/api/v1/agents/permission-requests?status=pending', { token: user.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(3);
    expect(list.body.data[2]).toMatchObject({
      kind: 'permission_request',
      request_id: res.body.request_id,
      status: 'pending',
      scope: 'memory:read',
      sensitive: false,
      reason: 'to read the notes',
      requested_mode: 'session',
      mode: null,
      key: { id: key.id },
    });
    const byCode = await call('/api/v1/agents/connect/by-code', { token: user.token, body: { link_code: res.body.link_code } });
    expect(byCode.body).toMatchObject({ kind: 'permission_request', request_id: res.body.request_id });
    expectError(await call('/api/v1/agents/permission-requests?status=maybe', { token: user.token }), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/agents/permission-requests', { apiKey: key.key }), 403, 'FORBIDDEN');
  });

  it('a persistent grant is written to the key and polls as status and mode only', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const id = await granted(user, key.key, 'memory:read', 'persistent');
    expect((await pollRequest(key.key, id)).body).toEqual({ status: 'granted', mode: 'persistent' });
    expect((await keyScopes(key.id)).scopes).toContain('memory:read');
    advanceClock(2 * 3600_000);
    expect((await readMemory(key.key)).status).toBe(200);
    expect((await requestPermission(key.key, { scope: 'memory:read', reason: 'again' })).body.status).toBe('already_granted');
  });

  it('a session grant lasts 1 hour, is recorded against the key (not on it) and its token is shown once', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const t0 = Date.now();
    const id = await granted(user, key.key, 'memory:read', 'session');
    const first = await pollRequest(key.key, id);
    expect(first.body).toEqual({
      status: 'granted',
      mode: 'session',
      expires_at: expect.stringMatching(ISO),
      grant_token: expect.stringMatching(/^pgt_/),
      token_header: 'x-permission-grant',
    });
    expect(Date.parse(first.body.expires_at) - t0).toBeGreaterThanOrEqual(3600_000 - 1000);
    expect(Date.parse(first.body.expires_at) - t0).toBeLessThan(3600_000 + 60_000);
    expect((await pollRequest(key.key, id)).body).toEqual({ status: 'granted', mode: 'session', expires_at: first.body.expires_at });
    expect((await keyScopes(key.id)).scopes).not.toContain('memory:read');

    expect((await readMemory(key.key)).status).toBe(200);
    expect((await readMemory(key.key)).status).toBe(200);
    expect((await requestPermission(key.key, { scope: 'memory:read', reason: 'again' })).body.status).toBe('already_granted');
    advanceClock(3600_000 + 1000);
    expect(expectError(await readMemory(key.key), 403, 'FORBIDDEN').details).toEqual({ scope: 'memory:read' });
  });

  it('a one-time grant is used by exactly one of two simultaneous requests', async () => {
    const user = await signUp();
    const key = await createKey(user);
    await granted(user, key.key, 'memory:read', 'one_time');
    const results = await Promise.all([readMemory(key.key), readMemory(key.key)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 403]);
    expectError(await readMemory(key.key), 403, 'FORBIDDEN');
  });

  it('a one-time grant ends unused after 5 minutes, and x-permission-grant picks the grant to spend', async () => {
    const user = await signUp();
    const key = await createKey(user);
    await granted(user, key.key, 'memory:read', 'one_time');
    advanceClock(5 * 60_000 + 1000);
    expectError(await readMemory(key.key), 403, 'FORBIDDEN');

    const a = await granted(user, key.key, 'memory:read', 'one_time');
    const b = await granted(user, key.key, 'memory:read', 'one_time');
    const tokenB = (await pollRequest(key.key, b)).body.grant_token;
    expect(tokenB).toMatch(/^pgt_/);
    expect((await readMemory(key.key, { 'x-permission-grant': tokenB })).status).toBe(200);
    const consumed = await env.DB.prepare('SELECT id FROM permission_requests WHERE consumed_at IS NOT NULL AND id IN (?, ?)').bind(a, b).all();
    expect(consumed.results).toEqual([{ id: b }]);
    // The used token is ignored; the remaining grant serves the next request.
    expect((await readMemory(key.key, { 'x-permission-grant': tokenB })).status).toBe(200);
    expectError(await readMemory(key.key, { 'x-permission-grant': tokenB }), 403, 'FORBIDDEN');
  });

  it('grants are honoured by MCP tools too: a one-time grant serves one tool call', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const client = new Client({ name: 'grant-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
        requestInit: { headers: { 'x-api-key': key.key } },
        fetch: (url, init) => exports.default.fetch(new Request(url, init)),
      }),
    );
    const codeOf = (result: Awaited<ReturnType<Client['callTool']>>) =>
      result.isError ? JSON.parse((result.content as { text: string }[])[0]!.text).error.code : 'OK';
    expect(codeOf(await client.callTool({ name: 'read-memory', arguments: {} }))).toBe('FORBIDDEN');
    await granted(user, key.key, 'memory:read', 'one_time');
    expect(codeOf(await client.callTool({ name: 'read-memory', arguments: {} }))).toBe('OK');
    expect(codeOf(await client.callTool({ name: 'read-memory', arguments: {} }))).toBe('FORBIDDEN');
  });

  it('the approver may change the mode; denial, a second decision and expiry behave like consents', async () => {
    const user = await signUp();
    const key = await createKey(user);
    const asked = await requestPermission(key.key, { scope: 'memory:write', reason: 'save', mode: 'persistent' });
    const approved = await approveRequest(user, asked.body.request_id, { mode: 'one_time' });
    expect(approved.body).toMatchObject({ status: 'granted', mode: 'one_time', sensitive: true, grant_expires_at: expect.stringMatching(ISO) });
    expect((await pollRequest(key.key, asked.body.request_id)).body).toMatchObject({ status: 'granted', mode: 'one_time' });
    expectError(await approveRequest(user, asked.body.request_id), 409, 'CONFLICT');
    expect(expectError(await approveRequest(user, asked.body.request_id, { mode: 'sometimes' }), 400, 'INVALID_INPUT').details?.field).toBe('mode');

    const refused = await requestPermission(key.key, { scope: 'billing:read', reason: 'balance' });
    expect((await denyRequest(user, refused.body.request_id)).body.status).toBe('denied');
    expect((await pollRequest(key.key, refused.body.request_id)).body).toEqual({ status: 'denied' });
    expectError(await denyRequest(user, refused.body.request_id), 409, 'CONFLICT');

    const late = await requestPermission(key.key, { scope: 'stats:read', reason: 'stats' });
    advanceClock(5 * 60_000 + 1);
    expect((await pollRequest(key.key, late.body.request_id)).body).toEqual({ status: 'expired' });
    expectError(await approveRequest(user, late.body.request_id), 410, 'EXPIRED');
    const expired = await call('/api/v1/agents/permission-requests?status=expired', { token: user.token });
    expect(expired.body.data.map((r: { request_id: string }) => r.request_id)).toEqual([late.body.request_id]);
  });

  it('is 404 for an unknown request or one of another key or workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    const key = await createKey(user);
    const sibling = await createKey(user);
    const asked = await requestPermission(key.key, { scope: 'memory:read', reason: 'r' });
    expectError(await pollRequest(sibling.key, asked.body.request_id), 404, 'NOT_FOUND');
    expectError(await pollRequest(key.key, '0190a7c2-0000-7000-8000-000000000000'), 404, 'NOT_FOUND');
    expectError(await approveRequest(other, asked.body.request_id), 404, 'NOT_FOUND');
    expectError(await denyRequest(other, asked.body.request_id), 404, 'NOT_FOUND');
    expect((await call('/api/v1/agents/permission-requests', { token: other.token })).body.data).toEqual([]);
  });
});

describe('grants of a connector scope (connector:<app>:read|exec)', () => {
  const githubToken = () => `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const connectGithub = (apiKey: string) => call('/api/v1/connectors/github/connect', { apiKey, body: { token: githubToken() } });
  const createIssue = { connector: 'github', action: 'create_issue', input: { repo: 'octo-org/widgets', title: 'Granted once' } };

  it('a one-time grant of connector:github:exec serves one connect over REST, then the key is refused again', async () => {
    const user = await signUp();
    const key = await createKey(user, ['connector:list']);
    expect(expectError(await connectGithub(key.key), 403, 'FORBIDDEN').details).toEqual({ scope: 'connector:github:exec' });
    const id = await granted(user, key.key, 'connector:github:exec', 'one_time');
    const token = (await pollRequest(key.key, id)).body.grant_token;
    expect(
      (await call('/api/v1/connectors/github/connect', { apiKey: key.key, body: { token: githubToken() }, headers: { 'x-permission-grant': token } })).body
        .status,
    ).toBe('connected');
    const consumed = await env.DB.prepare('SELECT consumed_at FROM permission_requests WHERE id = ?').bind(id).first<{ consumed_at: number | null }>();
    expect(consumed!.consumed_at).not.toBeNull();
    expect(expectError(await connectGithub(key.key), 403, 'FORBIDDEN').details).toEqual({ scope: 'connector:github:exec' });
  });

  it('a one-time grant of connector:github:exec serves one MCP connector action; a session grant serves every call of its hour', async () => {
    const user = await signUp();
    expect((await call('/api/v1/connectors/github/connect', { token: user.token, body: { token: githubToken() } })).status).toBe(200);
    const key = await createKey(user, ['connector:list']);
    const client = await connectMcp({ 'x-api-key': key.key });
    const act = () => client.callTool({ name: 'run-connector-action', arguments: createIssue });
    expect(failure(await act(), 'FORBIDDEN').details).toEqual({ scope: 'connector:github:exec' });

    await granted(user, key.key, 'connector:github:exec', 'one_time');
    expect(ok(await act()).result).toMatchObject({ title: 'Granted once' });
    expect(failure(await act(), 'FORBIDDEN').details).toEqual({ scope: 'connector:github:exec' });

    await granted(user, key.key, 'connector:github:exec', 'session');
    expect(ok(await act()).action).toBe('create_issue');
    expect(ok(await act()).action).toBe('create_issue');
    expect(ok(await client.callTool({ name: 'disconnect-connector', arguments: { connector: 'github' } })).status).toBe('not_connected');
    advanceClock(3600_000 + 1000);
    expect(failure(await act(), 'FORBIDDEN').details).toEqual({ scope: 'connector:github:exec' });
  });

  it('a session grant of connector:github:read serves the source reads for its hour', async () => {
    const user = await signUp();
    expect((await call('/api/v1/connectors/github/connect', { token: user.token, body: { token: githubToken() } })).status).toBe(200);
    const key = await createKey(user, ['connector:list']);
    const client = await connectMcp({ 'x-api-key': key.key });
    const branches = () => client.callTool({ name: 'list-branches', arguments: { repo: 'octo-org/widgets' } });
    expect(failure(await branches(), 'FORBIDDEN').details).toEqual({ scope: 'connector:github:read' });
    await granted(user, key.key, 'connector:github:read', 'session');
    expect(ok(await branches()).branches).toHaveLength(3);
    expect(ok(await client.callTool({ name: 'get-source-content', arguments: { repo: 'octo-org/widgets', path: 'README.md' } })).encoding).toBe('utf-8');
  });
});

describe('DELETE /api/v1/agents/:keyId/scopes/:scope', () => {
  it('takes a scope off the key and ends its session grants', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read', 'agent:list', 'billing:read']);
    await granted(user, key.key, 'memory:read', 'session');
    expect((await readMemory(key.key)).status).toBe(200);

    const res = await call(`/api/v1/agents/${key.id}/scopes/billing:read`, { token: user.token, method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: key.id, scopes: ['profile:read', 'agent:list'] });
    expectError(await call('/api/v1/billing/balance', { apiKey: key.key }), 403, 'FORBIDDEN');

    expect((await call(`/api/v1/agents/${key.id}/scopes/memory:read`, { token: user.token, method: 'DELETE' })).status).toBe(200);
    expectError(await readMemory(key.key), 403, 'FORBIDDEN');
    // Harmless again; unknown scopes and other people's keys are refused.
    expect((await call(`/api/v1/agents/${key.id}/scopes/memory:read`, { token: user.token, method: 'DELETE' })).status).toBe(200);
    expect(
      expectError(await call(`/api/v1/agents/${key.id}/scopes/what:ever`, { token: user.token, method: 'DELETE' }), 400, 'INVALID_INPUT').details?.field,
    ).toBe('scope');
    const other = await signUp();
    expectError(await call(`/api/v1/agents/${key.id}/scopes/profile:read`, { token: other.token, method: 'DELETE' }), 404, 'NOT_FOUND');
    const audit = await call('/api/v1/audit-logs?action=api_key.scope_revoked', { token: user.token });
    expect(audit.body.data).toHaveLength(3);
  });
});
