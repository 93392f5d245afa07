import { expect } from 'vitest';
import { call, type TestUser } from './api';
import { shardNumberOf } from './shards';

/** A workspace `owner` creates (not personal), which their session then acts in: the user as it stands there. */
export async function teamOf(owner: TestUser, name = 'Team Space'): Promise<TestUser & { name: string; slug: string }> {
  const slug = `team-${crypto.randomUUID().slice(0, 8)}`;
  const created = await call('/api/v1/workspaces', { token: owner.token, body: { name, slug } });
  expect(created.status).toBe(201);
  expect((await call('/api/v1/workspaces/current', { method: 'PUT', token: owner.token, body: { workspace: created.body.id } })).status).toBe(200);
  return { ...owner, workspaceId: created.body.id, shard: await shardNumberOf(created.body.id), name, slug };
}

/** `user` joins the workspace `inviter` is in, with `role`; their session then acts there. */
export async function join(inviter: TestUser, user: TestUser, role: 'admin' | 'member') {
  const invited = await call(`/api/v1/workspaces/${inviter.workspaceId}/invitations`, { token: inviter.token, body: { email: user.email, role } });
  expect(invited.status).toBe(201);
  expect((await call('/api/v1/invitations/accept', { token: user.token, body: { token: invited.body.token } })).status).toBe(200);
  expect((await call('/api/v1/workspaces/current', { method: 'PUT', token: user.token, body: { workspace: inviter.workspaceId } })).status).toBe(200);
  return { ...user, workspaceId: inviter.workspaceId, shard: inviter.shard };
}
