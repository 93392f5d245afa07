import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';

afterEach(() => resetClock());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const newSlug = (prefix = 'team') => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;

/** Session options acting in `workspace` (id or slug) through `x-workspace-id`. */
const inWorkspace = (user: TestUser, workspace: string) => ({ token: user.token, headers: { 'x-workspace-id': workspace } });

async function createWorkspace(user: TestUser, name = 'Team') {
  const res = await call('/api/v1/workspaces', { token: user.token, body: { name, slug: newSlug() } });
  if (res.status !== 201) throw new Error(`workspace creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; name: string; slug: string; role: string; personal: boolean; createdAt: string };
}

async function invite(inviter: TestUser, workspaceId: string, email: string, role: 'admin' | 'member' = 'member') {
  const res = await call(`/api/v1/workspaces/${workspaceId}/invitations`, { ...inWorkspace(inviter, workspaceId), body: { email, role } });
  if (res.status !== 201) throw new Error(`invitation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: number; token: string; email: string; role: string; status: string };
}

/** `owner` invites `joiner` into `workspaceId` and `joiner` accepts. */
async function join(owner: TestUser, joiner: TestUser, workspaceId: string, role: 'admin' | 'member' = 'member') {
  const { token } = await invite(owner, workspaceId, joiner.email, role);
  const res = await call('/api/v1/invitations/accept', { token: joiner.token, body: { token } });
  if (res.status !== 200) throw new Error(`accept failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

describe('GET /api/v1/workspaces', () => {
  it('answers a cursor envelope holding the personal workspace with role owner', async () => {
    const user = await signUp('Lin');
    const res = await call('/api/v1/workspaces', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          id: user.workspaceId,
          name: "Lin's workspace",
          slug: expect.stringMatching(/^lin-[a-z0-9]{8}$/),
          role: 'owner',
          personal: true,
          createdAt: expect.stringMatching(ISO),
        },
      ],
      first_id: user.workspaceId,
      last_id: user.workspaceId,
      has_more: false,
    });
    expect(user.workspaceId).toMatch(UUID);
  });

  it('pages newest first with limit=1, after_id (older) and before_id (newer)', async () => {
    const user = await signUp();
    advanceClock(1000);
    const second = await createWorkspace(user, 'Second');
    advanceClock(1000);
    const third = await createWorkspace(user, 'Third');
    const personal = user.workspaceId;

    const page1 = await call('/api/v1/workspaces?limit=1', { token: user.token });
    expect(page1.status).toBe(200);
    expect(page1.body).toMatchObject({ first_id: third.id, last_id: third.id, has_more: true });
    expect(page1.body.data.map((w: { id: string }) => w.id)).toEqual([third.id]);

    const page2 = await call(`/api/v1/workspaces?limit=1&after_id=${third.id}`, { token: user.token });
    expect(page2.body).toMatchObject({ data: [{ id: second.id, name: 'Second', role: 'owner', personal: false }], has_more: true });

    const page3 = await call(`/api/v1/workspaces?limit=1&after_id=${second.id}`, { token: user.token });
    expect(page3.body).toMatchObject({ data: [{ id: personal, personal: true }], first_id: personal, last_id: personal, has_more: false });

    const back1 = await call(`/api/v1/workspaces?limit=1&before_id=${personal}`, { token: user.token });
    expect(back1.body).toMatchObject({ data: [{ id: second.id }], has_more: true });

    const back2 = await call(`/api/v1/workspaces?limit=1&before_id=${second.id}`, { token: user.token });
    expect(back2.body).toMatchObject({ data: [{ id: third.id }], has_more: false });

    const all = await call('/api/v1/workspaces', { token: user.token });
    expect(all.body.data.map((w: { id: string }) => w.id)).toEqual([third.id, second.id, personal]);
    expect(all.body).toMatchObject({ first_id: third.id, last_id: personal, has_more: false });
  });

  it.each(['0', '101', 'abc'])('rejects limit=%s with 400 INVALID_INPUT on field limit', async (limit) => {
    const user = await signUp();
    const error = expectError(await call(`/api/v1/workspaces?limit=${limit}`, { token: user.token }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('limit');
  });

  it('accepts limit=100', async () => {
    const user = await signUp();
    const res = await call('/api/v1/workspaces?limit=100', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
  });

  it('rejects a malformed after_id with 400 on field after_id', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/workspaces?after_id=not-a-uuid', { token: user.token }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('after_id');
  });

  it('rejects after_id together with before_id', async () => {
    const user = await signUp();
    const id = user.workspaceId;
    const error = expectError(await call(`/api/v1/workspaces?after_id=${id}&before_id=${id}`, { token: user.token }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('before_id');
  });

  it("never lists another user's workspaces", async () => {
    const user = await signUp();
    const other = await signUp();
    await createWorkspace(other, 'Not yours');
    const res = await call('/api/v1/workspaces', { token: user.token });
    expect(res.body.data.map((w: { id: string }) => w.id)).toEqual([user.workspaceId]);
  });
});

describe('POST /api/v1/workspaces', () => {
  it('creates a workspace owned by the caller: 201 with the workspace record', async () => {
    const user = await signUp();
    const slug = newSlug('acme');
    const res = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Acme', slug } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Acme',
      slug,
      role: 'owner',
      personal: false,
      createdAt: expect.stringMatching(ISO),
    });
    const list = await call('/api/v1/workspaces', { token: user.token });
    expect(list.body.data).toContainEqual(res.body);
  });

  it.each([
    ['upper case', 'Acme-Team'],
    ['too short', 'a'],
    ['spaces', 'acme team'],
    ['leading hyphen', '-acme'],
    ['double hyphen', 'acme--team'],
    ['too long', 'a'.repeat(49)],
  ])('rejects a slug with %s: 400 on field slug', async (_label, slug) => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/workspaces', { token: user.token, body: { name: 'Acme', slug } }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('slug');
  });

  it.each([
    ['missing', { slug: 'acme-missing-name' }],
    ['blank', { name: '   ', slug: 'acme-blank-name' }],
  ])('rejects a %s name: 400 on field name', async (_label, body) => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/workspaces', { token: user.token, body }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('name');
  });

  it('refuses a slug already taken, even by another user: 409 ALREADY_EXISTS', async () => {
    const first = await signUp();
    const second = await signUp();
    const taken = await createWorkspace(first);
    const again = await call('/api/v1/workspaces', { token: first.token, body: { name: 'Again', slug: taken.slug } });
    expectError(again, 409, 'ALREADY_EXISTS');
    const other = await call('/api/v1/workspaces', { token: second.token, body: { name: 'Mine', slug: taken.slug } });
    expectError(other, 409, 'ALREADY_EXISTS');
    const list = await call('/api/v1/workspaces', { token: second.token });
    expect(list.body.data).toHaveLength(1);
  });

  it('replays the stored answer for the same idempotency-key and body, creating one workspace', async () => {
    const user = await signUp();
    const body = { name: 'Once', slug: newSlug('once') };
    const headers = { 'idempotency-key': `ws-${crypto.randomUUID()}` };
    const first = await call('/api/v1/workspaces', { token: user.token, body, headers });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();

    const retry = await call('/api/v1/workspaces', { token: user.token, body, headers });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.headers.get('content-type')).toMatch(/^application\/json/);
    expect(retry.body).toEqual(first.body);

    const list = await call('/api/v1/workspaces', { token: user.token });
    expect(list.body.data.filter((w: { slug: string }) => w.slug === body.slug)).toHaveLength(1);
    expect(list.body.data).toHaveLength(2);
  });

  it('answers 409 CONFLICT for the same idempotency-key with a different body', async () => {
    const user = await signUp();
    const headers = { 'idempotency-key': `ws-${crypto.randomUUID()}` };
    const first = await call('/api/v1/workspaces', { token: user.token, body: { name: 'One', slug: newSlug() }, headers });
    expect(first.status).toBe(201);
    const other = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Two', slug: newSlug() }, headers });
    expectError(other, 409, 'CONFLICT');
    const list = await call('/api/v1/workspaces', { token: user.token });
    expect(list.body.data).toHaveLength(2);
  });
});

describe('GET /api/v1/workspaces/current', () => {
  it('is the personal workspace for a new session', async () => {
    const user = await signUp('Kim');
    const res = await call('/api/v1/workspaces/current', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.workspaceId, name: "Kim's workspace", role: 'owner', personal: true });
  });

  it('follows x-workspace-id (by id or by slug) to another workspace of the user', async () => {
    const user = await signUp();
    const team = await createWorkspace(user, 'Team');
    const byId = await call('/api/v1/workspaces/current', inWorkspace(user, team.id));
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(team);
    const bySlug = await call('/api/v1/workspaces/current', inWorkspace(user, team.slug));
    expect(bySlug.body).toEqual(team);
    // Without the header the session is still in the personal workspace.
    expect((await call('/api/v1/workspaces/current', { token: user.token })).body.id).toBe(user.workspaceId);
  });

  it('answers 404 NOT_FOUND for x-workspace-id of a workspace the user is not a member of', async () => {
    const user = await signUp();
    const other = await signUp();
    const theirs = await createWorkspace(other);
    expectError(await call('/api/v1/workspaces/current', inWorkspace(user, theirs.id)), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/workspaces/current', inWorkspace(user, theirs.slug)), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/workspaces/current', inWorkspace(user, other.workspaceId)), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/workspaces/current', inWorkspace(user, 'no-such-workspace')), 404, 'NOT_FOUND');
  });

  it("is the key's bound workspace for an API key, which ignores x-workspace-id", async () => {
    const user = await signUp();
    const team = await createWorkspace(user);
    const key = await createKey(user, ['profile:read']);
    const res = await call('/api/v1/workspaces/current', { apiKey: key.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.workspaceId, role: 'owner', personal: true });

    const withHeader = await call('/api/v1/workspaces/current', { apiKey: key.key, headers: { 'x-workspace-id': team.id } });
    expect(withHeader.status).toBe(200);
    expect(withHeader.body.id).toBe(user.workspaceId);

    const stranger = await signUp();
    const foreign = await call('/api/v1/workspaces/current', { apiKey: key.key, headers: { 'x-workspace-id': stranger.workspaceId } });
    expect(foreign.status).toBe(200);
    expect(foreign.body.id).toBe(user.workspaceId);
  });

  it('is bound to the workspace the key was created in', async () => {
    const user = await signUp();
    const team = await createWorkspace(user);
    const created = await call('/api/v1/api-keys', { ...inWorkspace(user, team.id), body: { name: 'team key', scopes: ['profile:read'] } });
    expect(created.status).toBe(201);
    const res = await call('/api/v1/workspaces/current', { apiKey: created.body.key });
    expect(res.body).toEqual(team);
  });
});

describe('PUT /api/v1/workspaces/current', () => {
  it('rebinds an API key: later calls with the key act in the new workspace', async () => {
    const user = await signUp();
    const team = await createWorkspace(user, 'Team');
    const written = await call('/api/v1/memory', { method: 'PUT', ...inWorkspace(user, team.id), body: { content: 'team notes' } });
    expect(written.status).toBe(200);
    const key = await createKey(user, ['profile:read', 'profile:write', 'memory:read']);
    expect((await call('/api/v1/memory', { apiKey: key.key })).body.content).toBe('');

    const res = await call('/api/v1/workspaces/current', { method: 'PUT', apiKey: key.key, body: { workspace: team.slug } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(team);

    expect((await call('/api/v1/workspaces/current', { apiKey: key.key })).body).toEqual(team);
    const memory = await call('/api/v1/memory', { apiKey: key.key });
    expect(memory.status).toBe(200);
    expect(memory.body.content).toBe('team notes');
    // The session is not affected by rebinding the key.
    expect((await call('/api/v1/workspaces/current', { token: user.token })).body.id).toBe(user.workspaceId);
  });

  it('sets the default workspace of a session', async () => {
    const user = await signUp();
    const team = await createWorkspace(user, 'Team');
    const res = await call('/api/v1/workspaces/current', { method: 'PUT', token: user.token, body: { workspace: team.id } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(team);
    expect((await call('/api/v1/workspaces/current', { token: user.token })).body).toEqual(team);

    // Other sessions of the same user keep their own default.
    const signIn = await call('/auth/sign-in/email', { body: { email: user.email, password: user.password } });
    expect((await call('/api/v1/workspaces/current', { token: signIn.body.token })).body.id).toBe(user.workspaceId);

    // And the personal workspace can be selected back.
    const back = await call('/api/v1/workspaces/current', { method: 'PUT', token: user.token, body: { workspace: user.workspaceId } });
    expect(back.body).toMatchObject({ id: user.workspaceId, personal: true });
    expect((await call('/api/v1/workspaces/current', { token: user.token })).body.id).toBe(user.workspaceId);
  });

  it('answers 404 for a workspace the caller is not a member of, and changes nothing', async () => {
    const user = await signUp();
    const other = await signUp();
    const theirs = await createWorkspace(other);
    const key = await createKey(user, ['profile:read', 'profile:write']);
    expectError(await call('/api/v1/workspaces/current', { method: 'PUT', apiKey: key.key, body: { workspace: theirs.id } }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/workspaces/current', { method: 'PUT', token: user.token, body: { workspace: theirs.slug } }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/workspaces/current', { apiKey: key.key })).body.id).toBe(user.workspaceId);
    expect((await call('/api/v1/workspaces/current', { token: user.token })).body.id).toBe(user.workspaceId);
  });

  it('answers 400 on field workspace when it is missing', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/workspaces/current', { method: 'PUT', token: user.token, body: {} }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('workspace');
  });

  it('needs profile:write for a key', async () => {
    const user = await signUp();
    const team = await createWorkspace(user);
    const key = await createKey(user, ['profile:read']);
    const error = expectError(await call('/api/v1/workspaces/current', { method: 'PUT', apiKey: key.key, body: { workspace: team.id } }), 403, 'FORBIDDEN');
    expect(error.details?.scope).toBe('profile:write');
    expect((await call('/api/v1/workspaces/current', { apiKey: key.key })).body.id).toBe(user.workspaceId);
  });
});

describe('GET /api/v1/workspaces/:id/members', () => {
  it('lists the members of the current workspace', async () => {
    const owner = await signUp('Owner');
    const res = await call(`/api/v1/workspaces/${owner.workspaceId}/members`, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [{ userId: owner.user.id, email: owner.email, name: 'Owner', role: 'owner', joinedAt: expect.stringMatching(ISO) }],
      first_id: owner.user.id,
      last_id: owner.user.id,
      has_more: false,
    });
  });

  it('accepts the slug as well as the id', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const res = await call(`/api/v1/workspaces/${team.slug}/members`, inWorkspace(owner, team.id));
    expect(res.status).toBe(200);
    expect(res.body.data.map((m: { userId: string }) => m.userId)).toEqual([owner.user.id]);
  });

  it("answers 404 for another user's workspace", async () => {
    const user = await signUp();
    const other = await signUp();
    expectError(await call(`/api/v1/workspaces/${other.workspaceId}/members`, { token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/workspaces/no-such-workspace/members', { token: user.token }), 404, 'NOT_FOUND');
  });

  it("answers 404 for a workspace of the user's that is not the credential's current one", async () => {
    const user = await signUp();
    const team = await createWorkspace(user);
    expectError(await call(`/api/v1/workspaces/${team.id}/members`, { token: user.token }), 404, 'NOT_FOUND');
    const key = await createKey(user, ['profile:search']);
    expectError(await call(`/api/v1/workspaces/${team.id}/members`, { apiKey: key.key }), 404, 'NOT_FOUND');
    expect((await call(`/api/v1/workspaces/${user.workspaceId}/members`, { apiKey: key.key })).status).toBe(200);
  });
});

describe('POST /api/v1/workspaces/:id/invitations', () => {
  it('answers 201 with the token once; the list shows it pending, without the token', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const email = `invitee-${crypto.randomUUID()}@example.test`;
    const res = await call(`/api/v1/workspaces/${team.id}/invitations`, { ...inWorkspace(owner, team.id), body: { email, role: 'admin' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(Number),
      workspaceId: team.id,
      email,
      role: 'admin',
      status: 'pending',
      token: expect.stringMatching(/^inv_/),
      expiresAt: expect.stringMatching(ISO),
      createdAt: expect.stringMatching(ISO),
    });
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)).toBe(7 * 24 * 3600_000);

    const list = await call(`/api/v1/workspaces/${team.id}/invitations`, inWorkspace(owner, team.id));
    expect(list.status).toBe(200);
    const { token: _token, ...withoutToken } = res.body;
    expect(list.body).toEqual({ data: [withoutToken], first_id: String(res.body.id), last_id: String(res.body.id), has_more: false });
    expect(JSON.stringify(list.body)).not.toContain(res.body.token);
  });

  it('lower-cases the invited email', async () => {
    const owner = await signUp();
    const res = await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, {
      token: owner.token,
      body: { email: 'Mixed.Case@Example.TEST', role: 'member' },
    });
    expect(res.status).toBe(201);
    expect(res.body.email).toBe('mixed.case@example.test');
  });

  it.each([
    [{ email: 'someone@example.test', role: 'owner' }, 'role'],
    [{ email: 'someone@example.test', role: 'guest' }, 'role'],
    [{ email: 'someone@example.test' }, 'role'],
    [{ email: 'not-an-email', role: 'member' }, 'email'],
    [{ role: 'member' }, 'email'],
  ])('rejects %j with 400 naming %s', async (body, field) => {
    const owner = await signUp();
    const error = expectError(await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, { token: owner.token, body }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe(field);
  });

  it('answers 409 ALREADY_EXISTS for someone who is already a member', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const error = expectError(
      await call(`/api/v1/workspaces/${team.id}/invitations`, { ...inWorkspace(owner, team.id), body: { email: owner.email, role: 'member' } }),
      409,
      'ALREADY_EXISTS',
    );
    expect(error.details?.field).toBe('email');

    const joiner = await signUp();
    await join(owner, joiner, team.id);
    expectError(
      await call(`/api/v1/workspaces/${team.id}/invitations`, {
        ...inWorkspace(owner, team.id),
        body: { email: joiner.email.toUpperCase(), role: 'admin' },
      }),
      409,
      'ALREADY_EXISTS',
    );
  });

  it('answers 403 FORBIDDEN to a member, while an admin may invite', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const member = await signUp();
    const admin = await signUp();
    await join(owner, member, team.id, 'member');
    await join(owner, admin, team.id, 'admin');
    const body = { email: `friend-${crypto.randomUUID()}@example.test`, role: 'member' };
    expectError(await call(`/api/v1/workspaces/${team.id}/invitations`, { ...inWorkspace(member, team.id), body }), 403, 'FORBIDDEN');
    const byAdmin = await call(`/api/v1/workspaces/${team.id}/invitations`, { ...inWorkspace(admin, team.id), body });
    expect(byAdmin.status).toBe(201);
  });

  it("answers 404 for another workspace's id, and for one of the user's that is not current", async () => {
    const owner = await signUp();
    const other = await signUp();
    const team = await createWorkspace(owner);
    const body = { email: 'x@example.test', role: 'member' };
    expectError(await call(`/api/v1/workspaces/${other.workspaceId}/invitations`, { token: owner.token, body }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/workspaces/${team.id}/invitations`, { token: owner.token, body }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/workspaces/${other.workspaceId}/invitations`, { token: owner.token }), 404, 'NOT_FOUND');
  });
});

describe('POST /api/v1/invitations/accept', () => {
  it('joins the invited user with the invited role: members, their workspace list', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner, 'Joinable');
    const joiner = await signUp('Joiner');
    const { token } = await invite(owner, team.id, joiner.email, 'admin');

    const res = await call('/api/v1/invitations/accept', { token: joiner.token, body: { token } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...team, role: 'admin' });

    const members = await call(`/api/v1/workspaces/${team.id}/members`, inWorkspace(owner, team.id));
    expect(members.body.data).toHaveLength(2);
    expect(members.body.data).toContainEqual({
      userId: joiner.user.id,
      email: joiner.email,
      name: 'Joiner',
      role: 'admin',
      joinedAt: expect.stringMatching(ISO),
    });

    const list = await call('/api/v1/workspaces', { token: joiner.token });
    expect(list.body.data).toContainEqual({ ...team, role: 'admin' });
    expect(list.body.data).toHaveLength(2);

    const invitations = await call(`/api/v1/workspaces/${team.id}/invitations`, inWorkspace(owner, team.id));
    expect(invitations.body.data[0].status).toBe('accepted');

    // The joiner can now act in the workspace with their role.
    expect((await call('/api/v1/workspaces/current', inWorkspace(joiner, team.id))).body).toEqual({ ...team, role: 'admin' });
  });

  it("leaves the joiner's default workspace alone when they join someone's personal workspace", async () => {
    const owner = await signUp();
    const joiner = await signUp();
    const { token } = await invite(owner, owner.workspaceId, joiner.email);
    const res = await call('/api/v1/invitations/accept', { token: joiner.token, body: { token } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: owner.workspaceId, role: 'member' });

    const current = await call('/api/v1/workspaces/current', { token: joiner.token });
    expect(current.body).toMatchObject({ id: joiner.workspaceId, role: 'owner' });
    const signIn = await call('/auth/sign-in/email', { body: { email: joiner.email, password: joiner.password } });
    const fresh = await call('/api/v1/workspaces/current', { token: signIn.body.token });
    expect(fresh.body).toMatchObject({ id: joiner.workspaceId, role: 'owner' });
  });

  it('answers 409 CONFLICT when accepting the same invitation again', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const joiner = await signUp();
    const { token } = await invite(owner, team.id, joiner.email);
    expect((await call('/api/v1/invitations/accept', { token: joiner.token, body: { token } })).status).toBe(200);
    expectError(await call('/api/v1/invitations/accept', { token: joiner.token, body: { token } }), 409, 'CONFLICT');
  });

  it('answers 409 CONFLICT for a second invitation once the user has joined, keeping the first role', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const joiner = await signUp();
    const first = await invite(owner, team.id, joiner.email, 'member');
    const second = await invite(owner, team.id, joiner.email, 'admin');
    expect((await call('/api/v1/invitations/accept', { token: joiner.token, body: { token: first.token } })).status).toBe(200);
    expectError(await call('/api/v1/invitations/accept', { token: joiner.token, body: { token: second.token } }), 409, 'CONFLICT');
    const members = await call(`/api/v1/workspaces/${team.id}/members`, inWorkspace(owner, team.id));
    expect(members.body.data.find((m: { userId: string }) => m.userId === joiner.user.id)).toMatchObject({ role: 'member' });
    const invitations = await call(`/api/v1/workspaces/${team.id}/invitations`, inWorkspace(owner, team.id));
    expect(invitations.body.data.map((i: { status: string }) => i.status)).toEqual(['pending', 'accepted']);
  });

  it('answers 404 to a user signed in with another email, and for an unknown token', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const invited = await signUp();
    const intruder = await signUp();
    const { token } = await invite(owner, team.id, invited.email);
    expectError(await call('/api/v1/invitations/accept', { token: intruder.token, body: { token } }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/invitations/accept', { token: intruder.token, body: { token: 'inv_nope' } }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/workspaces', { token: intruder.token })).body.data).toHaveLength(1);
    // The invitation is still usable by the invited person.
    expect((await call('/api/v1/invitations/accept', { token: invited.token, body: { token } })).status).toBe(200);
  });

  it('refuses an API key with 403 FORBIDDEN: accepting is for sessions only', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const joiner = await signUp();
    const key = await createKey(joiner, ['*']);
    const { token } = await invite(owner, team.id, joiner.email);
    expectError(await call('/api/v1/invitations/accept', { apiKey: key.key, body: { token } }), 403, 'FORBIDDEN');
    expect((await call('/api/v1/workspaces', { token: joiner.token })).body.data).toHaveLength(1);
  });

  it('answers 400 on field token when it is missing', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/invitations/accept', { token: user.token, body: {} }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('token');
  });

  it('answers 410 EXPIRED after 7 days, and the list shows the invitation expired', async () => {
    const owner = await signUp();
    const team = await createWorkspace(owner);
    const joiner = await signUp();
    const { token } = await invite(owner, team.id, joiner.email);
    advanceClock(8 * 24 * 3600_000);
    expectError(await call('/api/v1/invitations/accept', { token: joiner.token, body: { token } }), 410, 'EXPIRED');
    const list = await call(`/api/v1/workspaces/${team.id}/invitations`, inWorkspace(owner, team.id));
    expect(list.body.data).toMatchObject([{ email: joiner.email, status: 'expired' }]);
    expect((await call('/api/v1/workspaces', { token: joiner.token })).body.data).toHaveLength(1);
  });
});

describe('workspace routes and key scopes', () => {
  it('lets a profile:read key list workspaces but not create one (403 naming profile:write)', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    const list = await call('/api/v1/workspaces', { apiKey: key.key });
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([user.workspaceId]);

    const error = expectError(await call('/api/v1/workspaces', { apiKey: key.key, body: { name: 'Nope', slug: newSlug() } }), 403, 'FORBIDDEN');
    expect(error.message).toContain('profile:write');
    expect(error.details?.scope).toBe('profile:write');
    expect((await call('/api/v1/workspaces', { token: user.token })).body.data).toHaveLength(1);
  });

  it('lets a profile:write key create a workspace', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:write']);
    const res = await call('/api/v1/workspaces', { apiKey: key.key, body: { name: 'By key', slug: newSlug() } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'By key', role: 'owner', personal: false });
  });
});
