import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { WorkflowRun } from '../../durable-objects/WorkflowRun';
import { runActor } from '../../workers/auth/actor';
import { credentialHash, resolvePrincipal } from '../../workers/auth/credentials';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { globalDbOf } from '../../workers/lib/db';
import { runSkill } from '../../workers/services/executions';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { connectMcp, failure } from '../helpers/mcp';
import { raw, token, tokensFor } from '../helpers/oauth';
import { shardDbFor } from '../helpers/shards';
import { definition, install, mapping, waitForRun } from '../helpers/workflows';

afterEach(() => resetClock());

const db = globalDbOf(env);
const SECRET = 'The merger closes on Friday';
const REVOKED = 'The credential that launched this run was revoked';
const SKILL = { name: 'Notes', description: 'Takes notes.', category: 'productivity', prompt: '# Notes' };

type Auth = { apiKey: string } | { token: string } | { headers: Record<string, string> };
const bearerAuth = (accessToken: string): Auth => ({ headers: { authorization: `Bearer ${accessToken}` } });

async function userWithMemory() {
  const user = await signUp();
  await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: SECRET } });
  return user;
}

const approve = { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } };
const readMemory = { type: 'tool', id: 'read', toolId: 'read-memory' };
const runNotes = [mapping('shape', { slug: { value: 'notes' }, input: { value: 'Plan it.' } }), { type: 'tool', id: 'run', toolId: 'execute-skill' }];

/** Installs `graph` with the user's session and launches it with `auth`; answers the run id. */
async function launchWith(user: TestUser, graph: unknown[], auth: Auth) {
  await install(user, 'flow', definition('flow', graph));
  const res = await call('/api/v1/workflows/flow/launch', { ...auth, body: {} });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.runId as string;
}

/** Launches `[approve, ...after]` with `auth` and waits until it is suspended at `approve`. */
async function suspendedRun(user: TestUser, auth: Auth, after: unknown[] = [readMemory]) {
  const runId = await launchWith(user, [approve, ...after], auth);
  await waitForRun(user, runId, ['suspended']);
  return runId;
}

const resume = (runId: string, auth: Auth) => call(`/api/v1/workflows/runs/${runId}/resume`, { ...auth, body: { resumeData: { ok: true } } });
const revokeKey = (user: TestUser, keyId: string) => call(`/api/v1/api-keys/${keyId}/revoke`, { method: 'POST', token: user.token });
const revokeScope = (user: TestUser, keyId: string, scope: string) => call(`/api/v1/agents/${keyId}/scopes/${scope}`, { method: 'DELETE', token: user.token });
const executionsOf = async (user: TestUser) => (await call('/api/v1/executions', { token: user.token })).body.items as unknown[];

/** The run once it has ended, with nobody resuming it: a revocation ends a waiting run by itself. */
const ended = (user: TestUser, runId: string) => waitForRun(user, runId, ['success', 'failed', 'canceled']);

/** A run ended at its waiting step `stepId` by its launcher's `reason`; resuming it is too late. */
async function endedAt(user: TestUser, runId: string, stepId: string, reason: string) {
  const { run, steps } = await ended(user, runId);
  expect(run.status).toBe('failed');
  expect(steps[stepId]).toEqual({ status: 'failed', output: { error: reason } });
  expect(run.snapshot.error).toBe(`Step ${stepId} failed: ${reason}`);
  expect(run.snapshot.value).toEqual({});
  expect((await resume(runId, { token: user.token })).status).toBe(409);
  return { run, steps };
}

/** Resumes with the owner's session (which holds every scope) and answers the finished run. */
async function resumedByOwner(user: TestUser, runId: string) {
  expect((await resume(runId, { token: user.token })).status).toBe(200);
  return waitForRun(user, runId, ['success', 'failed']);
}

