import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RunningService } from './helpers';
import { startPrepared } from './prepared';

/** One endpoint, both protocol eras: the SDK's current client in 2026-07-28 mode and SDK 1.x in 2025-11-25, against `npm start`. */
describe('MCP protocol versions over wrangler dev', () => {
  let service: RunningService;
  beforeAll(async () => {
    // Runs stream slowly enough for a task to be cancelled while it works.
    service = await startPrepared(undefined, { args: ['--var', 'LOCAL_MODEL_DELAY_MS:40'] });
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

  describe('runs as Tasks and decisions as input requests, 2026-07-28', () => {
    const TASKS = 'io.modelcontextprotocol/tasks';
    const capabilities = { extensions: { [TASKS]: {} }, elicitation: { form: {} } };
    const Task = z.looseObject({
      taskId: z.string(),
      status: z.string(),
      statusMessage: z.string().optional(),
      result: z.looseObject({}).optional(),
      inputRequests: z.record(z.string(), z.unknown()).optional(),
    });
    const Ack = z.looseObject({});
    const api = (path: string, body: unknown) =>
      fetch(`${service.base}/api/v1${path}`, {
        method: path.endsWith('/install') ? 'POST' : 'PUT',
        headers: { ...headers(), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const approve = {
      type: 'tool',
      id: 'approve',
      toolId: 'human-input',
      options: { metadata: { prompt: 'Ship it?', resumeSchema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } } } } },
    };
    const workflow = {
      id: 'ship',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      graph: [approve, { type: 'mapping', id: 'after', mapConfig: JSON.stringify({ answer: { step: 'approve', path: 'ok' } }) }],
    };

    /** The SDK's 2026-07-28 client, declaring the tasks extension and answering every form elicitation with `{ok: true}`. */
    async function connect() {
      const client = new ModernClient({ name: 'e2e-tasks', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities });
      client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { ok: true } }));
      const transport = new ModernTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: headers() } });
      await client.connect(transport);
      return { client, transport };
    }

    let sent = 0;
    /**
     * A tool call answered with a task. The SDK 2.4.0 client has no Tasks runtime (its codec
     * refuses `resultType: "task"`), so the call goes through the client's own transport, with
     * the envelope the client sends, and the answer is taken off it.
     */
    async function startTask(transport: ModernTransport, name: string, args: Record<string, unknown>) {
      const id = `task-${++sent}`;
      const answered = new Promise<Record<string, unknown>>((resolve) => {
        const next = transport.onmessage!;
        transport.onmessage = (message: JSONRPCMessage) => {
          if ('id' in message && message.id === id && 'result' in message) resolve(message.result as Record<string, unknown>);
          else next(message);
        };
      });
      const _meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'e2e-tasks', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': capabilities,
      };
      await transport.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta } });
      const created = await answered;
      expect(created).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: expect.any(Number), ttlMs: expect.any(Number) });
      return String(created.taskId);
    }

    const getTask = (client: ModernClient, taskId: string) => client.request({ method: 'tasks/get', params: { taskId } }, Task);
    async function pollTask(client: ModernClient, taskId: string, wanted: string[]) {
      for (let i = 0; i < 600; i++) {
        const task = await getTask(client, taskId);
        if (wanted.includes(task.status)) return task;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`task ${taskId} never reached ${wanted.join('|')}`);
    }

    beforeAll(async () => {
      expect(
        (await api('/skills/eras-notes', { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' })).status,
      ).toBeLessThan(300);
      expect((await api('/workflows/ship/install', workflow)).status).toBe(201);
    });

    it('runs a skill as a task to completion, and cancels another', async () => {
      const { client, transport } = await connect();
      expect(client.getServerCapabilities()).toMatchObject({ extensions: { [TASKS]: {} } });
      const taskId = await startTask(transport, 'execute-skill', { slug: 'eras-notes', input: 'We ship Friday.' });
      const done = await pollTask(client, taskId, ['completed', 'failed', 'cancelled']);
      expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { executionId: taskId, status: 'started' } } });

      const cancelled = await startTask(transport, 'execute-skill', { slug: 'eras-notes', input: 'A long plan. With steps. And more steps. And even more.' });
      await client.request({ method: 'tasks/cancel', params: { taskId: cancelled } }, Ack);
      expect(await pollTask(client, cancelled, ['cancelled', 'completed'])).toMatchObject({ status: 'cancelled' });
      const status = await client.callTool({ name: 'get-execution-status', arguments: { executionId: cancelled } });
      expect(textOf(status).status).toBe('idle');
      await client.close();
    });

    it('resumes a human-input step through an input request: as a task with tasks/update, and by the call’s retry', async () => {
      const { client, transport } = await connect();
      const taskId = await startTask(transport, 'start-workflow', { workflowId: 'ship' });
      const waiting = await pollTask(client, taskId, ['input_required']);
      expect(Object.values(waiting.inputRequests!)).toEqual([
        expect.objectContaining({ method: 'elicitation/create', params: expect.objectContaining({ message: 'Ship it?' }) }),
      ]);
      const [key] = Object.keys(waiting.inputRequests!);
      await client.request({ method: 'tasks/update', params: { taskId, inputResponses: { [key!]: { action: 'accept', content: { ok: true } } } } }, Ack);
      expect(await pollTask(client, taskId, ['completed'])).toMatchObject({ statusMessage: 'The run succeeded' });

      // resume-workflow-run without data answers input_required, which the client fulfils through its elicitation handler and retries.
      const runId = await startTask(transport, 'start-workflow', { workflowId: 'ship' });
      await pollTask(client, runId, ['input_required']);
      const resumed = await client.callTool({ name: 'resume-workflow-run', arguments: { runId } });
      expect(textOf(resumed)).toEqual({ runId, status: 'running' });
      const run = await pollTask(client, runId, ['completed']);
      expect(run.statusMessage).toBe('The run succeeded');
      await client.close();
    });
  });
});
