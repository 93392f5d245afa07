import { runDurableObjectAlarm } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { boundShards, shardBinding, shardDbOf } from '../../workers/lib/db';
import { PLACE_TTL_MS, workspaceStillPlaced } from '../../workers/services/directory-routed';
import { shardVouches } from '../../workers/services/shard-placement';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { recordedGlobal } from '../helpers/counted-shard';
import { allKeys, everyRow, heldBy, rowsMarked, sleep } from '../helpers/deletion';
import { join, teamOf } from '../helpers/members';
import { authorizeCode, exchange } from '../helpers/oauth';
import { catalogEntry, seedCatalog, SUMMARIZER } from '../helpers/skills';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

const deleteWorkspace = (user: { token: string }, workspaceId: string, body?: unknown) =>
  call(`/api/v1/workspaces/${workspaceId}`, { method: 'DELETE', token: user.token, ...(body === undefined ? {} : { body }) });
const deletion = (user: { token: string }, workspaceId: string) => call(`/api/v1/workspaces/${workspaceId}/deletion`, { token: user.token });

/** Polls the job as its requester would until it completes; each round also runs its object's alarm if one is due. */
async function completed(user: TestUser, workspaceId: string) {
  const until = Date.now() + 60_000;
  for (;;) {
    const res = await deletion(user, workspaceId);
    expect(res.status).toBe(200);
    if (res.body.status === 'completed') return res.body;
    if (Date.now() > until) throw new Error(`the deletion did not complete: ${JSON.stringify(res.body)}`);
    await runDurableObjectAlarm(env.WORKSPACE_DELETION.getByName(workspaceId));
    await sleep(50);
  }
}

const AUTHORED = { ...SUMMARIZER, name: 'Team Notes', prompt: `# Team Notes\nOnly this workspace has this prompt: ${crypto.randomUUID()}.` };
const humanInput = (id: string) => ({ type: 'tool', id, toolId: 'human-input', options: { metadata: { prompt: 'Approve?' } } });

