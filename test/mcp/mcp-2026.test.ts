import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { BASE, call, createKey, signUp } from '../helpers/api';
import { envelope2026, MCP_2026, post2026 } from '../helpers/mcp';
import { definition, install } from '../helpers/workflows';

/** The 2026-07-28 revision spoken as raw JSON-RPC: no handshake, every request carries its `_meta` envelope and `Mcp-*` headers. */

const VERSION = MCP_2026;
const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
const ENVELOPE = envelope2026();

async function setup(scopes: string[] = ['*']) {
  const user = await signUp();
  await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
  return { user, key: (await createKey(user, scopes)).key };
}

interface Rpc {
  method: string;
  params?: Record<string, unknown>;
  /** The `_meta` to send; the full envelope unless given. */
  meta?: Record<string, unknown>;
  /** Headers beyond the key and the ones the body implies, or overriding them. */
  headers?: Record<string, string>;
}

/** One request as a 2026-07-28 client sends it (the envelope unless `meta` is given). */
const post = (key: string, { method, params = {}, meta = ENVELOPE, headers = {} }: Rpc, id: number | string = 1) =>
  post2026(key, method, params, meta, { id, headers });

async function result(response: Response) {
  expect(response.status).toBe(200);
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
  expect(body.error).toBeUndefined();
  return body.result!;
}

const SERVER_INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'workspace-skills-service', version: '1.0.0' } };

