import { describe, expect, it } from 'vitest';
import { call, createKey, signUp, waitForStatus } from '../helpers/api';
import { connectMcp, envelope2026, ok, post2026 } from '../helpers/mcp';

/** The run view, an MCP App (extension io.modelcontextprotocol/ui): the resource, the tools that point to it, what it reads. */

const VIEW = 'ui://workspace-skills/run-view';
const APP_MIME = 'text/html;profile=mcp-app';
const VIEW_TOOLS = ['execute-skill', 'get-execution-status', 'start-workflow', 'get-workflow-run'];

async function setup(scopes: string[] = ['*']) {
  const user = await signUp();
  await call('/api/v1/skills/notes', {
    method: 'PUT',
    token: user.token,
    body: { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes' },
  });
  const key = (await createKey(user, scopes)).key;
  return { user, key, client: await connectMcp({ 'x-api-key': key }) };
}

describe('the run view', () => {
  it('is listed and read as one self-contained HTML document of the MCP App type, asking for no network', async () => {
    const { client } = await setup();
    const listed = (await client.listResources()).resources.find((r) => r.uri === VIEW);
    expect(listed).toMatchObject({ uri: VIEW, mimeType: APP_MIME, _meta: { ui: { csp: {} } } });

    const [content, ...more] = (await client.readResource({ uri: VIEW })).contents as { uri: string; mimeType: string; text: string; _meta: object }[];
    expect(more).toEqual([]);
    expect(content).toMatchObject({ uri: VIEW, mimeType: APP_MIME, _meta: { ui: { csp: {}, prefersBorder: true } } });
    expect(content!.text).toMatch(/^<!doctype html>/);
    expect(content!.text).toContain('<main id="app">');
    // Nothing is loaded from elsewhere: the script and the styles are inline.
    expect(content!.text).not.toMatch(/<(script|link|img)\b[^>]*\b(src|href)=/i);
  });

  it('is pointed to by the four run tools’ _meta.ui.resourceUri (and the flat key older hosts read), by no other', async () => {
    const { client } = await setup();
    const { tools } = await client.listTools();
    const pointing = tools.filter((t) => t._meta?.ui !== undefined);
    expect(pointing.map((t) => t.name).sort()).toEqual([...VIEW_TOOLS].sort());
    for (const tool of pointing) expect(tool._meta, tool.name).toEqual({ ui: { resourceUri: VIEW }, 'ui/resourceUri': VIEW });
  });

  it('is offered as the io.modelcontextprotocol/ui extension to both protocol eras', async () => {
    const { key, client } = await setup();
    const extension = { 'io.modelcontextprotocol/ui': { mimeTypes: [APP_MIME] } };
    expect(client.getServerCapabilities()?.extensions).toMatchObject(extension);
    const discovered = (await (await post2026(key, 'server/discover', {}, envelope2026())).json()) as { result: { capabilities: object } };
    expect(discovered.result.capabilities).toMatchObject({ extensions: extension });
  });

  it('is listed only to a credential that may call a tool pointing to it, and read by any', async () => {
    const { client } = await setup(['profile:read']);
    expect((await client.listResources()).resources).toEqual([]);
    expect((await client.readResource({ uri: VIEW })).contents[0]).toMatchObject({ mimeType: APP_MIME });
  });

  it('reads a run’s tool calls from get-execution-status, beside its output', async () => {
    const { user, client } = await setup();
    const started = ok(await client.callTool({ name: 'execute-skill', arguments: { slug: 'notes', input: 'We ship Friday. Ana writes the notes.' } }));
    await waitForStatus(user, started.executionId, 'completed');
    const status = ok(await client.callTool({ name: 'get-execution-status', arguments: { executionId: started.executionId } }));
    expect(status.outputBlocks).toEqual([{ type: 'text', text: expect.any(String) }]);
    expect(status.toolCalls).toEqual([{ name: expect.any(String), label: expect.stringContaining('notes.md') }]);
  });
});
