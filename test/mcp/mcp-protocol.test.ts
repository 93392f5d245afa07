import { ErrorCode, LoggingMessageNotificationSchema, McpError, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { SESSION_TTL_MS } from '../../workers/auth/credentials';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, createKey, sessionIdOf, signUp } from '../helpers/api';
import { runHousekeeping } from '../helpers/housekeeping';
import { downloadArtifactCapability } from '../../workers/capabilities/artifacts';
import type { Capability } from '../../workers/capabilities/capability';
import { readMemoryCapability } from '../../workers/capabilities/memory';
import { listInstalledSkillsCapability } from '../../workers/capabilities/skills';
import { getWorkflowCapability } from '../../workers/capabilities/workflows';
import { PROMPT_CAPABILITY, resourceCapability } from '../../workers/mcp/resources';
import { connectMcp, ok } from '../helpers/mcp';
import { tokensFor } from '../helpers/oauth';
import { catalogEntry, seedCatalog } from '../helpers/skills';
import { bundleManifest } from '../../workers/lib/bundle';
import { decodeFiles } from '../../workers/services/catalog';
import { definition, install } from '../helpers/workflows';

/** The MCP surface beyond tools: prompts, resources, completion, logging, live progress and protocol details. */

afterEach(() => resetClock());

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };

async function setup(scopes: string[] = ['*']) {
  const user = await signUp();
  await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
  const key = (await createKey(user, scopes)).key;
  return { user, key, client: await connectMcp({ 'x-api-key': key }) };
}

const post = (body: unknown, headers: Record<string, string> = {}, url = `${BASE}/mcp`) =>
  exports.default.fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

describe('capabilities', () => {
  it('advertise prompts, resources, logging and completions, and no list changes a stateless server cannot send', async () => {
    const { client } = await setup();
    const capabilities = client.getServerCapabilities()!;
    expect(capabilities).toMatchObject({ prompts: {}, resources: {}, logging: {}, completions: {} });
    expect(capabilities.tools?.listChanged).not.toBe(true);
    expect(capabilities.resources?.listChanged).not.toBe(true);
    expect(capabilities.prompts?.listChanged).not.toBe(true);
  });
});

describe('prompts', () => {
  it('are the installed skills, each with an input argument', async () => {
    const { client } = await setup();
    const { prompts } = await client.listPrompts();
    expect(prompts).toEqual([
      { name: 'notes', title: 'Notes', description: 'Summarises.', arguments: [{ name: 'input', description: expect.any(String), required: true }] },
    ]);
    const prompt = await client.getPrompt({ name: 'notes', arguments: { input: 'Friday launch' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: '# Notes\nSummarise.\n\n---\n\nFriday launch' } }]);
    await expect(client.getPrompt({ name: 'no-such-skill', arguments: { input: 'x' } })).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
  });
});

