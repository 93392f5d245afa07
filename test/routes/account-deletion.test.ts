import { runDurableObjectAlarm } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { boundShards, shardBinding } from '../../workers/lib/db';
import { call, createKey, expectError, sessionIdOf, signUp, type TestUser } from '../helpers/api';
import { everyRow, rowsMarked, sleep, type Row } from '../helpers/deletion';
import { join, teamOf } from '../helpers/members';
import { authorizeCode, exchange, token } from '../helpers/oauth';
import { SUMMARIZER } from '../helpers/skills';

const deleteAccount = (credential: { token?: string; apiKey?: string; headers?: Record<string, string> }, body?: unknown) =>
  call('/api/v1/profile', { method: 'DELETE', ...credential, ...(body === undefined ? {} : { body }) });

const signIn = (user: TestUser) => call('/auth/sign-in/email', { body: { email: user.email, password: user.password } });

/** Reads the job at its status URL (no credential) until it completes; each round runs its workspaces' deletion objects' alarms if due. */
async function completed(statusUrl: string, workspaceIds: string[]) {
  const path = new URL(statusUrl).pathname;
  const until = Date.now() + 90_000;
  for (;;) {
    const res = await call(path);
    expect(res.status).toBe(200);
    if (res.body.status === 'completed') return res.body;
    if (Date.now() > until) throw new Error(`the account deletion did not complete: ${JSON.stringify(res.body)}`);
    for (const id of workspaceIds) await runDurableObjectAlarm(env.WORKSPACE_DELETION.getByName(id));
    await sleep(50);
  }
}

/** Runs the installed skill `slug` as `user` until it completes; answers the execution id. */
async function ran(user: TestUser, slug: string, input: string): Promise<string> {
  const started = await call(`/api/v1/skills/${slug}/run`, { token: user.token, body: { input } });
  expect(started.status).toBe(200);
  for (let i = 0; (await call(`/api/v1/executions/${started.body.executionId}/status`, { token: user.token })).body.status !== 'completed'; i++) {
    if (i > 200) throw new Error('the run did not complete');
    await sleep(25);
  }
  return started.body.executionId;
}

const NOTES = { ...SUMMARIZER, name: 'Team Notes', prompt: '# Team Notes\nSummarise the notes.' };

/** A session signed in longer ago than a fresh one: its account is deleted only with the password. */
const age = (user: TestUser) => env.DB.prepare(`UPDATE sessions SET created_at = created_at - 11 * 60000 WHERE id = ?`).bind(sessionIdOf(user)).run();