describe('DELETE /api/v1/workspaces/:id', () => {
  it('deletes everything of the workspace: its rows on the shard and in the global database, its objects and its R2 objects', async () => {
    const owner = await teamOf(await signUp('Owner'));
    const member = await join(owner, await signUp('Member'), 'member');
    const outsider = await signUp('Outsider');
    const W = owner.workspaceId;
    const catalogSlug = `shared-${W.slice(-8)}`;
    await seedCatalog([catalogEntry(catalogSlug)]);

    // Skills: an authored one (its bundle only this workspace has) and one from the catalog (a bundle shared with it).
    expect((await call('/api/v1/skills/team-notes', { method: 'PUT', token: owner.token, body: AUTHORED })).status).toBe(200);
    expect((await call(`/api/v1/skills/${catalogSlug}/install`, { method: 'POST', token: owner.token })).status).toBe(200);
    // A finished run (its trace, output artifact, event log and settled hold), and a chat thread.
    const done = await call('/api/v1/skills/team-notes/run', { token: owner.token, body: { input: 'Ship Friday. Review Monday.' } });
    expect(done.status).toBe(200);
    for (let i = 0; (await call(`/api/v1/executions/${done.body.executionId}/status`, { token: owner.token })).body.status !== 'completed'; i++) {
      if (i > 200) throw new Error('the run did not complete');
      await sleep(25);
    }
    expect((await call('/api/v1/threads', { token: owner.token, body: { skill_slug: 'team-notes' } })).status).toBe(201);
    // Workflow runs: one finished, one suspended at a human input, one asleep for an hour (its alarm set).
    await install(owner, 'flow', definition('flow', [mapping('only', { x: { value: 1 } })]));
    await install(owner, 'gate', definition('gate', [humanInput('approve')]));
    await install(owner, 'nap', definition('nap', [{ type: 'sleep', id: 'nap', duration: 3600 }]));
    const runs = { finished: await launch(owner, 'flow'), suspended: await launch(owner, 'gate'), asleep: await launch(owner, 'nap') };
    await waitForRun(owner, runs.finished, ['success']);
    await waitForRun(owner, runs.suspended, ['suspended']);
    await waitForRun(owner, runs.asleep, ['running']);
    // A schedule, its object's alarm set for the next hour.
    const schedule = await call('/api/v1/workflows/flow/schedules', { token: owner.token, body: { cron: '0 * * * *' } });
    expect(schedule.status).toBe(201);
    // A trigger that took a delivery: its object counts it.
    const trigger = await call('/api/v1/workflows/flow/triggers', { token: owner.token, body: { auth: 'bearer' } });
    expect(trigger.status).toBe(201);
    const delivered = await call(new URL(trigger.body.url).pathname, { method: 'POST', body: {}, headers: { authorization: `Bearer ${trigger.body.secret}` } });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(202);
    const triggerCounts = env.RATE_LIMITER.getByName(`trigger:${trigger.body.id}`);
    expect((await heldBy(triggerCounts)).rows).not.toEqual([]);
    expect((await call(`/api/v1/workflows/flow/triggers/${trigger.body.id}/deliveries`, { token: owner.token })).body.data).toHaveLength(1);
    // Secrets, a connector connection, memory, an invitation nobody accepted.
    expect((await call('/api/v1/secrets', { token: owner.token, body: { name: 'CRM_TOKEN', value: 'crm-secret-value' } })).status).toBe(201);
    const githubToken = `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
    expect((await call('/api/v1/connectors/github/connect', { token: owner.token, body: { token: githubToken } })).status).toBe(200);
    expect((await call('/api/v1/memory', { method: 'PUT', token: owner.token, body: { content: 'Team memory.' } })).status).toBe(200);
    expect((await call(`/api/v1/workspaces/${W}/invitations`, { token: owner.token, body: { email: 'later@example.test', role: 'member' } })).status).toBe(201);
    // Credentials bound to it: API keys of both members (one with an agent consent pending), an OAuth grant.
    const ownerKey = await createKey(owner, ['*']);
    const memberKey = await createKey(member, ['profile:read']);
    expect((await call('/api/v1/agents/connect', { apiKey: memberKey.key, body: { requestedScopes: ['memory:read'] } })).status).toBe(202);
    const oauth = await exchange(await authorizeCode('profile:read', { user: owner }));
    expect(oauth.status).toBe(200);
    const accessToken = ((await oauth.json()) as { access_token: string }).access_token;
    expect((await call('/api/v1/profile', { headers: { authorization: `Bearer ${accessToken}` } })).body.workspace.id).toBe(W);
    // Another workspace, which must keep everything it has.
    expect((await call('/api/v1/memory', { method: 'PUT', token: outsider.token, body: { content: 'Outsider memory.' } })).status).toBe(200);

    // A run still going when the deletion is asked for.
    const running = await call('/api/v1/skills/team-notes/run', {
      token: owner.token,
      body: { input: 'A long plan. With steps. And more steps. And even more.' },
    });
    expect(running.status).toBe(200);

    // What to look for afterwards: the workspace id, and the ids of its executions, traces, runs and threads.
    const shard = shardBinding(env, owner.shard);
    const ids = async (query: string) => (await shard.prepare(query).bind(W).all<{ id: string | number }>()).results.map((r) => String(r.id));
    const executionIds = await ids('SELECT id FROM executions WHERE workspace_id = ?');
    const marks = [
      W,
      ...executionIds.map((id) => `exec_${id}`),
      ...(await ids('SELECT id FROM traces WHERE workspace_id = ?')),
      ...(await ids('SELECT run_id AS id FROM workflow_runs WHERE workspace_id = ?')),
      ...(await ids('SELECT id FROM threads WHERE workspace_id = ?')),
      `api_key:${ownerKey.id.replace(/^key_/, '')}`,
    ];
    expect(executionIds).toHaveLength(2);
    const bundleKeys = (await allKeys()).filter((key) => key.startsWith('manifests/') || key.startsWith('blobs/'));
    const ownKeys = await allKeys(`workspaces/${W}/`);
    expect(ownKeys.length).toBeGreaterThan(0);
    const authoredManifest = (await shard
      .prepare(`SELECT storage_path FROM skill_versions WHERE workspace_id = ? AND name = 'Team Notes'`)
      .bind(W)
      .first<{ storage_path: string }>())!.storage_path;
    const authoredBlobs = ((await (await env.BUCKET.get(authoredManifest))!.json()) as { files: { sha256: string }[] }).files.map((f) => `blobs/${f.sha256}`);
    const outsiderBefore = await everyRow(shardBinding(env, outsider.shard));

    const asked = await deleteWorkspace(owner, W, { confirm: owner.name });
    expect(asked.status).toBe(202);
    expect(asked.body).toEqual({
      id: expect.any(String),
      status: 'running',
      step: expect.any(String),
      workspaceId: W,
      workspaceName: owner.name,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      completedAt: null,
    });
    // Gone for everyone at once: keys and tokens bound to it stop working, sessions fall back to their personal workspace.
    expectError(await call('/api/v1/memory', { apiKey: ownerKey.key }), 403, 'FORBIDDEN');
    expect((await call('/api/v1/profile', { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(403);
    expect((await call('/api/v1/workspaces/current', { token: member.token })).body.id).not.toBe(W);
    expect((await call('/api/v1/workspaces', { token: owner.token })).body.data.map((w: { id: string }) => w.id)).not.toContain(W);
    // Asked again, the same job.
    expect((await deleteWorkspace(owner, W, { confirm: owner.name })).body.id).toBe(asked.body.id);

    const job = await completed(owner, W);
    expect(job).toMatchObject({ id: asked.body.id, status: 'completed', step: 'done', completedAt: expect.any(String) });

    // Every shard: no row of it.
    for (const n of boundShards(env)) expect(rowsMarked(await everyRow(shardBinding(env, n)), marks)).toEqual([]);
    // The global database: only the job, its audit records and the ledger's entries name it.
    const global = await everyRow(env.DB);
    const { workspace_deletions: jobs, workspace_deletion_audit: audit, credit_transactions: ledger, ...rest } = global;
    expect(rowsMarked(rest, marks)).toEqual([]);
    expect(rowsMarked({ jobs: jobs! }, [W])).toHaveLength(1);
    expect(audit!.filter((row) => row.workspace_id === W).map((row) => row.action)).toEqual(['workspace.deletion_requested', 'workspace.deleted']);
    // The ledger keeps the runs' charges: they are the user's.
    expect(rowsMarked({ ledger: ledger! }, [`exec_${executionIds[0]}`])).toHaveLength(1);
    expect(global.credit_reservations!.filter((row) => row.settled_at === null && row.user_id === owner.user.id)).toEqual([]);
    // Its objects hold nothing: the executions' logs, the workflow runs (with the sleeper's alarm), the schedule, the trigger's counts, the channel, the deletion's own driver.
    for (const id of executionIds) expect(await heldBy(env.EXECUTION_SESSION.getByName(`exec_${id}`))).toEqual({ rows: [], alarm: null });
    for (const runId of Object.values(runs)) expect(await heldBy(env.WORKFLOW_RUN.getByName(runId))).toEqual({ rows: [], alarm: null });
    expect(await heldBy(env.WORKFLOW_SCHEDULE.getByName(schedule.body.id))).toEqual({ rows: [], alarm: null });
    expect(await heldBy(triggerCounts)).toEqual({ rows: [], alarm: null });
    expect(await heldBy(env.WORKSPACE_CHANNEL.getByName(W))).toEqual({ rows: [], alarm: null });
    expect(await heldBy(env.WORKSPACE_DELETION.getByName(W))).toEqual({ rows: [], alarm: null });
    // R2: nothing under its prefix, the authored bundle gone; the catalog's bundle, shared, stays.
    expect(await allKeys(`workspaces/${W}/`)).toEqual([]);
    const keysAfter = await allKeys();
    expect(keysAfter.filter((key) => [authoredManifest, ...authoredBlobs].includes(key))).toEqual([]);
    const catalogManifest = bundleKeys.filter((key) => !key.startsWith('blobs/') && key !== authoredManifest);
    expect(keysAfter).toEqual(expect.arrayContaining(catalogManifest));

    // The people stay: the member signs in and works in their own workspace; the outsider's workspace is untouched.
    expect((await call('/api/v1/memory', { token: member.token })).status).toBe(200);
    expect(await everyRow(shardBinding(env, outsider.shard)).then((rows) => rowsMarked(rows, [outsider.workspaceId]))).toEqual(
      rowsMarked(outsiderBefore, [outsider.workspaceId]),
    );
    // The job answers its requester only.
    expectError(await deletion(member, W), 404, 'NOT_FOUND');
  });

  it('answers 404 for another workspace and an unknown id, 403 for a member who is not an owner, 400 naming `confirm`, 409 for a personal workspace', async () => {
    const owner = await teamOf(await signUp('Owner'));
    const admin = await join(owner, await signUp('Admin'), 'admin');
    const other = await teamOf(await signUp('Other'));

    expectError(await deleteWorkspace(owner, other.workspaceId, { confirm: other.name }), 404, 'NOT_FOUND');
    expectError(await deleteWorkspace(owner, crypto.randomUUID(), { confirm: 'x' }), 404, 'NOT_FOUND');
    expectError(await deleteWorkspace(admin, owner.workspaceId, { confirm: owner.name }), 403, 'FORBIDDEN');
    expect(expectError(await deleteWorkspace(owner, owner.workspaceId), 400, 'INVALID_INPUT').details?.field).toBe('confirm');
    expect(expectError(await deleteWorkspace(owner, owner.workspaceId, {}), 400, 'INVALID_INPUT').details?.field).toBe('confirm');
    expect(expectError(await deleteWorkspace(owner, owner.workspaceId, { confirm: 'team space' }), 400, 'INVALID_INPUT').details?.field).toBe('confirm');
    expectError(await deletion(owner, owner.workspaceId), 404, 'NOT_FOUND');

    const solo = await signUp('Solo');
    const personal = await call('/api/v1/workspaces/current', { token: solo.token });
    const refused = expectError(await deleteWorkspace(solo, solo.workspaceId, { confirm: personal.body.name }), 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'personal_workspace' });

    // Nothing was deleted by the refusals.
    expect((await call(`/api/v1/workspaces/${owner.workspaceId}/members`, { token: owner.token })).body.data).toHaveLength(2);
    expect((await call('/api/v1/workspaces/current', { token: solo.token })).body.id).toBe(solo.workspaceId);
  });

  it('stops the shard vouching for the workspace before the directory forgets it, so queued work finds it gone', async () => {
    const owner = await teamOf(await signUp());
    const recorded = recordedGlobal();
    // A queued webhook or telemetry message asks the shard, not the directory, while the workspace is there.
    expect(await workspaceStillPlaced(recorded.env, owner.workspaceId, owner.shard)).toBe(true);
    expect(recorded.statements).toEqual([]);

    expect((await deleteWorkspace(owner, owner.workspaceId, { confirm: owner.name })).status).toBe(202);
    await completed(owner, owner.workspaceId);
    await sleep(PLACE_TTL_MS);
    expect(await workspaceStillPlaced(env, owner.workspaceId, owner.shard)).toBe(false);
    expect(await shardVouches(shardDbOf(env, owner.shard), owner.workspaceId, owner.shard)).toBe(false);
  });
});