describe('resources', () => {
  it('list working memory, skill files and workflows, with templates for ids', async () => {
    const { user, client } = await setup();
    await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: '# Team\nShip Friday.' } });
    await install(user, 'wait', definition('wait', [{ type: 'tool', id: 'approve', toolId: 'human-input', options: {} }]));
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(expect.arrayContaining(['memory://workspace', 'skill://notes/SKILL.md', 'workflow://wait']));
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['artifact://{artifactId}', 'skill://{slug}/{+path}', 'workflow://{workflowId}']);

    expect((await client.readResource({ uri: 'memory://workspace' })).contents).toEqual([
      { uri: 'memory://workspace', mimeType: 'text/markdown', text: '# Team\nShip Friday.' },
    ]);
    const skillMd = (await client.readResource({ uri: 'skill://notes/SKILL.md' })).contents[0] as { text: string };
    expect(skillMd.text).toContain('Summarise.');
    const workflow = (await client.readResource({ uri: 'workflow://wait' })).contents[0] as { text: string };
    expect(JSON.parse(workflow.text)).toMatchObject({ id: 'wait' });
  });

  it('answers an unknown or foreign resource with the -32002 error', async () => {
    const { client } = await setup();
    for (const uri of ['skill://notes/missing.md', 'skill://not-installed/SKILL.md', 'artifact://art_999999', 'workflow://none', 'nothing://here']) {
      await expect(client.readResource({ uri }), uri).rejects.toMatchObject({ code: -32002 });
    }
  });

  it('say each error once: the client adds its "MCP error <code>:" prefix to the plain message', async () => {
    const { client } = await setup(['profile:read']);
    const full = await connectMcp({ 'x-api-key': (await setup()).key });
    await expect(full.readResource({ uri: 'nothing://here' })).rejects.toThrow(/^MCP error -32002: Resource not found$/);
    await expect(full.getPrompt({ name: 'not-installed', arguments: { input: 'x' } })).rejects.toThrow(
      /^MCP error -32602: No installed skill "not-installed"$/,
    );
    await expect(client.readResource({ uri: 'memory://workspace' })).rejects.toThrow(/^MCP error -32600: This credential lacks the scope "memory:read"$/);
    // On the wire too: the message carries no code.
    const wire = await post({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'nothing://here' } }, { 'x-api-key': (await setup()).key });
    expect(((await wire.json()) as { error: object }).error).toEqual({ code: -32002, message: 'Resource not found', data: { uri: 'nothing://here' } });
  });

  it('apply the scope of the REST route they mirror: a key without it sees none, an OAuth token gets a step-up challenge', async () => {
    const { client } = await setup(['profile:read']);
    expect((await client.listResources()).resources).toEqual([]);
    expect((await client.listPrompts()).prompts).toEqual([]);
    await expect(client.readResource({ uri: 'memory://workspace' })).rejects.toBeInstanceOf(McpError);

    const { tokens } = await tokensFor('profile:read');
    const refused = await post(
      { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'memory://workspace' } },
      { authorization: `Bearer ${tokens.access_token}` },
    );
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="profile:read memory:read offline_access"');
  });
});

describe('resources and prompts are guarded by the operation they read through', () => {
  const kinds = [
    ['memory://workspace', readMemoryCapability],
    ['artifact://art_1', downloadArtifactCapability],
    ['skill://notes/SKILL.md', listInstalledSkillsCapability],
    ['workflow://wait', getWorkflowCapability],
  ] as const;
  const scopeOf = (capability: Capability) => ('scope' in capability.access ? capability.access.scope : 'none');

  it('a key without the operation’s scope is refused with the operation’s message; one holding just that scope passes the check', async () => {
    const { user, client } = await setup(['profile:read']);
    for (const [uri, capability] of kinds) {
      expect(resourceCapability(uri), uri).toBe(capability);
      await expect(client.readResource({ uri }), uri).rejects.toThrow(`This credential lacks the scope "${scopeOf(capability)}"`);
      const holder = await connectMcp({ 'x-api-key': (await createKey(user, [scopeOf(capability)])).key });
      // Past the check, a resource that does not exist is the resources spec's not found.
      await holder.readResource({ uri }).catch((error: McpError) => expect(error.code, uri).toBe(-32002));
    }
    await expect(client.getPrompt({ name: 'notes', arguments: { input: 'x' } })).rejects.toThrow(
      `This credential lacks the scope "${scopeOf(PROMPT_CAPABILITY)}"`,
    );
  });
});

describe('completion/complete', () => {
  it('completes skill slugs and workflow ids in resource templates', async () => {
    const { user, client } = await setup();
    await install(user, 'weekly-report', definition('weekly-report', [{ type: 'tool', id: 'approve', toolId: 'human-input', options: {} }]));
    const slugs = await client.complete({ ref: { type: 'ref/resource', uri: 'skill://{slug}/{+path}' }, argument: { name: 'slug', value: 'no' } });
    expect(slugs.completion.values).toEqual(['notes']);
    const workflows = await client.complete({ ref: { type: 'ref/resource', uri: 'workflow://{workflowId}' }, argument: { name: 'workflowId', value: 'week' } });
    expect(workflows.completion.values).toEqual(['weekly-report']);
    const none = await client.complete({ ref: { type: 'ref/prompt', name: 'notes' }, argument: { name: 'input', value: 'a' } });
    expect(none.completion.values).toEqual([]);
  });
});