describe('a workflow run acts for its launching credential as it is at each step', () => {
  it('ends a sleeping run when the key is revoked, at its sleep, without waiting for it to wake, and starts nothing', async () => {
    const user = await userWithMemory();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    const key = await createKey(user, ['workflow:run', 'memory:read', 'tool:execute']);
    const runId = await launchWith(user, [{ type: 'sleep', id: 'pause', duration: 3600_000 }, readMemory, ...runNotes], { apiKey: key.key });
    // Revoked between steps: the sleep has begun (its unit waits in the run's object).
    const sleeping = () =>
      runInDurableObject(env.WORKFLOW_RUN.getByName(runId), (_: WorkflowRun, state) =>
        state.storage.sql.exec<{ status: string }>(`SELECT status FROM tasks WHERE key = '0'`).toArray(),
      );
    for (let i = 0; i < 200 && (await sleeping())[0]?.status !== 'waiting'; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await revokeKey(user, key.id)).status).toBe(200);

    const { run, steps } = await endedAt(user, runId, 'pause', REVOKED);
    expect(steps.read).toBeUndefined();
    expect(steps.run).toBeUndefined();
    expect(JSON.stringify({ run, steps })).not.toContain(SECRET);
    expect(await executionsOf(user)).toEqual([]);
  });

  it('ends a run waiting for human input when the key is revoked, at the input step, without a resume', async () => {
    const user = await userWithMemory();
    const key = await createKey(user, ['workflow:run', 'memory:read']);
    const runId = await suspendedRun(user, { apiKey: key.key });
    expect((await revokeKey(user, key.id)).status).toBe(200);

    const { run, steps } = await endedAt(user, runId, 'approve', REVOKED);
    expect(steps.read).toBeUndefined();
    expect(JSON.stringify({ run, steps })).not.toContain(SECRET);
  });

  it('leaves the runs of the launcher’s other credentials waiting', async () => {
    const user = await userWithMemory();
    const [revoked, kept] = [await createKey(user, ['workflow:run', 'memory:read']), await createKey(user, ['workflow:run', 'memory:read'])];
    const [stopping, waiting] = [await suspendedRun(user, { apiKey: revoked.key }), await suspendedRun(user, { apiKey: kept.key })];
    expect((await revokeKey(user, revoked.id)).status).toBe(200);

    await endedAt(user, stopping, 'approve', REVOKED);
    expect((await waitForRun(user, waiting)).run.status).toBe('suspended');
    const { run, steps } = await resumedByOwner(user, waiting);
    expect(run.status).toBe('success');
    expect(steps.read.output).toEqual({ content: SECRET });
  });

  it('fails a step whose scope was taken off the key since launch, naming the scope', async () => {
    const user = await userWithMemory();
    const key = await createKey(user, ['workflow:run', 'memory:read', 'tool:execute']);
    const runId = await suspendedRun(user, { apiKey: key.key });
    expect((await revokeScope(user, key.id, 'memory:read')).status).toBe(200);

    const { run, steps } = await resumedByOwner(user, runId);
    expect(run.status).toBe('failed');
    expect(steps.read.output.error).toContain('"memory:read"');
    expect(JSON.stringify({ run, steps })).not.toContain(SECRET);
  });

  it('stops when the key that launched it was moved to another workspace', async () => {
    const user = await userWithMemory();
    const key = await createKey(user, ['workflow:run', 'memory:read', 'profile:write']);
    const runId = await suspendedRun(user, { apiKey: key.key });
    const team = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    expect(team.status).toBe(201);
    expect((await call('/api/v1/workspaces/current', { method: 'PUT', apiKey: key.key, body: { workspace: team.body.id } })).status).toBe(200);

    const { run, steps } = await endedAt(user, runId, 'approve', 'The credential that launched this run now acts in another workspace');
    expect(JSON.stringify({ run, steps })).not.toContain(SECRET);
  });

  it('stops when the session that launched it is signed out', async () => {
    const user = await userWithMemory();
    const signedIn = await call('/auth/sign-in/email', {
      body: { email: user.email, password: user.password },
      headers: { 'cf-connecting-ip': '2001:db8:37::2' },
    });
    expect(signedIn.status).toBe(200);
    const runId = await suspendedRun(user, { token: signedIn.body.token });
    expect((await call('/auth/sign-out', { method: 'POST', token: signedIn.body.token })).status).toBe(200);

    await endedAt(user, runId, 'approve', 'The credential that launched this run was signed out');
  });

  it('follows an OAuth launch’s grant: its access token expiring or refreshed leaves the run going, the grant revoked stops it', async () => {
    const flow = await tokensFor('workflow:run memory:read offline_access');
    const { user, clientId } = flow;
    await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: SECRET } });

    const first = await suspendedRun(user, bearerAuth(flow.tokens.access_token));
    const refreshed = await (
      await token({ grant_type: 'refresh_token', refresh_token: flow.tokens.refresh_token, client_id: clientId })
    ).json<Record<string, string>>();
    expect(refreshed.access_token).toBeDefined();
    // The launching token is past its expiry: its grant goes on.
    await env.DB.prepare('UPDATE oauth_tokens SET expires_at = 0 WHERE id = ?')
      .bind(await credentialHash(flow.tokens.access_token))
      .run();
    const going = await resumedByOwner(user, first);
    expect(going.run.status).toBe('success');
    expect(going.steps.read.output).toEqual({ content: SECRET });

    const second = await suspendedRun(user, bearerAuth(refreshed.access_token!));
    const revoke = await raw('/auth/oauth2/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshed.refresh_token!, client_id: clientId, token_type_hint: 'refresh_token' }),
    });
    expect(revoke.status).toBe(200);
    await endedAt(user, second, 'approve', REVOKED);
  });

  it('stops an OAuth launch whose grant has no live token left (no refresh token, the access token expired) at its next step', async () => {
    const flow = await tokensFor('workflow:run memory:read');
    const runId = await suspendedRun(flow.user, bearerAuth(flow.tokens.access_token));
    // The hour of its only token passes (its launcher's gate trusts the grant until then, not longer).
    advanceClock(Number(flow.tokens.expires_in) * 1000 + 1000);
    const { run, steps } = await resumedByOwner(flow.user, runId);
    expect(run.status).toBe('failed');
    expect(steps.read.output.error).toBe('The credential that launched this run has expired');
  });
});

