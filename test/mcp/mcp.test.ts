import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { BASE, call, createKey, expectError, signUp, waitForStatus } from '../helpers/api';
import { connectMcp, failure, ok, toolJson } from '../helpers/mcp';
import { catalogEntry, seedCatalog } from '../helpers/skills';
import { authorizeCode, exchange, raw, tokensFor } from '../helpers/oauth';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { MCP_STARTING_SCOPES } from '../../workers/mcp/challenge';
import { definition, install, mapping, waitForRun } from '../helpers/workflows';

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
const TOOL_NAMES = [
  'list-installed-skills',
  'search-marketplace',
  'get-skill-details',
  'install-skill',
  'uninstall-skill',
  'execute-skill',
  'run-skill-eval',
  'get-skill-eval',
  'list-executions',
  'get-execution-status',
  'cancel-execution',
  'list-artifacts',
  'get-artifact',
  'download-artifact',
  'delete-artifact',
  'read-memory',
  'write-memory',
  'get-credit-balance',
  'get-limits',
  'start-workflow',
  'list-workflow-runs',
  'get-workflow-run',
  'cancel-workflow-run',
  'resume-workflow-run',
  'rerun-workflow-run',
  'list-workflow-schedules',
  'create-workflow-schedule',
  'pause-workflow-schedule',
  'resume-workflow-schedule',
  'delete-workflow-schedule',
  'list-workflow-triggers',
  'list-workflow-trigger-deliveries',
  'create-workflow-trigger',
  'delete-workflow-trigger',
  'list-connectors',
  'connect-connector',
  'disconnect-connector',
  'get-connector-status',
  'list-sources',
  'list-branches',
  'get-source-content',
  'list-github-repos',
  'search-connector-actions',
  'run-connector-action',
  'list-connector-triggers',
  'get-retention',
  'set-retention',
  'set-limits',
  'get-skill-guard',
  'set-skill-guard',
  'get-telemetry',
  'set-telemetry',
  'list-webhooks',
  'create-webhook',
  'get-webhook',
  'update-webhook',
  'delete-webhook',
  'rotate-webhook-secret',
  'list-webhook-deliveries',
  'redeliver-webhook',
];
/** Tools whose scope a client is given through the step-up challenge when it calls them, not at sign-in. */
const STEP_UP_TOOLS: Record<string, string> = {
  'get-retention': 'profile:read',
  'set-retention': 'profile:write',
  'set-limits': 'profile:write',
  'get-skill-guard': 'profile:read',
  'set-skill-guard': 'profile:write',
  'get-telemetry': 'profile:read',
  'set-telemetry': 'profile:write',
  'list-webhooks': 'profile:read',
  'create-webhook': 'profile:write',
  'get-webhook': 'profile:read',
  'update-webhook': 'profile:write',
  'delete-webhook': 'profile:write',
  'rotate-webhook-secret': 'profile:write',
  'list-webhook-deliveries': 'profile:read',
  'redeliver-webhook': 'profile:write',
};

const connect = (apiKey: string, headers: Record<string, string> = {}) => connectMcp({ 'x-api-key': apiKey, ...headers });

async function setup(scopes: string[] = ['*']) {
  const user = await signUp();
  await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
  const key = await createKey(user, scopes);
  return { user, key: key.key, client: await connect(key.key) };
}

