import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, expectError, signUp, type TestUser } from '../helpers/api';
import { runHousekeeping } from '../helpers/housekeeping';

const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;
const KEY_FORMAT = /^sk_live_[A-Za-z0-9_-]{43}$/;

afterEach(() => resetClock());

const start = (body: unknown = { client_label: 'my laptop agent' }) => call('/api/v1/activate', { body });
const poll = (device_code: string) => call('/api/v1/activate/poll', { body: { device_code } });
const confirm = (user: TestUser, user_code: string, headers: Record<string, string> = {}) =>
  call('/api/v1/activate/confirm', { token: user.token, body: { user_code }, headers });
const deny = (user: TestUser, user_code: string) => call('/api/v1/activate/deny', { token: user.token, body: { user_code } });
/** Waits out the poll interval on the moved clock. */
const wait = (seconds: number) => advanceClock(seconds * 1000);

describe('POST /api/v1/activate', () => {
  it('starts a device authorization: device code, XXXX-XXXX user code, 600 s, 2 s interval', async () => {
    const res = await start();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      device_code: expect.stringMatching(/^dc_[A-Za-z0-9_-]{43}$/),
      user_code: expect.stringMatching(USER_CODE),
      verification_url: `${BASE}/activate`,
      verification_url_complete: `${BASE}/activate?user_code=${res.body.user_code}`,
      expires_in: 600,
      interval: 2,
    });
    // Stored hashed: neither code appears in the table.
    const rows = await env.DB.prepare('SELECT * FROM device_activations').all();
    const dump = JSON.stringify(rows.results);
    expect(dump).not.toContain(res.body.device_code);
    expect(dump).not.toContain(res.body.user_code.replace('-', ''));
  });

  it('needs a client_label: 400 with the field', async () => {
    expect(expectError(await start({}), 400, 'INVALID_INPUT').details?.field).toBe('client_label');
    expect(expectError(await start({ client_label: '  ' }), 400, 'INVALID_INPUT').details?.field).toBe('client_label');
    expect(expectError(await call('/api/v1/activate/poll', { body: {} }), 400, 'INVALID_INPUT').details?.field).toBe('device_code');
  });
});

describe('the device flow, pending to approved', () => {
  it('polls pending, slows a fast poller down, and delivers the key exactly once', async () => {
    const user = await signUp();
    const started = await start();
    const { device_code, user_code } = started.body;

    expect((await poll(device_code)).body).toEqual({ status: 'pending', interval: 2 });
    // Polled again within the interval: slow_down, and the interval grows by 5 s (RFC 8628 3.5).
    expect((await poll(device_code)).body).toEqual({ status: 'slow_down', interval: 7 });
    wait(2);
    expect((await poll(device_code)).body).toEqual({ status: 'slow_down', interval: 12 });
    wait(12);
    expect((await poll(device_code)).body).toEqual({ status: 'pending', interval: 12 });

    const lookup = await call(`/api/v1/activate/lookup?user_code=${user_code.toLowerCase()}`, { token: user.token });
    expect(lookup.status).toBe(200);
    expect(lookup.body).toEqual({
      user_code,
      client_label: 'my laptop agent',
      status: 'pending',
      scopes: ['profile:read', 'agent:list'],
      workspace: { id: user.workspaceId, name: expect.any(String) },
      created_at: expect.any(String),
      expires_at: expect.any(String),
    });

    const confirmed = await confirm(user, user_code);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ status: 'approved', client_label: 'my laptop agent', workspace: { id: user.workspaceId } });

    wait(12);
    const approved = await poll(device_code);
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({
      status: 'approved',
      api_key: expect.stringMatching(KEY_FORMAT),
      api_key_id: expect.stringMatching(/^key_\d+$/),
      workspace_id: user.workspaceId,
      scopes: ['profile:read', 'agent:list'],
    });

    // The key is active, bound to the confirming person's workspace, with the two scopes.
    const profile = await call('/api/v1/profile', { apiKey: approved.body.api_key });
    expect(profile.status).toBe(200);
    expect(profile.body.workspace.id).toBe(user.workspaceId);
    expect(profile.body.id).toBe(user.user.id);
    const keys = await call('/api/v1/api-keys', { token: user.token });
    expect(keys.body.data).toEqual([
      expect.objectContaining({ id: approved.body.api_key_id, name: 'my laptop agent', status: 'active', scopes: ['profile:read', 'agent:list'] }),
    ]);

    // Delivered once: the device code is spent.
    wait(12);
    const again = await poll(device_code);
    expect(expectError(again, 409, 'CONFLICT').details).toEqual({ status: 'delivered' });
    expect(JSON.stringify(again.body)).not.toContain(approved.body.api_key);
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['device_activation.approved', 'api_key.created']));
  });

  it('two polls racing for the approved key: one gets it, the other is refused', async () => {
    const user = await signUp();
    const { device_code, user_code } = (await start()).body;
    await confirm(user, user_code);
    const answers = await Promise.all([poll(device_code), poll(device_code), poll(device_code)]);
    const withKey = answers.filter((a) => a.body.api_key);
    expect(withKey).toHaveLength(1);
    const count = await env.DB.prepare('SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ?').bind(user.user.id).first<{ n: number }>();
    expect(count!.n).toBe(1);
  });

  it('binds the workspace the person is acting in', async () => {
    const user = await signUp();
    const team = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    expect(team.status).toBe(201);
    const { device_code, user_code } = (await start()).body;
    expect((await confirm(user, user_code, { 'x-workspace-id': team.body.id })).body.workspace.id).toBe(team.body.id);
    const approved = await poll(device_code);
    expect(approved.body.workspace_id).toBe(team.body.id);
    expect((await call('/api/v1/workspaces/current', { apiKey: approved.body.api_key })).body.id).toBe(team.body.id);
  });
});

