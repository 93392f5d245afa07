import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService } from './helpers';
import { startPrepared } from './prepared';

/** The MCP endpoint as an MCP client sees it: the SDK's own client over real HTTP against `npm start`. */
describe('MCP over wrangler dev', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startPrepared();
  });
  afterAll(() => service?.stop());

  const connect = async (apiKey: string) => {
    const client = new Client({ name: 'e2e-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': apiKey } } }));
    return client;
  };
  const json = (result: Awaited<ReturnType<Client['callTool']>>) => JSON.parse((result.content as { text: string }[])[0]!.text);

  it('lists the tools, installs a catalog skill, runs it and reads its output', async () => {
    const client = await connect(service.apiKey);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute-skill', 'write-memory', 'download-artifact']));

    const [first] = (await (await fetch(`${service.base}/api/v1/marketplace/skills?limit=1`)).json()) as { slug: string }[];
    const installed = await client.callTool({ name: 'install-skill', arguments: { slug: first!.slug } });
    expect(json(installed)).toMatchObject({ slug: first!.slug });

    const started = json(await client.callTool({ name: 'execute-skill', arguments: { slug: first!.slug, input: 'Plan the launch. Ana writes the notes.' } }));
    expect(started.status).toBe('started');
    let status = json(await client.callTool({ name: 'get-execution-status', arguments: { executionId: started.executionId } }));
    for (let i = 0; i < 300 && status.status === 'working'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = json(await client.callTool({ name: 'get-execution-status', arguments: { executionId: started.executionId } }));
    }
    expect(status.status).toBe('completed');
    const artifacts = json(await client.callTool({ name: 'list-artifacts', arguments: {} })).data as { id: string; name: string; executionId: string }[];
    const output = artifacts.find((a) => a.name === 'output.md' && a.executionId === started.executionId)!;
    expect(json(await client.callTool({ name: 'download-artifact', arguments: { artifactId: output.id } })).content.length).toBeGreaterThan(20);
    await client.close();
  });

  it('answers a missing key 401 with WWW-Authenticate, before any MCP exchange', async () => {
    const res = await fetch(`${service.base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata=/);
    expect(await res.json()).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
  });
});