describe('the MCP endpoint', () => {
  it('lists every tool with a description, an input schema and truthful annotations', async () => {
    const { client } = await setup();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(30);
      expect(tool.inputSchema.type).toBe('object');
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName['read-memory']!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    expect(byName['delete-artifact']!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName['execute-skill']!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false });
    expect(byName['write-memory']!.inputSchema.properties).toMatchObject({ mode: { enum: ['overwrite', 'append'] } });
    // Every service tool declares the shape of its answer, which the SDK checks each result against;
    // the connector tools that pass the provider's own objects on declare none.
    const providerTools = [
      'list-github-repos',
      'list-branches',
      'list-sources',
      'get-source-content',
      'search-connector-actions',
      'run-connector-action',
      'list-connector-triggers',
    ];
    for (const name of TOOL_NAMES) expect(byName[name]!.outputSchema?.type, name).toBe(providerTools.includes(name) ? undefined : 'object');
    expect(byName['get-credit-balance']!.outputSchema!.properties).toMatchObject({ balance: { type: 'number' }, canExecute: { type: 'boolean' } });
  });

  it('installs, shows, lists and uninstalls skills, with NOT_FOUND as a tool error', async () => {
    const slug = `mcp-skill-${crypto.randomUUID().slice(0, 8)}`;
    await seedCatalog([catalogEntry(slug, { title: 'MCP Skill', category: 'research' })]);
    const { client } = await setup();
    expect(ok(await client.callTool({ name: 'install-skill', arguments: { slug } }))).toMatchObject({ slug, name: 'MCP Skill', versionNumber: 1 });
    expect(ok(await client.callTool({ name: 'list-installed-skills', arguments: {} })).skills.map((s: { slug: string }) => s.slug)).toEqual(
      [slug, 'notes'].sort(),
    );
    expect(ok(await client.callTool({ name: 'get-skill-details', arguments: { slug } }))).toMatchObject({ slug, filesCount: 1, bundleType: 'agent-skills' });
    expect(ok(await client.callTool({ name: 'uninstall-skill', arguments: { slug } }))).toEqual({ success: true });
    failure(await client.callTool({ name: 'get-skill-details', arguments: { slug } }), 'NOT_FOUND');
    failure(await client.callTool({ name: 'uninstall-skill', arguments: { slug } }), 'NOT_FOUND');
    failure(await client.callTool({ name: 'install-skill', arguments: { slug: 'no-such-skill-anywhere' } }), 'NOT_FOUND');
  });

  it('runs a skill eval, reads it, and shows it in the skill’s details, labelled as a local run', async () => {
    const { user, client } = await setup();
    const evals = [{ id: 1, prompt: 'Summarise: we ship on Friday.', checks: [{ type: 'contains', value: '## Notes' }] }];
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: { ...SKILL, evals } });
    const started = ok(await client.callTool({ name: 'run-skill-eval', arguments: { slug: 'notes' } }));
    expect(started).toEqual({ id: expect.stringMatching(/^eval_\d+$/), status: 'queued' });
    let job = ok(await client.callTool({ name: 'get-skill-eval', arguments: { slug: 'notes', evalId: started.id } }));
    for (let i = 0; i < 100 && ['queued', 'running'].includes(job.status); i++) {
      await new Promise((r) => setTimeout(r, 200));
      job = ok(await client.callTool({ name: 'get-skill-eval', arguments: { slug: 'notes', evalId: started.id } }));
    }
    expect(job).toMatchObject({ status: 'succeeded', passRateWith: 1, passRateWithout: 0, difference: 1, local: true });
    expect(ok(await client.callTool({ name: 'get-skill-details', arguments: { slug: 'notes' } })).evals).toEqual([
      expect.objectContaining({ id: started.id, versionNumber: 2, casesCount: 1, passRateWith: 1, passRateWithout: 0, model: 'local-1', local: true }),
    ]);
    failure(await client.callTool({ name: 'get-skill-eval', arguments: { slug: 'notes', evalId: 'eval_1' } }), 'NOT_FOUND');
  });

  it('runs a skill (source mcp), follows it, lists it, reads and deletes what it produced', async () => {
    const { user, client } = await setup();
    const started = ok(await client.callTool({ name: 'execute-skill', arguments: { slug: 'notes', input: 'We ship Friday. Ana writes the notes.' } }));
    expect(started).toMatchObject({ executionId: expect.stringMatching(/^exec_\d+$/), status: 'started', skillName: 'Notes' });
    await waitForStatus(user, started.executionId, 'completed');

    const status = ok(await client.callTool({ name: 'get-execution-status', arguments: { executionId: started.executionId } }));
    expect(status).toMatchObject({ executionId: started.executionId, status: 'completed', outputBlocks: [{ type: 'text' }] });
    const history = ok(await client.callTool({ name: 'list-executions', arguments: { channels: ['mcp'] } }));
    expect(history.items).toEqual([expect.objectContaining({ executionId: started.executionId, source: 'mcp', interface: 'mcp' })]);
    expect(ok(await client.callTool({ name: 'list-executions', arguments: { channels: ['api'] } })).items).toEqual([]);
    expect(ok(await client.callTool({ name: 'cancel-execution', arguments: { executionId: started.executionId } }))).toMatchObject({
      processKilled: false,
      actualStatus: 'completed',
    });

    const artifacts = ok(await client.callTool({ name: 'list-artifacts', arguments: {} })).data;
    const output = artifacts.find((a: { name: string }) => a.name === 'output.md');
    expect(ok(await client.callTool({ name: 'get-artifact', arguments: { artifactId: output.id } }))).toMatchObject({
      id: output.id,
      executionId: started.executionId,
    });
    const downloaded = ok(await client.callTool({ name: 'download-artifact', arguments: { artifactId: output.id } }));
    expect(downloaded).toMatchObject({ encoding: 'utf-8', content: expect.stringContaining('## Notes') });
    expect(ok(await client.callTool({ name: 'delete-artifact', arguments: { artifactId: output.id } }))).toEqual({ success: true });

    for (const [name, args] of [
      ['execute-skill', { slug: 'not-installed', input: 'x' }],
      ['get-execution-status', { executionId: 'exec_999999' }],
      ['cancel-execution', { executionId: 'exec_999999' }],
      ['get-artifact', { artifactId: output.id }],
      ['download-artifact', { artifactId: output.id }],
      ['delete-artifact', { artifactId: output.id }],
    ] as const) {
      failure(await client.callTool({ name, arguments: args }), 'NOT_FOUND');
    }
  });

  it('refuses bad arguments as a tool error, before any service runs', async () => {
    const { key, client } = await setup();
    for (const [name, args] of [
      ['execute-skill', { slug: 'notes' }],
      ['write-memory', { content: 'x', mode: 'prepend' }],
      ['list-executions', { limit: 0 }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError).toBe(true);
    }
    expect((await call('/api/v1/executions', { apiKey: key })).body.items).toEqual([]);
    expect((await call('/api/v1/memory', { apiKey: key })).body.content).toBe('');
  });

  it('records the client’s interface label from its User-Agent', async () => {
    const { user, key } = await setup();
    const vscode = await connect(key, { 'user-agent': 'Visual Studio Code/1.99 (vscode mcp)' });
    const started = ok(await vscode.callTool({ name: 'execute-skill', arguments: { slug: 'notes', input: 'Hello there.' } }));
    await waitForStatus(user, started.executionId, 'completed');
    const history = ok(await vscode.callTool({ name: 'list-executions', arguments: {} }));
    expect(history.items[0]).toMatchObject({ source: 'mcp', interface: 'mcp-vscode' });
  });

  it('reads and writes working memory; concurrent appends are all kept', async () => {
    const { client } = await setup();
    expect(ok(await client.callTool({ name: 'write-memory', arguments: { content: 'Start', mode: 'overwrite' } }))).toMatchObject({ content: 'Start' });
    await Promise.all(Array.from({ length: 12 }, (_, i) => client.callTool({ name: 'write-memory', arguments: { content: `note ${i}`, mode: 'append' } })));
    const { content } = ok(await client.callTool({ name: 'read-memory', arguments: {} }));
    const entries = content.split('\n\n---\n\n');
    expect(entries[0]).toBe('Start');
    expect(entries.slice(1).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `note ${i}`).sort());
  });

  it('applies the scope of the REST route each tool mirrors', async () => {
    const { client } = await setup(['billing:read', 'memory:read']);
    expect(ok(await client.callTool({ name: 'get-credit-balance', arguments: {} }))).toMatchObject({ balance: 100, canExecute: true });
    expect(ok(await client.callTool({ name: 'read-memory', arguments: {} }))).toMatchObject({ content: '' });
    const denied = failure(await client.callTool({ name: 'write-memory', arguments: { content: 'x', mode: 'append' } }), 'FORBIDDEN');
    expect(denied.details).toEqual({ scope: 'memory:write' });
    failure(await client.callTool({ name: 'execute-skill', arguments: { slug: 'notes', input: 'x' } }), 'FORBIDDEN');
    failure(await client.callTool({ name: 'list-installed-skills', arguments: {} }), 'FORBIDDEN');
  });
});

