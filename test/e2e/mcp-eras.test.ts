import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService } from './helpers';
import { startPrepared } from './prepared';

/** One endpoint, both protocol eras: the SDK's current client in 2026-07-28 mode and SDK 1.x in 2025-11-25, against `npm start`. */
describe('MCP protocol versions over wrangler dev', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startPrepared();
  });
  afterAll(() => service?.stop());

  const headers = () => ({ 'x-api-key': service.apiKey });
  const textOf = (result: object) => JSON.parse((result as { content: { text: string }[] }).content[0]!.text);

  it('a 2026-07-28 client discovers, lists tools and calls one without a handshake', async () => {
    const client = new ModernClient({ name: 'e2e-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: headers() } }));
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect(client.getServerCapabilities()).toMatchObject({ prompts: { listChanged: true }, resources: { listChanged: true } });

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute-skill', 'list-installed-skills']));
    const listed = await client.callTool({ name: 'list-installed-skills', arguments: {} });
    expect(listed.isError).toBeFalsy();
    expect(textOf(listed)).toHaveProperty('skills');
    await client.close();
  });

  it('a 2025-11-25 client initializes, lists tools and calls one as before', async () => {
    const client = new Client({ name: 'e2e-legacy', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: headers() } });
    await client.connect(transport);
    expect(transport.protocolVersion).toBe('2025-11-25');
    expect(client.getServerCapabilities()?.prompts?.listChanged).not.toBe(true);

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['execute-skill', 'list-installed-skills']));
    const listed = await client.callTool({ name: 'list-installed-skills', arguments: {} });
    expect(listed.isError).toBeFalsy();
    expect(textOf(listed)).toHaveProperty('skills');
    await client.close();
  });
});