describe('search-marketplace', () => {
  it('finds catalog skills by words and category', async () => {
    const slug = `mcp-find-${crypto.randomUUID().slice(0, 8)}`;
    await seedCatalog([catalogEntry(slug, { title: 'Zebra Finder', category: 'research', description: 'Finds striped animals.' })]);
    const { client } = await setup(['profile:read']);
    const found = ok(await client.callTool({ name: 'search-marketplace', arguments: { query: 'striped animals' } }));
    expect(found.skills).toEqual([expect.objectContaining({ slug, name: 'Zebra Finder', category: 'research', eval: null })]);
    expect(ok(await client.callTool({ name: 'search-marketplace', arguments: { query: 'striped animals', category: 'design' } })).skills).toEqual([]);
  });

  it('shows the eval the catalog ships for a skill’s current version, not one of an older version', async () => {
    const slug = `mcp-evald-${crypto.randomUUID().slice(0, 8)}`;
    const entry = catalogEntry(slug, { title: 'Measured Okapi', description: 'Finds okapis, measurably.' });
    const { checksum } = await bundleManifest(decodeFiles(entry.files));
    const result = (contentChecksum: string, version: string) => ({
      version,
      contentChecksum,
      provider: 'local',
      model: 'local-1',
      local: true,
      repetitions: 1,
      casesCount: 2,
      passRateWith: 1,
      passRateWithout: 0,
      difference: 1,
      completedAt: '2026-05-02T00:00:00.000Z',
      cases: [],
    });
    await seedCatalog([{ ...entry, evals: [result('0'.repeat(64), '0.9.0'), result(checksum, '1.0.0')] }]);
    const { client } = await setup(['profile:read']);
    const found = ok(await client.callTool({ name: 'search-marketplace', arguments: { query: 'okapis, measurably' } }));
    expect(found.skills).toEqual([
      expect.objectContaining({
        slug,
        eval: {
          version: '1.0.0',
          model: 'local-1',
          local: true,
          casesCount: 2,
          passRateWith: 1,
          passRateWithout: 0,
          difference: 1,
          completedAt: '2026-05-02T00:00:00.000Z',
        },
      }),
    ]);
  });
});

describe('live progress', () => {
  it('execute-skill with a progressToken streams progress and, once a level is set, the run’s text, until the run ends', async () => {
    const { client } = await setup();
    await client.setLoggingLevel('info');
    const logs: LoggingMessageNotification['params'][] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    const progress: Progress[] = [];
    const started = ok(
      await client.callTool({ name: 'execute-skill', arguments: { slug: 'notes', input: 'We ship Friday. Ana writes the notes.' } }, undefined, {
        onprogress: (p) => progress.push(p),
      }),
    );
    expect(started).toMatchObject({ executionId: expect.stringMatching(/^exec_\d+$/), status: 'started' });
    // The answer came after the run ended.
    expect(ok(await client.callTool({ name: 'get-execution-status', arguments: { executionId: started.executionId } })).status).toBe('completed');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
    expect(progress.at(-1)!.message).toBe('Run completed');
    expect(logs.length).toBeGreaterThan(0);
    expect(logs[0]).toMatchObject({ level: 'info', logger: 'execute-skill' });
    expect(logs.map((l) => l.data).join('').length).toBeGreaterThan(20);
  });

  it('without a level sends progress but no log messages; without a token the call answers JSON at once', async () => {
    const { key, client } = await setup();
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n));
    const progress: Progress[] = [];
    await client.callTool({ name: 'execute-skill', arguments: { slug: 'notes', input: 'Quiet run.' } }, undefined, { onprogress: (p) => progress.push(p) });
    expect(progress.length).toBeGreaterThan(0);
    expect(logs).toEqual([]);

    const sse = await post(
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'execute-skill', arguments: { slug: 'notes', input: 'Again.' }, _meta: { progressToken: 'p1' } },
      },
      { 'x-api-key': key, 'mcp-protocol-version': '2025-06-18' },
    );
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    const events = await sse.text();
    expect(events).toContain('"method":"notifications/progress"');
    expect(events).toContain('"progressToken":"p1"');
    expect(events).toContain('"id":3');

    const plain = await post(
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'list-executions', arguments: {} } },
      { 'x-api-key': key, 'mcp-protocol-version': '2025-06-18' },
    );
    expect(plain.headers.get('content-type')).toContain('application/json');
  });
});