describe('MCP 2026-07-28', () => {
  it('server/discover names the stateless versions, the capabilities and the server, without a handshake', async () => {
    const { key } = await setup();
    const discovered = await result(await post(key, { method: 'server/discover' }));
    expect(discovered).toMatchObject({
      resultType: 'complete',
      // 2025 versions are chosen by initialize, not by a per-request version.
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: {}, prompts: { listChanged: true }, resources: { listChanged: true }, completions: {} },
      _meta: SERVER_INFO,
      ttlMs: 3_600_000,
      cacheScope: 'public',
    });
  });

  it('lists tools, prompts and resources with cache hints, in the same order every time', async () => {
    const { user, key } = await setup();
    await install(user, 'wait', definition('wait', [{ type: 'tool', id: 'approve', toolId: 'human-input', options: {} }]));
    const tools = await result(await post(key, { method: 'tools/list' }));
    expect(tools).toMatchObject({ resultType: 'complete', ttlMs: 3_600_000, cacheScope: 'public', _meta: SERVER_INFO });
    const names = (tools.tools as { name: string }[]).map((t) => t.name);
    expect(names).toContain('execute-skill');
    expect((await result(await post(key, { method: 'tools/list' }))).tools).toEqual(tools.tools);

    const prompts = await result(await post(key, { method: 'prompts/list' }));
    expect(prompts).toMatchObject({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'private', prompts: [{ name: 'notes', title: 'Notes' }] });
    const resources = await result(await post(key, { method: 'resources/list' }));
    expect(resources).toMatchObject({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'private' });
    expect((resources.resources as { uri: string }[]).map((r) => r.uri)).toEqual([
      'ui://workspace-skills/run-view',
      'memory://workspace',
      'skill://notes/SKILL.md',
      'workflow://wait',
    ]);
    expect((await result(await post(key, { method: 'resources/list' }))).resources).toEqual(resources.resources);
    const templates = await result(await post(key, { method: 'resources/templates/list' }));
    expect(templates).toMatchObject({ resultType: 'complete', cacheScope: 'public' });
  });

  it('calls a tool, answered with resultType and serverInfo; an unknown resource is -32602', async () => {
    const { key } = await setup();
    const called = await result(await post(key, { method: 'tools/call', params: { name: 'list-installed-skills', arguments: {} } }));
    expect(called).toMatchObject({ resultType: 'complete', _meta: SERVER_INFO, structuredContent: { skills: [{ slug: 'notes' }] } });
    const missing = (await (await post(key, { method: 'resources/read', params: { uri: 'nothing://here' } })).json()) as { error: object };
    expect(missing.error).toMatchObject({ code: -32602, data: { uri: 'nothing://here' } });
  });

  it('refuses headers that do not match the body with HeaderMismatch, and a missing Mcp-Name too', async () => {
    const { key } = await setup();
    const params = { name: 'list-installed-skills', arguments: {} };
    const mismatch = await post(key, { method: 'tools/call', params, headers: { 'mcp-name': 'delete-artifact' } });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.json()).toMatchObject({ id: 1, error: { code: -32020 } });
    const wrongMethod = await post(key, { method: 'tools/list', headers: { 'mcp-method': 'prompts/list' } });
    expect(wrongMethod.status).toBe(400);
    expect(await wrongMethod.json()).toMatchObject({ error: { code: -32020 } });
    const unnamed = await exports.default.fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'x-api-key': key,
        'mcp-protocol-version': VERSION,
        'mcp-method': 'tools/call',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { ...params, _meta: ENVELOPE } }),
    });
    expect(unnamed.status).toBe(400);
    expect(await unnamed.json()).toMatchObject({ error: { code: -32020 } });
  });

  it('refuses a request whose envelope lacks its required fields (-32602, 400), and an unknown version with the versions served', async () => {
    const { key } = await setup();
    const noCapabilities = await post(key, {
      method: 'tools/list',
      meta: { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientInfo': ENVELOPE['io.modelcontextprotocol/clientInfo'] },
    });
    expect(noCapabilities.status).toBe(400);
    expect(await noCapabilities.json()).toMatchObject({ error: { code: -32602 } });
    // A 2026-07-28 request with no envelope at all.
    const bare = await post(key, { method: 'tools/list', meta: {} });
    expect(bare.status).toBe(400);
    expect(await bare.json()).toMatchObject({ error: { code: -32602 } });
    const unknown = await post(key, {
      method: 'tools/list',
      meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
      headers: { 'mcp-protocol-version': '2099-01-01' },
    });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({
      error: { code: -32022, data: { supported: expect.arrayContaining(['2026-07-28']), requested: '2099-01-01' } },
    });
  });

  it('subscriptions/listen acknowledges what it will send, then tells of prompt and resource list changes when a skill is installed or uninstalled', async () => {
    const { user, key } = await setup();
    const listen = await post(
      key,
      { method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true } } },
      'sub-1',
    );
    expect(listen.status).toBe(200);
    expect(listen.headers.get('content-type')).toContain('text/event-stream');
    const reader = listen.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const chunk = await reader.read();
        if (chunk.done) throw new Error(`stream ended before ${pattern}: ${text}`);
        text += chunk.value;
      }
    };
    await until(/notifications\/subscriptions\/acknowledged/);
    const ack = JSON.parse(/^data: (.*acknowledged.*)$/m.exec(text)![1]!);
    // The tool list never changes while a deployment runs: that is not acknowledged.
    expect(ack.params).toEqual({
      _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' },
      notifications: { promptsListChanged: true, resourcesListChanged: true },
    });

    await call('/api/v1/skills/digest', { method: 'PUT', token: user.token, body: { ...SKILL, name: 'Digest' } });
    await until(/notifications\/prompts\/list_changed[\s\S]*notifications\/resources\/list_changed/);
    expect(text).toContain('"io.modelcontextprotocol/subscriptionId":"sub-1"');
    // A change made through a tool is heard the same way.
    text = '';
    await result(await post(key, { method: 'tools/call', params: { name: 'uninstall-skill', arguments: { slug: 'digest' } } }, 2));
    await until(/notifications\/prompts\/list_changed/);
    await reader.cancel();
  });

  it('sends run text as log messages only to a call that asked for a level in its _meta', async () => {
    const { key } = await setup();
    const run = (meta: Record<string, unknown>) =>
      post(key, {
        method: 'tools/call',
        params: { name: 'execute-skill', arguments: { slug: 'notes', input: 'We ship Friday.' } },
        meta: { ...ENVELOPE, ...meta },
      });
    const logged = await (await run({ progressToken: 'p1', 'io.modelcontextprotocol/logLevel': 'info' })).text();
    expect(logged).toContain('"method":"notifications/progress"');
    expect(logged).toContain('"method":"notifications/message"');
    const quiet = await (await run({ progressToken: 'p2' })).text();
    expect(quiet).toContain('"method":"notifications/progress"');
    expect(quiet).not.toContain('"method":"notifications/message"');
  });
});
