import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { createApp } from '../../workers/app';
import { BASE, call, createKey, expectError, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { shardD1 } from '../helpers/shards';

const fixture = () => inject('fixtureOrigin');
const newToken = () => `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
const loginOf = (token: string) => `octo-${token.slice('ghp_fixture_'.length)}`;

async function connected(user?: TestUser) {
  const owner = user ?? (await signUp());
  const token = newToken();
  const res = await call('/api/v1/connectors/github/connect', { token: owner.token, body: { token } });
  expect(res.status).toBe(200);
  return { user: owner, token };
}

/** The Worker with some settings changed. */
async function callWith(overrides: Record<string, unknown>, path: string, user: TestUser, body?: unknown) {
  const response = await createApp().fetch(
    new Request(`${BASE}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-auth-token': user.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    { ...env, ...overrides },
  );
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

describe('GET /api/v1/connectors', () => {
  it('lists GitHub with how it connects, its scopes, reads, actions and triggers, not connected yet', async () => {
    const user = await signUp();
    const res = await call('/api/v1/connectors', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.connectors).toHaveLength(1);
    const github = res.body.connectors[0];
    expect(github).toMatchObject({
      type: 'github',
      app: 'github',
      name: 'GitHub',
      configured: true,
      status: 'not_connected',
      account: null,
      tokenPreview: null,
      connectedAt: null,
      connect: { method: 'token' },
      scopes: { read: 'connector:github:read', exec: 'connector:github:exec' },
    });
    expect(github.reads.map((r: { name: string }) => r.name)).toEqual(['list-github-repos', 'list-branches', 'list-sources', 'get-source-content']);
    expect(github.actions).toEqual([
      expect.objectContaining({ name: 'create_issue', writes: true }),
      expect.objectContaining({ name: 'comment_on_issue', writes: true }),
      expect.objectContaining({ name: 'open_pull_request', writes: true }),
    ]);
    expect(github.triggers).toEqual([
      expect.objectContaining({ name: 'push', delivery: 'workflow_trigger' }),
      expect.objectContaining({ name: 'pull_request', delivery: 'workflow_trigger' }),
    ]);
  });

  it('needs connector:list', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    expect(expectError(await call('/api/v1/connectors', { apiKey: key.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'connector:list' });
    const allowed = await createKey(user, ['connector:list']);
    expect((await call('/api/v1/connectors', { apiKey: allowed.key })).status).toBe(200);
  });
});

describe('POST /api/v1/connectors/:type/connect', () => {
  it('checks the token with GitHub, stores it encrypted and shows only who it acts as and its last four characters', async () => {
    const user = await signUp();
    const token = newToken();
    const res = await call('/api/v1/connectors/github/connect', { token: user.token, body: { token } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      type: 'github',
      status: 'connected',
      account: loginOf(token),
      tokenPreview: `…${token.slice(-4)}`,
      rateLimit: { limit: 5000, remaining: 4999, resetAt: expect.any(String) },
    });
    expect(JSON.stringify(res.body)).not.toContain(token);
    const row = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT ciphertext, account FROM connector_connections WHERE workspace_id = ?')
      .bind(user.workspaceId)
      .first<{ ciphertext: string; account: string }>();
    expect(row!.account).toBe(loginOf(token));
    expect(row!.ciphertext).not.toContain(token);
    const listed = (await call('/api/v1/connectors', { token: user.token })).body.connectors[0];
    expect(listed).toMatchObject({ status: 'connected', account: loginOf(token), connectedAt: expect.any(String) });
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toContain('connector.connected');
    expect(JSON.stringify(audit.body)).not.toContain(token);
  });

  it('refuses a token GitHub answers 401 to, storing nothing', async () => {
    const user = await signUp();
    const error = expectError(
      await call('/api/v1/connectors/github/connect', { token: user.token, body: { token: 'ghp_not_a_real_token' } }),
      400,
      'INVALID_INPUT',
    );
    expect(error.details).toMatchObject({ field: 'token', rule: 'rejected' });
    expect(error.message).toContain('Bad credentials');
    expect((await call('/api/v1/connectors/github/status', { token: user.token })).body.status).toBe('not_connected');
  });

  it('is 400 INVALID_CONNECTOR for a type that does not exist, naming the known ones', async () => {
    const user = await signUp();
    const error = expectError(await call('/api/v1/connectors/gitlab/connect', { token: user.token, body: { token: newToken() } }), 400, 'INVALID_CONNECTOR');
    expect(error.details).toEqual({ connector: 'gitlab', known: ['github'] });
    expectError(await call('/api/v1/connectors/gitlab/status', { token: user.token }), 400, 'INVALID_CONNECTOR');
    expectError(await call('/api/v1/connectors/gitlab/disconnect', { token: user.token, method: 'POST' }), 400, 'INVALID_CONNECTOR');
  });

  it('is 503 CONNECTOR_NOT_CONFIGURED when the deployment’s GitHub API base is unusable, and status says not_configured', async () => {
    const user = await signUp();
    const broken = { GITHUB_API_BASE_URL: 'http://github.internal.example' };
    const error = expectError(await callWith(broken, '/api/v1/connectors/github/connect', user, { token: newToken() }), 503, 'CONNECTOR_NOT_CONFIGURED');
    expect(error.details).toEqual({ connector: 'github', setting: 'GITHUB_API_BASE_URL' });
    expect((await callWith(broken, '/api/v1/connectors/github/status', user)).body).toMatchObject({ configured: false, status: 'not_configured' });
    expect((await callWith({ GITHUB_API_BASE_URL: '' }, '/api/v1/connectors', user)).body.connectors[0]).toMatchObject({
      configured: false,
      status: 'not_configured',
    });
  });

  it('validates the body', async () => {
    const user = await signUp();
    expect(expectError(await call('/api/v1/connectors/github/connect', { token: user.token, body: {} }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'token',
    });
    expect(
      expectError(await call('/api/v1/connectors/github/connect', { token: user.token, body: { token: 'two words' } }), 400, 'INVALID_INPUT').details,
    ).toMatchObject({ field: 'token' });
  });

  it('needs connector:github:exec besides connector:list, for connect and disconnect', async () => {
    const user = await signUp();
    const reader = await createKey(user, ['connector:list', 'connector:github:read']);
    const denied = expectError(await call('/api/v1/connectors/github/connect', { apiKey: reader.key, body: { token: newToken() } }), 403, 'FORBIDDEN');
    expect(denied.details).toEqual({ scope: 'connector:github:exec' });
    expectError(await call('/api/v1/connectors/github/disconnect', { apiKey: reader.key, method: 'POST' }), 403, 'FORBIDDEN');
    const writer = await createKey(user, ['connector:list', 'connector:github:exec']);
    expect((await call('/api/v1/connectors/github/connect', { apiKey: writer.key, body: { token: newToken() } })).body.status).toBe('connected');
    expect((await call('/api/v1/connectors/github/disconnect', { apiKey: writer.key, method: 'POST' })).body.status).toBe('not_connected');
  });
});

describe('GET /api/v1/connectors/:type/status and POST .../disconnect', () => {
  it('checks the stored token with GitHub: token_rejected once GitHub answers 401', async () => {
    const { user, token } = await connected();
    const res = await call('/api/v1/connectors/github/status', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'connected', account: loginOf(token), rateLimit: { limit: 5000 } });
    await fetch(`${fixture()}/github/__revoke`, { method: 'POST', body: JSON.stringify({ token }) });
    expect((await call('/api/v1/connectors/github/status', { token: user.token })).body).toMatchObject({ status: 'token_rejected', account: loginOf(token) });
  });

  it('says token_unreadable when the stored token no longer decrypts', async () => {
    const { user } = await connected();
    const otherKey = { ENCRYPTION_KEY: 'ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=' };
    expect((await callWith(otherKey, '/api/v1/connectors/github/status', user)).body.status).toBe('token_unreadable');
  });

  it('disconnects (recorded), and again is a no-op', async () => {
    const { user } = await connected();
    const res = await call('/api/v1/connectors/github/disconnect', { token: user.token, method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'not_connected', account: null, tokenPreview: null });
    expect((await call('/api/v1/connectors/github/disconnect', { token: user.token, method: 'POST' })).body.status).toBe('not_connected');
    const actions = (await call('/api/v1/audit-logs', { token: user.token })).body.data.map((e: { action: string }) => e.action);
    expect(actions.filter((a: string) => a === 'connector.disconnected')).toHaveLength(1);
  });

  it('keeps each workspace’s connection to itself', async () => {
    const { user } = await connected();
    const other = await signUp();
    expect((await call('/api/v1/connectors/github/status', { token: other.token })).body.status).toBe('not_connected');
    expect((await call('/api/v1/connectors', { token: other.token })).body.connectors[0].status).toBe('not_connected');
    // A second workspace of the same user has its own (absent) connection too.
    const created = await call('/api/v1/workspaces', { token: user.token, body: { name: 'Second', slug: `second-${crypto.randomUUID().slice(0, 8)}` } });
    expect(created.status).toBe(201);
    const inSecond = await call('/api/v1/connectors/github/status', { token: user.token, headers: { 'x-workspace-id': created.body.id } });
    expect(inSecond.body.status).toBe('not_connected');
    expect((await call('/api/v1/connectors/github/status', { token: user.token })).body.status).toBe('connected');
  });
});

describe('POST /api/v1/skills/:slug/run with a connector', () => {
  const SKILL = { name: 'Reviewer', description: 'Reviews code.', category: 'development', prompt: '# Reviewer\nReview the repository.' };
  const install = async (user: TestUser) => expect((await call('/api/v1/skills/reviewer', { method: 'PUT', token: user.token, body: SKILL })).status).toBe(200);
  const run = (user: TestUser, connector: unknown, apiKey?: string) =>
    call('/api/v1/skills/reviewer/run', { ...(apiKey ? { apiKey } : { token: user.token }), body: { input: 'Review the README', connector } });
  /** The flat legacy shape of the run route (spec 7.3). */
  const flat = (res: { status: number; body: any }, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ error: code, message: expect.any(String), details: { serviceCode: code } });
    return res.body;
  };

  it('is 409 CONNECTOR_NOT_CONNECTED (flat) when the workspace has no GitHub connection, and creates nothing', async () => {
    const user = await signUp();
    await install(user);
    const body = flat(await run(user, { type: 'github', fields: { repo: 'octo-org/widgets' } }), 409, 'CONNECTOR_NOT_CONNECTED');
    expect(body.connector).toBe('github');
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
  });

  it('validates the connector: repo shape (400 INVALID_INPUT), unknown type (400 INVALID_CONNECTOR), remote takes no fields', async () => {
    const { user } = await connected();
    await install(user);
    expect(flat(await run(user, { type: 'github', fields: { repo: 'not-a-repo' } }), 400, 'INVALID_INPUT').field).toBe('connector.fields.repo');
    expect(flat(await run(user, { type: 'github', fields: {} }), 400, 'INVALID_INPUT').field).toBe('connector.fields.repo');
    expect(flat(await run(user, { type: 'gitlab', fields: { repo: 'a/b' } }), 400, 'INVALID_CONNECTOR').connector).toBe('gitlab');
    expect(flat(await run(user, { type: 'remote', fields: { repo: 'a/b' } }), 400, 'INVALID_INPUT').field).toBe('connector.fields.repo');
    expect(flat(await run(user, { type: 'github', fields: { repo: 'octo-org/missing' } }), 404, 'NOT_FOUND').upstreamStatus).toBe(404);
  });

  it('is 409 CONNECTOR_NOT_CONNECTED when GitHub refuses the stored token', async () => {
    const { user, token } = await connected();
    await install(user);
    await fetch(`${fixture()}/github/__revoke`, { method: 'POST', body: JSON.stringify({ token }) });
    expect(flat(await run(user, { type: 'github', fields: { repo: 'octo-org/widgets' } }), 409, 'CONNECTOR_NOT_CONNECTED')).toMatchObject({
      reason: 'token_rejected',
      upstreamStatus: 401,
    });
  });

  it('needs connector:github:read on a key besides tool:execute', async () => {
    const { user } = await connected();
    await install(user);
    const key = await createKey(user, ['tool:execute']);
    expect(flat(await run(user, { type: 'github', fields: { repo: 'octo-org/widgets' } }, key.key), 403, 'FORBIDDEN').scope).toBe('connector:github:read');
    const reader = await createKey(user, ['tool:execute', 'connector:github:read']);
    expect((await run(user, { type: 'github', fields: { repo: 'octo-org/widgets' } }, reader.key)).status).toBe(200);
  });

  it('starts a run that remembers its repository (never a token); remote starts a run without one', async () => {
    const { user, token } = await connected();
    await install(user);
    const res = await run(user, { type: 'github', fields: { repo: 'octo-org/widgets' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'started', skillName: 'Reviewer' });
    const id = Number(res.body.executionId.replace('exec_', ''));
    const shard = await shardD1(user.workspaceId);
    const row = await shard.prepare('SELECT * FROM execution_connectors WHERE execution_id = ?').bind(id).first();
    expect(row).toMatchObject({ connector_type: 'github', repo: 'octo-org/widgets', workspace_id: user.workspaceId });
    expect(JSON.stringify(row)).not.toContain(token);
    await waitForStatus(user, res.body.executionId, 'completed');
    // A rerun reads the same repository.
    const rerun = await call(`/api/v1/executions/${res.body.executionId}/rerun`, { token: user.token, body: { input: 'Again' } });
    expect(rerun.status).toBe(200);
    const rerunRow = await shard
      .prepare('SELECT repo FROM execution_connectors WHERE execution_id = ?')
      .bind(Number(rerun.body.executionId.replace('exec_', '')))
      .first();
    expect(rerunRow).toEqual({ repo: 'octo-org/widgets' });
    await waitForStatus(user, rerun.body.executionId, 'completed');
    const remote = await run(user, { type: 'remote', fields: {} });
    expect(remote.status).toBe(200);
    const remoteRow = await shard
      .prepare('SELECT * FROM execution_connectors WHERE execution_id = ?')
      .bind(Number(remote.body.executionId.replace('exec_', '')))
      .first();
    expect(remoteRow).toMatchObject({ connector_type: 'remote', repo: null });
  });
});

describe('a run with a GitHub connector, end to end', () => {
  it('reads a file of the fake repository through its tool: the model (BYOK fixture) calls read_repository_file and quotes it', async () => {
    const { user } = await connected();
    expect((await call('/api/v1/byok', { method: 'PUT', token: user.token, body: { key: inject('modelKeys').byok } })).status).toBe(200);
    await call('/api/v1/skills/reviewer', {
      method: 'PUT',
      token: user.token,
      body: { name: 'Reviewer', description: 'Reviews code.', category: 'development', prompt: '# Reviewer\nReview.' },
    });
    const res = await call('/api/v1/skills/reviewer/run', {
      token: user.token,
      body: { input: 'What does the README say?', connector: { type: 'github', fields: { repo: 'octo-org/widgets' } } },
    });
    expect(res.status).toBe(200);
    const status = await waitForStatus(user, res.body.executionId, 'completed');
    // The fixture model answers with the tool's result: only the fake repository's README could give this text.
    expect(status.outputBlocks).toEqual([{ type: 'text', text: 'The README says: # Widgets\n\nThe widget factory.\n' }]);
  });
});
