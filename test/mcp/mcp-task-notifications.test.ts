import { Client, StreamableHTTPClientTransport, type SubscriptionFilter } from '@modelcontextprotocol/client';
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BASE, call, createKey, signUp, type TestUser } from '../helpers/api';
import { envelope2026, post2026 } from '../helpers/mcp';
import { definition, install, mapping } from '../helpers/workflows';

/**
 * Task status notifications (`notifications/tasks`) on `subscriptions/listen`, heard by the
 * SDK's own 2026-07-28 client: no `tasks/get` is called. The tasks are started as raw
 * JSON-RPC, since the SDK 2.4 client's codec refuses a `resultType: "task"` answer.
 */

const TASKS = 'io.modelcontextprotocol/tasks';
const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
const CAPABILITIES = { extensions: { [TASKS]: {} }, elicitation: { form: {} } };
/** Enough sentences that the run is still working when the client listens. */
const LONG_INPUT = Array.from({ length: 60 }, (_, i) => `Point ${i + 1} of the plan needs a careful summary.`).join(' ');

async function setup() {
  const user = await signUp();
  await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
  return { user, key: (await createKey(user, ['*'])).key };
}

let ids = 0;
async function rpc(key: string, method: string, params: Record<string, unknown>, capabilities: Record<string, unknown> = CAPABILITIES) {
  const answer = await post2026(key, method, params, envelope2026(capabilities), { id: ++ids });
  return { status: answer.status, body: (await answer.json()) as { result?: Record<string, unknown>; error?: { code: number; data?: unknown } } };
}

async function startTask(key: string, name: string, args: Record<string, unknown>): Promise<string> {
  const { body } = await rpc(key, 'tools/call', { name, arguments: args });
  expect(body.result).toMatchObject({ resultType: 'task', status: 'working' });
  return String(body.result!.taskId);
}

const TaskNotification = z.looseObject({
  taskId: z.string(),
  status: z.string(),
  statusMessage: z.string().optional(),
  result: z.looseObject({ structuredContent: z.record(z.string(), z.unknown()) }).optional(),
  inputRequests: z.record(z.string(), z.unknown()).optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});
type Heard = z.infer<typeof TaskNotification>;

/** The SDK's 2026-07-28 client, declaring the Tasks extension, collecting the task notifications it hears. */
async function listener(key: string) {
  const client = new Client({ name: 'task-listener', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: CAPABILITIES });
  const heard: Heard[] = [];
  const waiters: (() => void)[] = [];
  client.setNotificationHandler('notifications/tasks', { params: TaskNotification }, (params: Heard) => {
    heard.push(params);
    for (const wake of waiters.splice(0)) wake();
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
      requestInit: { headers: { 'x-api-key': key } },
      fetch: (url, init) => exports.default.fetch(new Request(url, init)),
    }),
  );
  /** Waits until a notification with one of `statuses` was heard. */
  const until = async (statuses: string[]) => {
    const deadline = Date.now() + 20_000;
    while (!heard.some((note) => statuses.includes(note.status))) {
      if (Date.now() > deadline) throw new Error(`no ${statuses.join('|')} heard: ${JSON.stringify(heard)}`);
      await new Promise<void>((wake) => {
        waiters.push(wake);
        setTimeout(wake, 500);
      });
    }
    return heard.find((note) => statuses.includes(note.status))!;
  };
  return { client, heard, until };
}

const listenFor = (client: Client, taskIds: string[]) => client.listen({ taskIds } as SubscriptionFilter);

