import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';

afterEach(() => resetClock());

const DAY = 24 * 3600_000;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Entry {
  id: number;
  action: string;
  resourceType: string;
  resourceId: string;
  actor: { type: string; userId: string; apiKeyId: string | null };
  createdAt: string;
  [field: string]: unknown;
}

/** Session options acting in `workspace` through `x-workspace-id`. */
const inWorkspace = (user: TestUser, workspace: string) => ({ token: user.token, headers: { 'x-workspace-id': workspace } });

async function auditLogs(query: string, options: Parameters<typeof call>[1]) {
  const res = await call(`/api/v1/audit-logs${query}`, options);
  if (res.status !== 200) throw new Error(`audit-logs failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { data: Entry[]; first_id: string | null; last_id: string | null; has_more: boolean };
}

async function activity(query: string, options: Parameters<typeof call>[1]) {
  const res = await call(`/api/v1/activity${query}`, options);
  if (res.status !== 200) throw new Error(`activity failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { data: (Entry & { type: string; summary: string })[]; first_id: string | null; last_id: string | null; has_more: boolean };
}

async function writeMemory(options: Parameters<typeof call>[1], content: string) {
  const res = await call('/api/v1/memory', { method: 'PUT', ...options, body: { content } });
  if (res.status !== 200) throw new Error(`memory write failed: ${res.status} ${JSON.stringify(res.body)}`);
}

async function createWorkspace(user: TestUser, name = 'Team') {
  const res = await call('/api/v1/workspaces', { token: user.token, body: { name, slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
  if (res.status !== 201) throw new Error(`workspace creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; name: string; slug: string };
}

/** `owner` invites `joiner` into `workspaceId` (which must be usable through x-workspace-id) and `joiner` accepts. */
async function inviteAndJoin(owner: TestUser, joiner: TestUser, workspaceId: string, role: 'admin' | 'member' = 'member') {
  const invited = await call(`/api/v1/workspaces/${workspaceId}/invitations`, { ...inWorkspace(owner, workspaceId), body: { email: joiner.email, role } });
  if (invited.status !== 201) throw new Error(`invitation failed: ${invited.status} ${JSON.stringify(invited.body)}`);
  const accepted = await call('/api/v1/invitations/accept', { token: joiner.token, body: { token: invited.body.token } });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return invited.body as { id: number; email: string; role: string };
}

const actions = (page: { data: Entry[] }) => page.data.map((e) => e.action);

describe('GET /api/v1/audit-logs', () => {
  it("records a key's mutation with actor, origin and request id", async () => {
    const user = await signUp();
    const key = await createKey(user, ['memory:write', 'activity:read']);
    const put = await call('/api/v1/memory', {
      method: 'PUT',
      apiKey: key.key,
      body: { content: 'remember this' },
      headers: { 'cf-connecting-ip': '203.0.113.7', 'user-agent': 'audit-test/1.0', 'x-request-id': 'req-audit-123' },
    });
    expect(put.status).toBe(200);
    expect(put.headers.get('x-request-id')).toBe('req-audit-123');

    const res = await call('/api/v1/audit-logs?action=memory.updated', { apiKey: key.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          id: expect.any(Number),
          action: 'memory.updated',
          resourceType: 'memory',
          resourceId: user.workspaceId,
          actor: { type: 'api_key', userId: user.user.id, apiKeyId: key.id },
          ip: '203.0.113.7',
          userAgent: 'audit-test/1.0',
          requestId: 'req-audit-123',
          metadata: { length: 'remember this'.length },
          createdAt: expect.stringMatching(ISO),
        },
      ],
      first_id: expect.any(String),
      last_id: expect.any(String),
      has_more: false,
    });
    const [entry] = res.body.data;
    expect(res.body.first_id).toBe(String(entry.id));
    expect(Math.abs(Date.parse(entry.createdAt) - Date.now())).toBeLessThan(60_000);
    expect(key.id).toMatch(/^key_\d+$/);
  });

  it("records a session's mutation with actor type user and no key", async () => {
    const user = await signUp();
    await writeMemory({ token: user.token, headers: { 'x-request-id': 'req-session-1' } }, 'by hand');
    const page = await auditLogs('?action=memory.updated', { token: user.token });
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({
      action: 'memory.updated',
      resourceId: user.workspaceId,
      actor: { type: 'user', userId: user.user.id, apiKeyId: null },
      requestId: 'req-session-1',
    });
  });

  it('records api_key.created with the new key id, and api_key.revoked', async () => {
    const user = await signUp();
    const created = await call('/api/v1/api-keys', { token: user.token, body: { name: 'ci key', scopes: ['profile:read'] } });
    expect(created.status).toBe(201);
    const revoked = await call(`/api/v1/api-keys/${created.body.id}/revoke`, { method: 'POST', token: user.token });
    expect(revoked.status).toBe(200);

    const page = await auditLogs('', { token: user.token });
    expect(actions(page)).toEqual(['api_key.revoked', 'api_key.created', 'user.signed_up']);
    const [revokedEntry, createdEntry] = page.data;
    expect(createdEntry).toMatchObject({
      resourceType: 'api_key',
      resourceId: created.body.id,
      actor: { type: 'user', userId: user.user.id, apiKeyId: null },
      metadata: { name: 'ci key', scopes: ['profile:read'] },
    });
    expect(revokedEntry).toMatchObject({ resourceType: 'api_key', resourceId: created.body.id, actor: { type: 'user', apiKeyId: null } });
  });

  it('attributes a key created by a key to the creating key', async () => {
    const user = await signUp();
    const parent = await createKey(user, ['profile:write', 'profile:read', 'activity:read']);
    const child = await call('/api/v1/api-keys', { apiKey: parent.key, body: { name: 'child', scopes: ['profile:read'] } });
    expect(child.status).toBe(201);
    const page = await auditLogs('?action=api_key.created', { apiKey: parent.key });
    expect(page.data.map((e) => e.resourceId)).toEqual([child.body.id, parent.id]);
    expect(page.data[0]!.actor).toEqual({ type: 'api_key', userId: user.user.id, apiKeyId: parent.id });
    expect(page.data[1]!.actor).toEqual({ type: 'user', userId: user.user.id, apiKeyId: null });
  });

  it('records workspace.created in the new workspace, not in the one the caller was in', async () => {
    const user = await signUp();
    const team = await createWorkspace(user, 'Audited');
    const inTeam = await auditLogs('', inWorkspace(user, team.id));
    expect(inTeam.data).toHaveLength(1);
    expect(inTeam.data[0]).toMatchObject({
      action: 'workspace.created',
      resourceType: 'workspace',
      resourceId: team.id,
      actor: { type: 'user', userId: user.user.id, apiKeyId: null },
      metadata: { name: 'Audited', slug: team.slug },
    });
    expect(actions(await auditLogs('', { token: user.token }))).toEqual(['user.signed_up']);
  });

  it('records invitation.created and member.joined in the workspace joined', async () => {
    const owner = await signUp();
    const joiner = await signUp();
    const team = await createWorkspace(owner);
    const invitation = await inviteAndJoin(owner, joiner, team.id, 'admin');

    const page = await auditLogs('', inWorkspace(owner, team.id));
    expect(actions(page)).toEqual(['member.joined', 'invitation.created', 'workspace.created']);
    expect(page.data[1]).toMatchObject({
      resourceType: 'invitation',
      resourceId: String(invitation.id),
      actor: { type: 'user', userId: owner.user.id, apiKeyId: null },
      metadata: { email: joiner.email, role: 'admin' },
    });
    expect(page.data[0]).toMatchObject({
      resourceType: 'member',
      resourceId: joiner.user.id,
      actor: { type: 'user', userId: joiner.user.id, apiKeyId: null },
      metadata: { invitationId: invitation.id, role: 'admin' },
    });
    // The joiner (an admin now) sees the same log there, and nothing of it in their own workspace.
    expect(actions(await auditLogs('', inWorkspace(joiner, team.id)))).toEqual(actions(page));
    expect(actions(await auditLogs('', { token: joiner.token }))).toEqual(['user.signed_up']);
  });

  it('filters by action and by resource_type', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    await call(`/api/v1/api-keys/${key.id}/revoke`, { method: 'POST', token: user.token });
    await writeMemory({ token: user.token }, 'one');
    await writeMemory({ token: user.token }, 'two');

    const memory = await auditLogs('?action=memory.updated', { token: user.token });
    expect(actions(memory)).toEqual(['memory.updated', 'memory.updated']);
    const created = await auditLogs('?action=api_key.created', { token: user.token });
    expect(created.data.map((e) => e.resourceId)).toEqual([key.id]);
    const keys = await auditLogs('?resource_type=api_key', { token: user.token });
    expect(actions(keys)).toEqual(['api_key.revoked', 'api_key.created']);
    const both = await auditLogs('?resource_type=api_key&action=api_key.revoked', { token: user.token });
    expect(actions(both)).toEqual(['api_key.revoked']);
    const none = await auditLogs('?action=no.such.action', { token: user.token });
    expect(none).toEqual({ data: [], first_id: null, last_id: null, has_more: false });
  });

  it('filters by start_date and end_date, as date-times or whole days', async () => {
    const user = await signUp(); // its user.signed_up entry is from before day 1
    const realNow = Date.now();
    const day1Noon = Math.ceil(realNow / DAY) * DAY + 12 * 3600_000;
    advanceClock(day1Noon - realNow);
    await writeMemory({ token: user.token }, 'day 1');
    advanceClock(DAY);
    await writeMemory({ token: user.token }, 'day 2');
    advanceClock(DAY);
    await writeMemory({ token: user.token }, 'day 3');

    const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const [day1, day2, day3] = [date(day1Noon), date(day1Noon + DAY), date(day1Noon + 2 * DAY)];
    const days = (page: { data: Entry[] }) => page.data.map((e) => `${e.action}@${e.createdAt.slice(0, 10)}`);
    const opts = { token: user.token };

    expect(days(await auditLogs(`?start_date=${day2}`, opts))).toEqual([`memory.updated@${day3}`, `memory.updated@${day2}`]);
    expect(days(await auditLogs(`?start_date=${day2}&end_date=${day2}`, opts))).toEqual([`memory.updated@${day2}`]);
    const untilDay1 = await auditLogs(`?end_date=${day1}`, opts);
    expect(actions(untilDay1)).toEqual(['memory.updated', 'user.signed_up']);
    expect(untilDay1.data[0]!.createdAt.slice(0, 10)).toBe(day1);

    const from = new Date(day1Noon + DAY - 3600_000).toISOString();
    const to = new Date(day1Noon + DAY + 3600_000).toISOString();
    expect(days(await auditLogs(`?start_date=${from}&end_date=${to}`, opts))).toEqual([`memory.updated@${day2}`]);
    // The same window written with a +02:00 offset.
    const withOffset = (ms: number) => `${new Date(ms + 2 * 3600_000).toISOString().slice(0, 19)}%2B02:00`;
    expect(days(await auditLogs(`?start_date=${withOffset(day1Noon + DAY - 3600_000)}&end_date=${withOffset(day1Noon + DAY + 3600_000)}`, opts))).toEqual([
      `memory.updated@${day2}`,
    ]);
    // A window between entries is empty.
    const quiet = await auditLogs(
      `?start_date=${new Date(day1Noon + 3600_000).toISOString()}&end_date=${new Date(day1Noon + DAY - 3600_000).toISOString()}`,
      opts,
    );
    expect(quiet.data).toEqual([]);
  });

  it.each([
    ['start_date', 'yesterday'],
    ['start_date', '2026-13-45'],
    ['start_date', '2026-01-01T25:00:00Z'],
    ['end_date', 'soon'],
  ])('rejects %s=%s with 400 on that field', async (field, value) => {
    const user = await signUp();
    const error = expectError(await call(`/api/v1/audit-logs?${field}=${value}`, { token: user.token }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe(field);
  });

  it('pages newest first: 20 by default, after_id and before_id, limit up to 100', async () => {
    const user = await signUp();
    for (let i = 1; i <= 21; i++) await writeMemory({ token: user.token }, `note ${i}`);
    const opts = { token: user.token };

    const first = await auditLogs('', opts);
    expect(first.data).toHaveLength(20);
    expect(first.has_more).toBe(true);
    const ids = first.data.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(first.data[0]!.metadata).toEqual({ length: 'note 21'.length });
    expect(first.first_id).toBe(String(ids[0]));
    expect(first.last_id).toBe(String(ids[19]));

    const second = await auditLogs(`?after_id=${first.last_id}`, opts);
    expect(actions(second)).toEqual(['memory.updated', 'user.signed_up']);
    expect(second.has_more).toBe(false);
    expect(second.data[0]!.id).toBeLessThan(ids[19]!);

    const back = await auditLogs(`?before_id=${second.first_id}&limit=3`, opts);
    expect(back.data.map((e) => e.id)).toEqual(ids.slice(17, 20));
    expect(back.has_more).toBe(true);

    const all = await auditLogs('?limit=100', opts);
    expect(all.data).toHaveLength(22);
    expect(all.has_more).toBe(false);
    expect(all.data.map((e) => e.id)).toEqual([...ids, ...second.data.map((e) => e.id)]);

    for (const limit of ['0', '101']) {
      const error = expectError(await call(`/api/v1/audit-logs?limit=${limit}`, opts), 400, 'INVALID_INPUT');
      expect(error.details?.field).toBe('limit');
    }
    const badCursor = expectError(await call('/api/v1/audit-logs?after_id=abc', opts), 400, 'INVALID_INPUT');
    expect(badCursor.details?.field).toBe('after_id');
  });

  it("never shows another workspace's entries", async () => {
    const user = await signUp();
    const other = await signUp();
    await writeMemory({ token: user.token }, 'private');
    await createKey(user, ['profile:read']);
    const mine = await auditLogs('', { token: user.token });
    expect(actions(mine)).toEqual(['api_key.created', 'memory.updated', 'user.signed_up']);

    const theirs = await auditLogs('', { token: other.token });
    expect(actions(theirs)).toEqual(['user.signed_up']);
    expect(theirs.data[0]).toMatchObject({ resourceId: other.user.id, actor: { userId: other.user.id } });
    const mineIds = new Set(mine.data.map((e) => e.id));
    expect(theirs.data.some((e) => mineIds.has(e.id))).toBe(false);

    // A cursor from another workspace's log reveals nothing either.
    const probe = await auditLogs(`?before_id=${theirs.data[0]!.id}`, { token: user.token });
    expect(probe.data.every((e) => mineIds.has(e.id))).toBe(true);

    // Nor does another workspace of the same user.
    const team = await createWorkspace(user);
    expect(actions(await auditLogs('', inWorkspace(user, team.id)))).toEqual(['workspace.created']);
  });
});

describe('GET /api/v1/activity', () => {
  it('lists memory, key, invitation and membership changes, newest first', async () => {
    const owner = await signUp();
    const joiner = await signUp();
    const team = await createWorkspace(owner, 'Busy');
    const inTeam = inWorkspace(owner, team.id);
    await writeMemory(inTeam, 'plans');
    const key = await call('/api/v1/api-keys', { ...inTeam, body: { name: 'deploy key', scopes: ['activity:read'] } });
    expect(key.status).toBe(201);
    const invitation = await inviteAndJoin(owner, joiner, team.id);

    const res = await call('/api/v1/activity', inTeam);
    expect(res.status).toBe(200);
    const ownerActor = { type: 'user', userId: owner.user.id, apiKeyId: null };
    expect(res.body.data).toEqual([
      {
        id: expect.any(Number),
        type: 'member.joined',
        summary: `${joiner.email} joined as member`,
        resourceType: 'member',
        resourceId: joiner.user.id,
        actor: { type: 'user', userId: joiner.user.id, apiKeyId: null },
        createdAt: expect.stringMatching(ISO),
      },
      {
        id: expect.any(Number),
        type: 'invitation.created',
        summary: `${joiner.email} was invited as member`,
        resourceType: 'invitation',
        resourceId: String(invitation.id),
        actor: ownerActor,
        createdAt: expect.stringMatching(ISO),
      },
      {
        id: expect.any(Number),
        type: 'api_key.created',
        summary: 'API key "deploy key" was created',
        resourceType: 'api_key',
        resourceId: key.body.id,
        actor: ownerActor,
        createdAt: expect.stringMatching(ISO),
      },
      {
        id: expect.any(Number),
        type: 'memory.updated',
        summary: 'Working memory was updated',
        resourceType: 'memory',
        resourceId: team.id,
        actor: ownerActor,
        createdAt: expect.stringMatching(ISO),
      },
      {
        id: expect.any(Number),
        type: 'workspace.created',
        summary: 'Workspace "Busy" was created',
        resourceType: 'workspace',
        resourceId: team.id,
        actor: ownerActor,
        createdAt: expect.stringMatching(ISO),
      },
    ]);
    expect(res.body).toMatchObject({ first_id: String(res.body.data[0].id), last_id: String(res.body.data[4].id), has_more: false });

    // The key made in the workspace reads the same log, and its own writes carry it as actor.
    const byKey = await activity('', { apiKey: key.body.key });
    expect(byKey.data.map((e) => e.id)).toEqual(res.body.data.map((e: Entry) => e.id));
  });

  it('attributes a change made with a key to that key', async () => {
    const user = await signUp();
    const key = await createKey(user, ['memory:write', 'activity:read']);
    await writeMemory({ apiKey: key.key }, 'via key');
    const page = await activity('?type=memory.updated', { apiKey: key.key });
    expect(page.data).toHaveLength(1);
    expect(page.data[0]!.actor).toEqual({ type: 'api_key', userId: user.user.id, apiKeyId: key.id });
  });

  it('filters by type', async () => {
    const user = await signUp();
    await writeMemory({ token: user.token }, 'a');
    await createKey(user, ['profile:read']);
    await writeMemory({ token: user.token }, 'b');
    const memory = await activity('?type=memory.updated', { token: user.token });
    expect(memory.data.map((e) => e.type)).toEqual(['memory.updated', 'memory.updated']);
    const keys = await activity('?type=api_key.created', { token: user.token });
    expect(keys.data.map((e) => e.type)).toEqual(['api_key.created']);
    expect((await activity('?type=nothing.like.this', { token: user.token })).data).toEqual([]);
  });

  it('pages with limit and after_id, and validates them', async () => {
    const user = await signUp();
    for (let i = 0; i < 3; i++) await writeMemory({ token: user.token }, `n${i}`);
    const first = await activity('?limit=2', { token: user.token });
    expect(first.data).toHaveLength(2);
    expect(first.has_more).toBe(true);
    const rest = await activity(`?limit=2&after_id=${first.last_id}`, { token: user.token });
    expect(rest.data).toHaveLength(2);
    expect(rest.has_more).toBe(false);
    expect(rest.data.map((e) => e.type)).toEqual(['memory.updated', 'user.signed_up']);
    const error = expectError(await call('/api/v1/activity?limit=101', { token: user.token }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('limit');
  });

  it("never shows another workspace's changes", async () => {
    const user = await signUp();
    const other = await signUp('Other');
    await writeMemory({ token: user.token }, 'secret plans');
    await createKey(user, ['profile:read']);
    const theirs = await activity('', { token: other.token });
    expect(theirs.data).toEqual([
      {
        id: expect.any(Number),
        type: 'user.signed_up',
        summary: 'Other created the workspace',
        resourceType: 'user',
        resourceId: other.user.id,
        actor: { type: 'user', userId: other.user.id, apiKeyId: null },
        createdAt: expect.stringMatching(ISO),
      },
    ]);
    const team = await createWorkspace(user);
    expect((await activity('', inWorkspace(user, team.id))).data.map((e) => e.type)).toEqual(['workspace.created']);
  });
});

describe('audit and activity scopes', () => {
  it('refuses a key without activity:read with 403 naming the scope', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read', 'memory:read']);
    for (const path of ['/api/v1/audit-logs', '/api/v1/activity']) {
      const error = expectError(await call(path, { apiKey: key.key }), 403, 'FORBIDDEN');
      expect(error.message).toContain('activity:read');
      expect(error.details?.scope).toBe('activity:read');
    }
  });

  it('lets a key with activity:read read both logs', async () => {
    const user = await signUp();
    const key = await createKey(user, ['activity:read']);
    expect((await call('/api/v1/audit-logs', { apiKey: key.key })).status).toBe(200);
    expect((await call('/api/v1/activity', { apiKey: key.key })).status).toBe(200);
  });
});