describe('resuming a run takes the scopes its remaining steps need', () => {
  it('answers 403 naming the scopes the resumer’s credential lacks, over REST and MCP, and the run stays suspended', async () => {
    const user = await userWithMemory();
    const runId = await suspendedRun(user, { token: user.token });
    const runOnly = await createKey(user, ['workflow:run']);

    const error = expectError(await resume(runId, { apiKey: runOnly.key }), 403, 'FORBIDDEN');
    expect(error.message).toContain('"memory:read"');
    expect(error.details).toEqual({ scopes: ['memory:read'], stepId: 'approve' });

    const client = await connectMcp({ 'x-api-key': runOnly.key });
    const viaMcp = failure(await client.callTool({ name: 'resume-workflow-run', arguments: { runId, resumeData: { ok: true } } }), 'FORBIDDEN');
    expect(viaMcp.details.scopes).toEqual(['memory:read']);
    await client.close();

    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('suspended');
    expect(steps.read).toBeUndefined();
  });

  it('names every scope of the steps still to run, each branch counted', async () => {
    const user = await userWithMemory();
    const branches = {
      type: 'conditional',
      id: 'route',
      steps: [readMemory, { type: 'tool', id: 'run', toolId: 'execute-skill' }],
      predicates: [
        { op: 'eq', left: { path: 'inputData.ok' }, right: { literal: true } },
        { op: 'ne', left: { path: 'inputData.ok' }, right: { literal: true } },
      ],
    };
    const runId = await suspendedRun(user, { token: user.token }, [branches]);
    const runOnly = await createKey(user, ['workflow:run']);
    expect(expectError(await resume(runId, { apiKey: runOnly.key }), 403, 'FORBIDDEN').details?.scopes).toEqual(['memory:read', 'tool:execute']);
  });

  it('records who resumed on the run, and the resume goes on for a credential that covers the steps', async () => {
    const user = await userWithMemory();
    const runId = await suspendedRun(user, { token: user.token });
    const resumer = await createKey(user, ['workflow:run', 'memory:read', 'library:read']);
    expect((await resume(runId, { apiKey: resumer.key })).body).toEqual({ runId, status: 'running' });

    const { run, steps } = await waitForRun(user, runId, ['success', 'failed']);
    expect(run.status).toBe('success');
    expect(steps.read.output).toEqual({ content: SECRET });
    expect(run.snapshot.resumes).toEqual([
      { stepId: 'approve', at: expect.any(String), by: { userId: user.user.id, credential: { type: 'api_key', apiKeyId: resumer.id } } },
    ]);
    // The resumer can read it too, and the audit log says the same.
    expect((await call(`/api/v1/workflows/runs/${runId}`, { apiKey: resumer.key })).body.run.snapshot.resumes[0].by.credential.apiKeyId).toBe(resumer.id);
    const [entry] = (await call('/api/v1/audit-logs?action=workflow.resumed', { token: user.token })).body.data;
    expect(entry).toMatchObject({ resourceId: runId, actor: { type: 'api_key', apiKeyId: resumer.id } });
  });
});