const approve = {
  type: 'tool',
  id: 'approve',
  toolId: 'human-input',
  options: { metadata: { prompt: 'Ship it?', resumeSchema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean', title: 'Ship' } } } } },
};
const shipWorkflow = (user: TestUser) => install(user, 'ship', definition('ship', [approve, mapping('after', { answer: { step: 'approve', path: 'ok' } })]));

describe('task status notifications on subscriptions/listen', () => {
  it('a listening client hears a skill run’s task working, then completed with the tool’s result, and the listen ends', async () => {
    const { key } = await setup();
    const taskId = await startTask(key, 'execute-skill', { slug: 'notes', input: LONG_INPUT });
    const { client, heard, until } = await listener(key);
    const subscription = await listenFor(client, [taskId]);
    const done = await until(['completed', 'failed', 'cancelled']);
    expect(heard.map((note) => note.status)).toEqual(['working', 'completed']);
    expect(heard[0]).toMatchObject({ taskId, statusMessage: 'The run is working', ttlMs: expect.any(Number), pollIntervalMs: 2_000 });
    expect(done.result!.structuredContent).toMatchObject({ executionId: taskId, status: 'started' });
    expect(done._meta).toMatchObject({ 'io.modelcontextprotocol/subscriptionId': expect.any(String) });
    // A listen for tasks alone ends gracefully once they have all ended.
    expect(await subscription.closed).toBe('graceful');
    await client.close();
  });

  it('a listening client hears a workflow run’s task ask for input at its human-input step, then, once answered, complete', async () => {
    const { user, key } = await setup();
    await shipWorkflow(user);
    const taskId = await startTask(key, 'start-workflow', { workflowId: 'ship' });
    const { client, heard, until } = await listener(key);
    await listenFor(client, [taskId]);
    const waiting = await until(['input_required']);
    expect(waiting).toMatchObject({
      taskId,
      statusMessage: 'Waiting for input at approve',
      inputRequests: { 'approve#1': { method: 'elicitation/create', params: { mode: 'form', message: 'Ship it?' } } },
    });
    const update = await rpc(key, 'tasks/update', { taskId, inputResponses: { 'approve#1': { action: 'accept', content: { ok: true } } } });
    expect(update.body.error).toBeUndefined();
    const done = await until(['completed']);
    expect(done).toMatchObject({ statusMessage: 'The run succeeded', result: { structuredContent: { runId: taskId, workflowId: 'ship' } } });
    // Each notification says something new: a run's step being polled is not heard again.
    const statuses = heard.map((note) => note.status);
    expect(statuses.filter((status, i) => status === statuses[i - 1])).toEqual([]);
    await client.close();
  });

  it('acknowledges only the tasks the credential may read in its workspace, and refuses task ids to a client without the extension', async () => {
    const { key } = await setup();
    const other = await setup();
    const own = await startTask(key, 'execute-skill', { slug: 'notes', input: 'We ship Friday.' });
    const foreign = await startTask(other.key, 'execute-skill', { slug: 'notes', input: 'We ship Friday.' });
    const listen = await post2026(
      key,
      'subscriptions/listen',
      { notifications: { promptsListChanged: true, taskIds: [own, foreign] } },
      envelope2026(CAPABILITIES),
      {
        id: 'sub-tasks',
      },
    );
    const reader = listen.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('notifications/subscriptions/acknowledged')) text += (await reader.read()).value ?? '';
    const ack = JSON.parse(/^data: (.*acknowledged.*)$/m.exec(text)![1]!);
    expect(ack.params.notifications).toEqual({ promptsListChanged: true, taskIds: [own] });
    await reader.cancel();
    // Asking only for tasks none of which is agreed to: acknowledged without them, and ended at once.
    const none = await post2026(key, 'subscriptions/listen', { notifications: { taskIds: [foreign] } }, envelope2026(CAPABILITIES), { id: 'sub-none' });
    const frames = (await none.text()).split('\n\n').filter((frame) => frame.startsWith('event: message'));
    expect(frames.map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)))).toMatchObject([
      { method: 'notifications/subscriptions/acknowledged', params: { notifications: {} } },
      { id: 'sub-none', result: { resultType: 'complete' } },
    ]);

    const refused = await rpc(key, 'subscriptions/listen', { notifications: { taskIds: [own] } }, {});
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } });
  });
});