describe('the workflow tools', () => {
  const humanInput = { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Ship it?' } } };

  it('start, list, show, resume a suspended run to success, with the resume errors as tool errors', async () => {
    const { user, client } = await setup();
    await install(user, 'ship', definition('ship', [humanInput, mapping('after', { answer: { step: 'approve', path: 'ok' } })]));
    const started = ok(await client.callTool({ name: 'start-workflow', arguments: { workflowId: 'ship', inputs: {} } }));
    expect(started).toEqual({ runId: expect.any(String), workflowId: 'ship', status: 'started' });
    await waitForRun(user, started.runId, ['suspended']);

    expect(ok(await client.callTool({ name: 'list-workflow-runs', arguments: {} })).runs.map((r: { runId: string }) => r.runId)).toEqual([started.runId]);
    expect(ok(await client.callTool({ name: 'get-workflow-run', arguments: { runId: started.runId } })).run).toMatchObject({ status: 'suspended' });
    failure(await client.callTool({ name: 'resume-workflow-run', arguments: { runId: started.runId, stepId: 'nope', resumeData: {} } }), 'STEP_MISMATCH');
    expect(ok(await client.callTool({ name: 'resume-workflow-run', arguments: { runId: started.runId, resumeData: { ok: true } } }))).toEqual({
      runId: started.runId,
      status: 'running',
    });
    const { run } = await waitForRun(user, started.runId, ['success']);
    expect(run.snapshot.result).toEqual({ answer: true });

    // A finished run answers spec 7.3's own shape, carried as is.
    const finished = await client.callTool({ name: 'resume-workflow-run', arguments: { runId: started.runId, resumeData: {} } });
    expect(finished.isError).toBe(true);
    expect(toolJson(finished)).toEqual({ cancelled: true, error: expect.any(String) });
    failure(await client.callTool({ name: 'get-workflow-run', arguments: { runId: 'no-such-run' } }), 'NOT_FOUND');
    failure(await client.callTool({ name: 'start-workflow', arguments: { workflowId: 'no-such-workflow' } }), 'NOT_FOUND');
  });

  it('cancels a run, and keeps other workspaces’ runs out of reach', async () => {
    const { user, client } = await setup();
    await install(user, 'wait', definition('wait', [humanInput]));
    const { runId } = ok(await client.callTool({ name: 'start-workflow', arguments: { workflowId: 'wait' } }));
    await waitForRun(user, runId, ['suspended']);
    const other = await setup();
    failure(await other.client.callTool({ name: 'cancel-workflow-run', arguments: { runId } }), 'NOT_FOUND');
    failure(await other.client.callTool({ name: 'get-workflow-run', arguments: { runId } }), 'NOT_FOUND');
    expect(ok(await client.callTool({ name: 'cancel-workflow-run', arguments: { runId } }))).toEqual({ success: true, runId });
    expect((await waitForRun(user, runId, ['canceled'])).run.status).toBe('canceled');
  });
});

describe('the MCP endpoint over HTTP', () => {
  const post = (headers: Record<string, string>, method = 'POST', message: object = { method: 'tools/list' }) =>
    exports.default.fetch(`${BASE}/mcp/`, {
      method,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: method === 'POST' ? JSON.stringify({ jsonrpc: '2.0', id: 1, ...message }) : undefined,
    });

  it('answers no key 401 in the envelope with WWW-Authenticate, and a bad key 401 too', async () => {
    for (const [headers, problem] of [
      [{}, ''],
      [{ 'x-api-key': 'sk_live_not-a-real-key' }, ', error="invalid_token", error_description="The API key is not valid"'],
    ] as [Record<string, string>, string][]) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"${problem}, scope="${MCP_STARTING_SCOPES.join(' ')}"`,
      );
      expect((await res.json()) as object).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    }
  });

  /** The challenge's parameters (RFC 9110 11.6.1 auth-params, all quoted here). */
  const challengeOf = (res: Response) => {
    const header = res.headers.get('www-authenticate') ?? '';
    expect(header).toMatch(/^Bearer /);
    return Object.fromEntries([...header.matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
  };

  it('answers every 401 and 403 with the whole challenge: where to sign in, what to ask for, what was wrong', async () => {
    const user = await signUp();
    const revokedKey = await createKey(user, ['memory:read']);
    expect((await call(`/api/v1/api-keys/${revokedKey.id}/revoke`, { method: 'POST', token: user.token })).status).toBe(200);
    const unactivated = await createKey(user, ['memory:read'], { pendingActivation: true });
    const expiring = (await tokensFor('memory:read')).tokens.access_token as string;
    const revoking = await tokensFor('memory:read');
    const revoked = await raw('/auth/oauth2/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: revoking.tokens.access_token, client_id: revoking.clientId }),
    });
    expect(revoked.status).toBe(200);
    const cases: [string, Record<string, string>, number, string | undefined][] = [
      ['no credential', {}, 401, undefined],
      ['an unknown API key', { 'x-api-key': 'sk_live_not-a-real-key' }, 401, 'invalid_token'],
      ['an unknown bearer token', { authorization: 'Bearer oat_not-a-real-token' }, 401, 'invalid_token'],
      ['an API key sent as a bearer token', { authorization: 'Bearer sk_live_not-a-real-key' }, 401, 'invalid_token'],
      ['a revoked bearer token', { authorization: `Bearer ${revoking.tokens.access_token}` }, 401, 'invalid_token'],
      ['a revoked API key', { 'x-api-key': revokedKey.key }, 403, 'invalid_token'],
      ['an unactivated API key', { 'x-api-key': unactivated.key }, 403, 'invalid_token'],
      ['a foreign Origin', { 'x-api-key': revokedKey.key, origin: 'https://evil.example' }, 403, undefined],
    ];
    advanceClock(3601_000);
    cases.push(['an expired bearer token', { authorization: `Bearer ${expiring}` }, 401, 'invalid_token']);
    try {
      for (const [what, headers, status, error] of cases) {
        const res = await post(headers);
        expect(res.status, what).toBe(status);
        const challenge = challengeOf(res);
        expect(challenge, what).toMatchObject({ resource_metadata: `${BASE}/.well-known/oauth-protected-resource/mcp`, scope: MCP_STARTING_SCOPES.join(' ') });
        expect(challenge.error, what).toBe(error);
        if (error) expect(challenge.error_description, what).toEqual(expect.any(String));
      }
    } finally {
      resetClock();
    }
  });

  it('takes OAuth bearer tokens: in-scope tools run, and a missing scope is a 403 scope challenge', async () => {
    const { tokens } = await tokensFor('memory:read billing:read');
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    const client = await connectMcp(auth);
    expect(ok(await client.callTool({ name: 'get-credit-balance', arguments: {} }))).toMatchObject({ balance: 100 });

    const callTool = (name: string, args: object) =>
      exports.default.fetch(`${BASE}/mcp`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } }),
      });
    const refused = await callTool('write-memory', { content: 'x', mode: 'append' });
    expect(refused.status).toBe(403);
    // What the token holds plus what it lacks: the client's new grant replaces the old one.
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="memory:read billing:read memory:write offline_access"`,
    );
    expect(await refused.json()).toMatchObject({ error: { code: 'FORBIDDEN', details: { scope: 'memory:write' } } });
    expect((await callTool('read-memory', {})).status).toBe(200);

    const revoked = await exports.default.fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer oat_not-a-real-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('steps up to a grant that keeps what the token held and adds what it lacked', async () => {
    const mcp = { resource: `${BASE}/mcp` };
    const first = await tokensFor('memory:read billing:read', { query: mcp });
    const refused = await post({ authorization: `Bearer ${first.tokens.access_token}` }, 'POST', {
      method: 'tools/call',
      params: { name: 'write-memory', arguments: { content: 'x' } },
    });
    expect(refused.status).toBe(403);
    const asked = challengeOf(refused).scope!;
    // The client asks the same person again, as the SDKs do, for exactly what the challenge said.
    const again = await exchange(await authorizeCode(asked, { user: first.user, clientId: first.clientId }, { query: mcp }));
    const stepped = await connectMcp({ authorization: `Bearer ${((await again.json()) as { access_token: string }).access_token}` });
    expect(ok(await stepped.callTool({ name: 'write-memory', arguments: { content: 'kept' } }))).toBeTruthy();
    expect(ok(await stepped.callTool({ name: 'read-memory', arguments: {} }))).toMatchObject({ content: 'kept' });
    expect(ok(await stepped.callTool({ name: 'get-credit-balance', arguments: {} }))).toMatchObject({ balance: 100 });
  });

  it('starts a client that signs in with its challenge’s scopes with every tool it lists', async () => {
    const challenge = challengeOf(await post({}));
    const { tokens } = await tokensFor(challenge.scope!, { query: { resource: `${BASE}/mcp` } });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    const { tools } = await (await connectMcp(auth)).listTools();
    expect(tools.length).toBe(TOOL_NAMES.length);
    // The scope check of each listed tool comes before its arguments are read: none but the step-up tools is a step-up 403.
    for (const tool of tools) {
      const res = await post(auth, 'POST', { method: 'tools/call', params: { name: tool.name, arguments: {} } });
      expect(res.status, tool.name).toBe(STEP_UP_TOOLS[tool.name] ? 403 : 200);
    }
    // Connector tools also check their app's own scopes, read and exec.
    const client = await connectMcp(auth);
    const token = `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
    expect(ok(await client.callTool({ name: 'connect-connector', arguments: { connector: 'github', token } })).status).toBe('connected');
    expect(ok(await client.callTool({ name: 'list-github-repos', arguments: { connector: 'github' } }))).toBeTruthy();
  });

  it('lists the step-up tools without asking for their scopes at sign-in, and answers their first call with the step-up challenge', async () => {
    const mcp = { resource: `${BASE}/mcp` };
    expect(MCP_STARTING_SCOPES).not.toContain('profile:read');
    expect(MCP_STARTING_SCOPES).not.toContain('profile:write');
    const first = await tokensFor(challengeOf(await post({})).scope!, { query: mcp });
    const auth = { authorization: `Bearer ${first.tokens.access_token}` };
    const { tools } = await (await connectMcp(auth)).listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(Object.keys(STEP_UP_TOOLS)));
    const { workspaceId } = first.user;

    const read = await post(auth, 'POST', { method: 'tools/call', params: { name: 'get-retention', arguments: { workspaceId } } });
    expect(read.status).toBe(403);
    expect(challengeOf(read).error).toBe('insufficient_scope');
    // What the token holds plus the one scope it lacks.
    expect(challengeOf(read).scope!.split(' ').sort()).toEqual([...new Set([...first.tokens.scope.split(' '), 'profile:read', 'offline_access'])].sort());
    expect(await read.json()).toMatchObject({ error: { code: 'FORBIDDEN', details: { scope: 'profile:read' } } });

    // The client asks the person again for what the challenge names, then for profile:write the same way.
    const reading = await exchange(await authorizeCode(challengeOf(read).scope!, { user: first.user, clientId: first.clientId }, { query: mcp }));
    const readToken = ((await reading.json()) as { access_token: string }).access_token;
    const reader = await connectMcp({ authorization: `Bearer ${readToken}` });
    expect(ok(await reader.callTool({ name: 'get-retention', arguments: { workspaceId } }))).toMatchObject({ traces: 30, audit: 365 });
    const write = await post({ authorization: `Bearer ${readToken}` }, 'POST', {
      method: 'tools/call',
      params: { name: 'set-retention', arguments: { workspaceId, traces: 7 } },
    });
    expect(write.status).toBe(403);
    expect(challengeOf(write).scope!.split(' ')).toEqual(expect.arrayContaining(['profile:read', 'profile:write', 'memory:read']));
    const writing = await exchange(await authorizeCode(challengeOf(write).scope!, { user: first.user, clientId: first.clientId }, { query: mcp }));
    const writer = await connectMcp({ authorization: `Bearer ${((await writing.json()) as { access_token: string }).access_token}` });
    expect(ok(await writer.callTool({ name: 'set-retention', arguments: { workspaceId, traces: 7 } }))).toMatchObject({ traces: 7, audit: 365 });
    expect((await call(`/api/v1/workspaces/${workspaceId}/retention`, { token: first.user.token })).body.traces).toBe(7);
    // The same token sets spend limits, and members read them with the starting grant (billing:read).
    expect(ok(await writer.callTool({ name: 'set-limits', arguments: { workspaceId, monthly: 25 } }))).toMatchObject({ monthly: 25, daily: null });
    expect(ok(await (await connectMcp(auth)).callTool({ name: 'get-limits', arguments: { workspaceId } }))).toMatchObject({ monthly: 25 });
  });

  it('answers GET and DELETE 405 before the transport, and a foreign Origin 403', async () => {
    const { key } = await setup();
    for (const method of ['GET', 'DELETE']) {
      const res = await post({ 'x-api-key': key }, method);
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
    }
    const foreign = await post({ 'x-api-key': key, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expectError({ status: foreign.status, headers: foreign.headers, body: await foreign.json() }, 403, 'FORBIDDEN');
    expect((await post({ 'x-api-key': key, origin: BASE })).status).toBe(200);
  });

  it('shares the REST rate limit of the key, with the same headers', async () => {
    const { key } = await setup();
    const rest = await call('/api/v1/memory', { apiKey: key });
    const viaMcp = await post({ 'x-api-key': key });
    expect(viaMcp.status).toBe(200);
    expect(Number(viaMcp.headers.get('x-ratelimit-remaining'))).toBe(Number(rest.headers.get('x-ratelimit-remaining')) - 1);
    expect(viaMcp.headers.get('x-ratelimit-limit')).toBe('100');
  });
});