describe('denied, expired and used codes', () => {
  it('a denied activation polls denied and its user code cannot be confirmed after', async () => {
    const user = await signUp();
    const { device_code, user_code } = (await start()).body;
    const denied = await deny(user, user_code);
    expect(denied.status).toBe(200);
    expect(denied.body.status).toBe('denied');
    expect((await poll(device_code)).body).toEqual({ status: 'denied' });
    expect((await poll(device_code)).body).toEqual({ status: 'denied' });
    expectError(await confirm(user, user_code), 409, 'CONFLICT');
  });

  it('user codes are single use', async () => {
    const user = await signUp();
    const other = await signUp();
    const { user_code } = (await start()).body;
    expect((await confirm(user, user_code)).status).toBe(200);
    expectError(await confirm(other, user_code), 409, 'CONFLICT');
    expectError(await deny(user, user_code), 409, 'CONFLICT');
    expectError(await call(`/api/v1/activate/lookup?user_code=${user_code}`, { token: user.token }), 409, 'CONFLICT');
  });

  it('expires after 600 seconds: polls say expired, the user code is 410 EXPIRED', async () => {
    const user = await signUp();
    const { device_code, user_code } = (await start()).body;
    wait(599);
    expect((await poll(device_code)).body.status).toBe('pending');
    wait(1);
    expect((await poll(device_code)).body).toEqual({ status: 'expired' });
    expectError(await call(`/api/v1/activate/lookup?user_code=${user_code}`, { token: user.token }), 410, 'EXPIRED');
    expectError(await confirm(user, user_code), 410, 'EXPIRED');
    expectError(await deny(user, user_code), 410, 'EXPIRED');
  });

  it('an approval not collected before the device code expires is lost', async () => {
    const user = await signUp();
    const { device_code, user_code } = (await start()).body;
    await confirm(user, user_code);
    wait(600);
    expect((await poll(device_code)).body).toEqual({ status: 'expired' });
  });

  it('the hourly job deletes activations a day after they expired', async () => {
    const old = (await start()).body;
    wait(600 + 24 * 3600);
    const fresh = (await start()).body;
    expect((await poll(old.device_code)).body).toEqual({ status: 'expired' });
    await runHousekeeping();
    expectError(await poll(old.device_code), 404, 'NOT_FOUND');
    expect((await poll(fresh.device_code)).body.status).toBe('pending');
  });

  it('unknown codes are 404; the app routes need a session', async () => {
    const user = await signUp();
    expectError(await poll('dc_unknown'), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/activate/lookup?user_code=BBBB-BBBB', { token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/activate/lookup?user_code=0000', { token: user.token }), 404, 'NOT_FOUND');
    expectError(await confirm(user, 'BBBB-BBBB'), 404, 'NOT_FOUND');
    expect(expectError(await call('/api/v1/activate/lookup', { token: user.token }), 400, 'INVALID_INPUT').details?.field).toBe('user_code');
    const { user_code } = (await start()).body;
    expectError(await call(`/api/v1/activate/lookup?user_code=${user_code}`), 401, 'UNAUTHORIZED');
    const key = await call('/api/v1/api-keys', { token: user.token, body: { name: 'k' } });
    expectError(await call('/api/v1/activate/confirm', { apiKey: key.body.key, body: { user_code } }), 403, 'FORBIDDEN');
  });
});