/** Polls the execution until it is no longer working; answers its status record. */
async function settled(user: TestUser, executionId: string) {
  for (let i = 0; i < 300; i++) {
    const res = await call(`/api/v1/executions/${executionId}/status`, { token: user.token });
    if (res.body.status !== 'working') return res.body;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`execution ${executionId} never settled`);
}

describe('an execution’s turn acts for its launching credential as it is at each tool call', () => {
  /** A user with memory, the tool-calling model on their own key, the skill, and a key holding `scopes`. */
  async function setUp(scopes: string[]) {
    const user = await userWithMemory();
    expect((await call('/api/v1/byok', { method: 'PUT', token: user.token, body: { key: inject('modelKeys').byok } })).status).toBe(200);
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    const key = await createKey(user, scopes);
    const principal = (await resolvePrincipal(
      db,
      { apiKey: key.key, sessionToken: undefined, workspaceSelector: undefined },
      { requestId: 'req-revocation', ip: null, userAgent: null },
    ))!;
    return { user, key, principal };
  }

  it('refuses a follow-up turn sent with the revoked key, and runs nothing', async () => {
    const { user, key } = await setUp(['tool:execute', 'memory:read']);
    const created = await call('/api/v1/executions', { apiKey: key.key, body: { skill_slug: 'notes', input: 'Plan it.' } });
    expect(created.status).toBe(201);
    expect((await revokeKey(user, key.id)).status).toBe(200);
    const body = { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Please read memory.' }] }] };
    expectError(await call(`/api/v1/executions/${created.body.id}/events`, { apiKey: key.key, body }), 403, 'FORBIDDEN');
    expect((await call(`/api/v1/executions/${created.body.id}/status`, { token: user.token })).body.status).toBe('idle');
  });

  it('ends a turn acting for a key revoked since it was started at its first tool call, saying why', async () => {
    const { user, key, principal } = await setUp(['tool:execute', 'memory:read']);
    // A workflow step's turn: started for the run's launcher, which is revoked before the model acts.
    const launcher = runActor(principal, { kind: 'workflow', id: crypto.randomUUID() });
    expect((await revokeKey(user, key.id)).status).toBe(200);
    const { executionId } = await runSkill(await shardDbFor(user.workspaceId), env, launcher, 'notes', { input: 'Please read memory.' }, 'workflow');

    const status = await settled(user, executionId);
    expect(status.status).toBe('failed');
    expect(JSON.stringify(status)).not.toContain(SECRET);
    const events = await env.EXECUTION_SESSION.getByName(executionId).events(0);
    expect(events).toContainEqual(expect.objectContaining({ type: 'agent.info', payload: { message: REVOKED } }));
    expect(events.filter((e) => e.type === 'span.model_request_end')).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });

  it('refuses a tool whose scope was taken off the key since the turn was started, naming it', async () => {
    const { user, key, principal } = await setUp(['tool:execute', 'memory:read']);
    const launcher = runActor(principal, { kind: 'workflow', id: crypto.randomUUID() });
    expect((await revokeScope(user, key.id, 'memory:read')).status).toBe(200);
    const { executionId } = await runSkill(await shardDbFor(user.workspaceId), env, launcher, 'notes', { input: 'Please read memory.' }, 'workflow');

    const status = await settled(user, executionId);
    expect(status.status).toBe('completed');
    expect(status.outputBlocks[0].text).toContain('"memory:read"');
    expect(JSON.stringify(status)).not.toContain(SECRET);
  });
});