describe('DELETE /api/v1/profile', () => {
  it('deletes the account: its workspaces, every credential, its personal fields; shared workspaces keep working with its records anonymised, the ledger under an anonymous id', async () => {
    const name = `Dana ${crypto.randomUUID().slice(0, 8)}`;
    const dana = await signUp(name);
    const personal = dana.workspaceId;
    // The personal workspace with data: memory, a secret, a run (its trace and a usage entry on the ledger).
    await call('/api/v1/skills/team-notes', { method: 'PUT', token: dana.token, body: NOTES });
    expect((await call('/api/v1/memory', { method: 'PUT', token: dana.token, body: { content: `${name}'s own notes.` } })).status).toBe(200);
    expect((await call('/api/v1/secrets', { token: dana.token, body: { name: 'PERSONAL_TOKEN', value: 'personal-secret' } })).status).toBe(201);
    await ran(dana, 'team-notes', 'Personal plans. Buy milk.');
    // A second workspace she owns alone.
    const side = await teamOf(dana, 'Side Project');
    expect((await call('/api/v1/memory', { method: 'PUT', token: dana.token, body: { content: 'Side notes.' } })).status).toBe(200);
    // Someone else's workspace she is a member of, where she runs a skill and writes memory.
    const other = await teamOf(await signUp('Olga'), 'Shared Space');
    expect((await call('/api/v1/skills/team-notes', { method: 'PUT', token: other.token, body: NOTES })).status).toBe(200);
    const member = await join(other, dana, 'member');
    const danaRun = await ran(member, 'team-notes', 'Ship Friday. Review Monday.');
    expect((await call('/api/v1/memory', { method: 'PUT', token: member.token, body: { content: 'Shared notes, edited.' } })).status).toBe(200);
    // Credentials: a second session, an API key and an OAuth grant (bound to the shared workspace, which stays).
    const second = await signIn(dana);
    expect(second.status).toBe(200);
    const key = await createKey(member, ['*']);
    const flow = await authorizeCode('profile:read', { user: member });
    const oauth = await exchange(flow);
    expect(oauth.status).toBe(200);
    const { access_token: accessToken, refresh_token: refreshToken } = (await oauth.json()) as { access_token: string; refresh_token: string };
    expect((await call('/api/v1/profile', { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200);

    const marks = [dana.user.id, dana.email, name, sessionIdOf(dana), sessionIdOf({ ...dana, token: second.body.token })];
    const deleted = [personal, side.workspaceId];
    /** Rows of a deleted workspace (a record elsewhere may still name its id, as the ledger names a run's). */
    const rowsOf = (tables: Record<string, Row[]>) =>
      Object.entries(tables).flatMap(([table, rows]) =>
        rows.filter((row) => deleted.includes(row.workspace_id as string)).map((row) => `${table}: ${JSON.stringify(row)}`),
      );

    const asked = await deleteAccount({ token: dana.token }, { password: dana.password });
    expect(asked.status).toBe(202);
    expect(asked.body).toEqual({
      id: expect.any(String),
      status: 'running',
      statusUrl: expect.stringMatching(/^https:\/\/service\.test\/api\/v1\/account-deletions\/adel_/),
      workspaces: expect.any(Array),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      completedAt: null,
    });
    expect(asked.body.workspaces.map((w: { workspaceId: string }) => w.workspaceId).sort()).toEqual([personal, side.workspaceId].sort());

    // No credential of the account works from the next request on; neither does its password.
    expectError(await call('/api/v1/profile', { token: dana.token }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/profile', { token: second.body.token }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/memory', { apiKey: key.key }), 401, 'UNAUTHORIZED');
    expectError(await call('/api/v1/profile', { headers: { authorization: `Bearer ${accessToken}` } }), 401, 'UNAUTHORIZED');
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: flow.clientId });
    expect(refreshed.status).toBe(400);
    expect(((await refreshed.json()) as { error: string }).error).toBe('invalid_grant');
    expectError(await signIn(dana), 401, 'UNAUTHORIZED');

    const job = await completed(asked.body.statusUrl, [personal, side.workspaceId]);
    expect(job).toMatchObject({ id: asked.body.id, status: 'completed', statusUrl: null, completedAt: expect.any(String) });
    expect(job.workspaces.map((w: { status: string }) => w.status)).toEqual(['completed', 'completed']);

    // The shared workspace keeps working for its owner: her lists (Dana's run among them) and a run of her own.
    const runs = await call('/api/v1/executions', { token: other.token });
    expect(runs.status).toBe(200);
    expect(runs.body.items.map((e: { executionId: string }) => e.executionId)).toContain(danaRun);
    // What she wrote there is the workspace's, and stays.
    expect((await call('/api/v1/memory', { token: other.token })).body.content).toBe('Shared notes, edited.');
    await ran(other, 'team-notes', 'Olga carries on.');
    expect((await call(`/api/v1/workspaces/${other.workspaceId}/members`, { token: other.token })).body.data).toHaveLength(1);
    expect((await call('/api/v1/activity', { token: other.token })).body.data.map((a: { summary: string }) => a.summary)).toContain(
      'A member deleted their account',
    );

    // No table of any shard holds anything of the account, nor a row of its workspaces.
    for (const n of boundShards(env)) {
      const rows = await everyRow(shardBinding(env, n));
      expect(rowsMarked(rows, marks)).toEqual([]);
      expect(rowsOf(rows)).toEqual([]);
    }
    // The global database: nothing names the person; only the deletion jobs and their audit records are of the deleted workspaces.
    const global = await everyRow(env.DB);
    expect(rowsMarked(global, marks)).toEqual([]);
    const { account_deletions: accountJobs, workspace_deletions: jobs, workspace_deletion_audit: audit, ...rest } = global;
    expect(rowsOf(rest)).toEqual([]);
    expect(rowsMarked(rest, deleted)).toEqual([]);
    expect(accountJobs!.filter((row) => row.id === asked.body.id)).toHaveLength(1);
    expect(jobs!.filter((row) => deleted.includes(row.workspace_id as string))).toHaveLength(2);
    // The ledger keeps its entries (the welcome grant, both runs' charges) under the anonymous id, which the audit names too.
    const [account] = await env.DB.prepare(`SELECT workspace_id AS id FROM workspace_deletion_audit WHERE action = 'account.deleted' AND request_id = ?`)
      .bind(`account-deletion:${asked.body.id}`)
      .raw<[string]>();
    const anonymous = account![0];
    expect(audit!.filter((row) => row.workspace_id === anonymous).map((row) => row.action)).toEqual(['account.deletion_requested', 'account.deleted']);
    const ledger = global.credit_transactions!.filter((row) => row.user_id === anonymous);
    expect(ledger.map((row) => row.type).sort()).toEqual(['purchase', 'usage', 'usage']);
    expect(global.credit_accounts!.filter((row) => row.user_id === anonymous)).toHaveLength(1);
    // The email can sign up again, as someone new.
    const again = await call('/auth/sign-up/email', {
      body: { email: dana.email, password: dana.password, name: 'Dana Again' },
      headers: { 'cf-connecting-ip': '2001:db8:ff::1' },
    });
    expect(again.status).toBe(201);
    expect(again.body.user.id).not.toBe(dana.user.id);
  });

  it('asks for the password unless the session is fresh, refuses keys and OAuth tokens, a wrong password, and a sole owner of a workspace others use', async () => {
    const owner = await signUp('Owen');
    const team = await teamOf(owner, 'Busy Team');
    await join(team, await signUp('Mia'), 'member');
    const key = await createKey(team, ['*']);
    const oauth = await exchange(await authorizeCode('profile:write', { user: owner }));
    const { access_token: accessToken } = (await oauth.json()) as { access_token: string };

    expectError(await deleteAccount({ apiKey: key.key }, { password: owner.password }), 403, 'FORBIDDEN');
    expectError(await deleteAccount({ headers: { authorization: `Bearer ${accessToken}` } }, { password: owner.password }), 403, 'FORBIDDEN');
    await age(owner);
    expect(expectError(await deleteAccount({ token: owner.token }, {}), 400, 'INVALID_INPUT').details?.field).toBe('password');
    expect(expectError(await deleteAccount({ token: owner.token }, { password: 'not the password' }), 403, 'FORBIDDEN').details?.field).toBe('password');
    const refused = expectError(await deleteAccount({ token: owner.token }, { password: owner.password }), 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'sole_owner', workspaces: [{ id: team.workspaceId, name: 'Busy Team' }] });
    // Nothing went: the session, the key and the password still work.
    expect((await call('/api/v1/profile', { token: owner.token })).status).toBe(200);
    expect((await call('/api/v1/profile', { apiKey: key.key })).status).toBe(200);
    expect((await signIn(owner)).status).toBe(200);
    expectError(await call('/api/v1/account-deletions/adel_unknown'), 404, 'NOT_FOUND');

    // A session signed in moments ago needs no password.
    const fresh = await signUp('Fay');
    const asked = await deleteAccount({ token: fresh.token }, {});
    expect(asked.status).toBe(202);
    expect((await completed(asked.body.statusUrl, [fresh.workspaceId])).status).toBe('completed');
    expectError(await signIn(fresh), 401, 'UNAUTHORIZED');
  });
});