describe('protocol details', () => {
  it('an unknown tool is a JSON-RPC error, not a tool result', async () => {
    const { client } = await setup();
    await expect(client.callTool({ name: 'no-such-tool', arguments: {} })).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
  });

  it('refuses JSON-RPC batches for revisions that removed them, and still takes them in 2025-03-26', async () => {
    const { key } = await setup();
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ];
    const refused = await post(batch, { 'x-api-key': key, 'mcp-protocol-version': '2025-06-18' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    const old = await post(batch, { 'x-api-key': key, 'mcp-protocol-version': '2025-03-26' });
    expect(old.status).toBe(200);
    expect(((await old.json()) as unknown[]).length).toBe(2);
  });
});

describe('browsers', () => {
  it('answer preflights for allowed origins and expose WWW-Authenticate; others get no CORS headers', async () => {
    const preflight = (origin: string) =>
      exports.default.fetch(`${BASE}/mcp`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-protocol-version' },
      });
    for (const origin of [BASE, 'http://localhost:6274', 'http://127.0.0.1:5173']) {
      const res = await preflight(origin);
      expect(res.status, origin).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      expect(res.headers.get('access-control-allow-headers')).toContain('mcp-protocol-version');
    }
    expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();

    const challenge = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'http://localhost:6274' });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    expect(challenge.headers.get('access-control-expose-headers')).toContain('www-authenticate');
  });

  it('checks Origin against the configured public origin, never the request’s own Host (DNS rebinding)', async () => {
    const { key } = await setup();
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const ok = await post(body, { 'x-api-key': key, origin: 'http://localhost:6274' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    // A rebound name: the page's origin and the Host header agree, and it is still refused.
    const rebound = await post(body, { 'x-api-key': key, origin: 'https://rebound.example' }, 'https://rebound.example/mcp');
    expect(rebound.status).toBe(403);
  });
});

describe('logging levels', () => {
  it('set through a session are deleted by the hourly housekeeping once the session has ended, and kept while it lasts', async () => {
    const [signedOut, expiring, staying] = [await signUp(), await signUp(), await signUp()];
    for (const user of [signedOut, expiring, staying]) {
      const client = await connectMcp({ 'x-auth-token': user.token });
      await client.setLoggingLevel('warning');
      await client.close();
    }
    const keyed = await createKey(staying);
    const keyClient = await connectMcp({ 'x-api-key': keyed.key });
    await keyClient.setLoggingLevel('error');
    await keyClient.close();
    const levelOf = (credential: string) => env.DB.prepare('SELECT level FROM mcp_log_levels WHERE credential = ?').bind(credential).first();
    expect(await levelOf(`session:${sessionIdOf(signedOut)}`)).toEqual({ level: 'warning' });

    expect((await call('/auth/sign-out', { method: 'POST', token: signedOut.token })).status).toBe(200);
    // The one kept in use slides past the day the other expires.
    advanceClock(SESSION_TTL_MS - 24 * 3600_000);
    expect((await call('/api/v1/profile', { token: staying.token })).status).toBe(200);
    advanceClock(2 * 24 * 3600_000);
    await runHousekeeping();

    expect(await levelOf(`session:${sessionIdOf(signedOut)}`)).toBeNull();
    expect(await levelOf(`session:${sessionIdOf(expiring)}`)).toBeNull();
    expect(await levelOf(`session:${sessionIdOf(staying)}`)).toEqual({ level: 'warning' });
    expect(await levelOf(`api_key:${keyed.id.replace(/^key_/, '')}`)).toEqual({ level: 'error' });
  });
});
