import { describe, expect, it } from 'vitest';
import { call, createKey, signUp, waitForStatus, type TestUser } from '../helpers/api';
import { envelope2026, post2026 } from '../helpers/mcp';
import { definition, install, mapping, waitForRun } from '../helpers/workflows';

/** Runs as MCP Tasks and decisions as input requests, spoken as raw 2026-07-28 JSON-RPC. */

const TASKS = 'io.modelcontextprotocol/tasks';
const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
/** A client that takes tasks and answers form elicitations. */
const TASKING = envelope2026({ extensions: { [TASKS]: {} }, elicitation: { form: {} } });

async function setup() {
  const user = await signUp();
  await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
  return { user, key: (await createKey(user, ['*'])).key };
}

type Body = { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
let ids = 0;

/** One request as a 2026-07-28 client sends it, its answer's body. */
async function rpc(key: string, method: string, params: Record<string, unknown>, meta: Record<string, unknown> = TASKING): Promise<Body> {
  return (await (await post2026(key, method, params, meta, { id: ++ids })).json()) as Body;
}

async function result(body: Promise<Body>) {
  const { result, error } = await body;
  expect(error).toBeUndefined();
  return result!;
}

const callTool = (key: string, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  result(rpc(key, 'tools/call', { name, arguments: args, ...extra }, meta));

/** Polls `tasks/get` until the task's status is one of `wanted`. */
async function pollTask(key: string, taskId: string, wanted: string[]) {
  let last: Record<string, unknown> = {};
  for (let i = 0; i < 400; i++) {
    last = await result(rpc(key, 'tasks/get', { taskId }));
    if (wanted.includes(String(last.status))) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`task ${taskId} never reached ${wanted.join('|')}: ${JSON.stringify(last)}`);
}

const approve = {
  type: 'tool',
  id: 'approve',
  toolId: 'human-input',
  options: {
    metadata: {
      prompt: 'Ship it?',
      resumeSchema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean', title: 'Ship' }, note: { type: 'string' } } },
    },
  },
};
const shipWorkflow = (user: TestUser) => install(user, 'ship', definition('ship', [approve, mapping('after', { answer: { step: 'approve', path: 'ok' } })]));

describe('runs as MCP Tasks', () => {
  it('server/discover offers the tasks extension to 2026-07-28 clients', async () => {
    const { key } = await setup();
    expect((await result(rpc(key, 'server/discover', {}))).capabilities).toMatchObject({ extensions: { [TASKS]: {} } });
  });

  it('runs a skill as a task: created working, polled with tasks/get to completed with the tool’s own result', async () => {
    const { user, key } = await setup();
    const created = await callTool(key, 'execute-skill', { slug: 'notes', input: 'We ship Friday.' });
    expect(created).toMatchObject({
      resultType: 'task',
      taskId: expect.stringMatching(/^exec_\d+$/),
      status: 'working',
      createdAt: expect.any(String),
      lastUpdatedAt: expect.any(String),
      ttlMs: 30 * 86_400_000,
      pollIntervalMs: 2_000,
    });
    const taskId = String(created.taskId);
    const done = await pollTask(key, taskId, ['completed', 'failed', 'cancelled']);
    expect(done).toMatchObject({ resultType: 'complete', taskId, status: 'completed' });
    expect((done.result as { structuredContent: object }).structuredContent).toEqual({
      executionId: taskId,
      skillName: 'Notes',
      status: 'started',
      message: expect.any(String),
      sseUrl: expect.any(String),
    });
    expect((await waitForStatus(user, taskId, 'completed')).outputBlocks).not.toHaveLength(0);
  });

  it('answers the plain result to a client that does not take tasks', async () => {
    const { key } = await setup();
    const plain = await callTool(key, 'execute-skill', { slug: 'notes', input: 'We ship Friday.' }, envelope2026({}));
    expect(plain).toMatchObject({ resultType: 'complete', structuredContent: { status: 'started' } });
    expect(plain.taskId).toBeUndefined();
  });

  it('tasks/cancel cancels the run: the execution is idle and the task cancelled', async () => {
    const { user, key } = await setup();
    const created = await callTool(key, 'execute-skill', { slug: 'notes', input: 'A long plan. With steps. And more steps. And even more.' });
    const taskId = String(created.taskId);
    expect(await result(rpc(key, 'tasks/cancel', { taskId }))).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    await waitForStatus(user, taskId, 'idle');
    expect(await pollTask(key, taskId, ['cancelled', 'completed'])).toMatchObject({ status: 'cancelled' });
  });

  it('runs a workflow as a task: input_required with a form from the resume schema, resumed by tasks/update, then completed', async () => {
    const { user, key } = await setup();
    await shipWorkflow(user);
    const created = await callTool(key, 'start-workflow', { workflowId: 'ship' });
    expect(created).toMatchObject({ resultType: 'task', status: 'working', structuredContent: { workflowId: 'ship', status: 'started' } });
    const taskId = String(created.taskId);
    const waiting = await pollTask(key, taskId, ['input_required']);
    expect(waiting.inputRequests).toEqual({
      'approve#1': {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'Ship it?',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean', title: 'Ship' }, note: { type: 'string' } }, required: ['ok'] },
        },
      },
    });
    // An answer the step's schema refuses is a clearly invalid update; the run still waits.
    const refused = await rpc(key, 'tasks/update', { taskId, inputResponses: { 'approve#1': { action: 'accept', content: { note: 'no ok' } } } });
    expect(refused.error).toMatchObject({ code: -32602, data: { error: { code: 'INVALID_INPUT' } } });
    expect(await result(rpc(key, 'tasks/update', { taskId, inputResponses: { 'approve#1': { action: 'accept', content: { ok: true } } } }))).toMatchObject({
      resultType: 'complete',
    });
    const done = await pollTask(key, taskId, ['completed']);
    expect((done.result as { structuredContent: object }).structuredContent).toEqual({ runId: taskId, workflowId: 'ship', status: 'started' });
    expect(done.statusMessage).toBe('The run succeeded');
    expect((await waitForRun(user, taskId, ['success'])).run.snapshot.result).toEqual({ answer: true });
  });

  it('finds no task of another workspace, for an execution or a run', async () => {
    const { user, key } = await setup();
    await shipWorkflow(user);
    const execution = String((await callTool(key, 'execute-skill', { slug: 'notes', input: 'We ship Friday.' })).taskId);
    const run = String((await callTool(key, 'start-workflow', { workflowId: 'ship' })).taskId);
    const other = await setup();
    for (const taskId of [execution, run]) {
      for (const method of ['tasks/get', 'tasks/cancel']) {
        expect((await rpc(other.key, method, { taskId })).error).toMatchObject({ code: -32602, message: 'Task not found' });
      }
      const update = await rpc(other.key, 'tasks/update', { taskId, inputResponses: {} });
      expect(update.error).toMatchObject({ code: -32602, message: 'Task not found' });
    }
    expect((await waitForRun(user, run, ['suspended'])).run.status).toBe('suspended');
  });

  it('refuses the task methods to a request whose client did not declare the extension: 400, -32021, naming it', async () => {
    const { key } = await setup();
    const taskId = String((await callTool(key, 'execute-skill', { slug: 'notes', input: 'We ship Friday.' })).taskId);
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const answer = await post2026(key, method, { taskId }, envelope2026({}), { id: ++ids });
      expect(answer.status).toBe(400);
      const { error } = (await answer.json()) as Body;
      expect(error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } });
    }
    expect(await result(rpc(key, 'tasks/get', { taskId }))).toMatchObject({ taskId });
  });

  it('checks each task method as the tool that does the same: a key that may read runs but not run them cannot cancel one', async () => {
    const { user, key } = await setup();
    await shipWorkflow(user);
    const taskId = String((await callTool(key, 'start-workflow', { workflowId: 'ship' })).taskId);
    const reader = (await createKey(user, ['library:read'])).key;
    expect(await result(rpc(reader, 'tasks/get', { taskId }))).toMatchObject({ taskId });
    const refused = await rpc(reader, 'tasks/cancel', { taskId });
    expect(refused.error).toMatchObject({ code: -32600, data: { error: { code: 'FORBIDDEN', details: { scope: 'workflow:run' } } } });
    expect((await waitForRun(user, taskId, ['suspended'])).run.status).toBe('suspended');
  });
});

describe('decisions as input requests', () => {
  it('resume-workflow-run without data asks for it (input_required); the retry with inputResponses resumes the run', async () => {
    const { user, key } = await setup();
    await shipWorkflow(user);
    const { runId } = (await callTool(key, 'start-workflow', { workflowId: 'ship' }, envelope2026({}))).structuredContent as { runId: string };
    await waitForRun(user, runId, ['suspended']);
    const asked = await callTool(key, 'resume-workflow-run', { runId });
    expect(asked).toMatchObject({
      resultType: 'input_required',
      inputRequests: { 'approve#1': { method: 'elicitation/create', params: { mode: 'form', message: 'Ship it?' } } },
    });
    const declined = await callTool(key, 'resume-workflow-run', { runId }, TASKING, { inputResponses: { 'approve#1': { action: 'decline' } } });
    expect(declined).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('INPUT_DECLINED') }] });
    const resumed = await callTool(key, 'resume-workflow-run', { runId }, TASKING, {
      inputResponses: { 'approve#1': { action: 'accept', content: { ok: false } } },
    });
    expect(resumed).toMatchObject({ resultType: 'complete', structuredContent: { runId, status: 'running' } });
    expect((await waitForRun(user, runId, ['success'])).run.snapshot.result).toEqual({ answer: false });
  });

  it('a client that cannot elicit resumes as before: without data, with none', async () => {
    const { user, key } = await setup();
    await install(user, 'wait', definition('wait', [{ ...approve, options: { metadata: { prompt: 'Go?' } } }]));
    const { runId } = (await callTool(key, 'start-workflow', { workflowId: 'wait' }, envelope2026({}))).structuredContent as { runId: string };
    await waitForRun(user, runId, ['suspended']);
    const resumed = await callTool(key, 'resume-workflow-run', { runId }, envelope2026({}));
    expect(resumed).toMatchObject({ resultType: 'complete', structuredContent: { runId, status: 'running' } });
    await waitForRun(user, runId, ['success']);
  });

  it('a scope the key lacks: the person gives a reason, a permission request is filed, and the retry after the owner approves runs the tool', async () => {
    const { user } = await setup();
    const key = (await createKey(user, ['memory:read'])).key;
    const write = (extra: Record<string, unknown> = {}) => callTool(key, 'write-memory', { content: 'Ship on Friday.' }, TASKING, extra);
    const asked = await write();
    expect(asked).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        'scope-memory:write': { method: 'elicitation/create', params: { mode: 'form', requestedSchema: { required: ['reason'] } } },
      },
    });
    const filed = await write({ inputResponses: { 'scope-memory:write': { action: 'accept', content: { reason: 'To keep the notes', mode: 'session' } } } });
    const [approvalKey] = Object.keys(filed.inputRequests as object);
    expect(approvalKey).toMatch(/^approval-[0-9a-f-]{36}$/);
    expect(JSON.stringify(filed)).toMatch(/\/approve\?code=[A-Z]{4}-[A-Z]{4}/);
    const requestId = approvalKey!.slice('approval-'.length);
    // Going ahead before the owner decided asks again, and grants nothing.
    const goAhead = { inputResponses: { [approvalKey!]: { action: 'accept', content: {} } } };
    expect(Object.keys((await write(goAhead)).inputRequests as object)).toEqual([approvalKey]);
    const pending = await call(`/api/v1/agents/permission-requests?status=pending`, { token: user.token });
    expect(pending.body.data).toMatchObject([{ request_id: requestId, scope: 'memory:write', reason: 'To keep the notes' }]);
    expect((await call(`/api/v1/agents/permission-requests/${requestId}/approve`, { method: 'POST', token: user.token, body: {} })).status).toBe(200);
    expect(await write(goAhead)).toMatchObject({ resultType: 'complete', structuredContent: { content: 'Ship on Friday.' } });
  });

  it('the refusal stands as before for a client that cannot ask, an answer declined, and a request denied', async () => {
    const { user } = await setup();
    const key = (await createKey(user, ['memory:read'])).key;
    const refusal = async (meta: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      const answer = await callTool(key, 'write-memory', { content: 'x' }, meta, extra);
      expect(answer.isError).toBe(true);
      return JSON.parse((answer.content as { text: string }[])[0]!.text).error;
    };
    expect(await refusal(envelope2026({}))).toMatchObject({ code: 'FORBIDDEN', details: { scope: 'memory:write' } });
    expect(await refusal(TASKING, { inputResponses: { 'scope-memory:write': { action: 'decline' } } })).toMatchObject({ code: 'FORBIDDEN' });
    const filed = await callTool(key, 'write-memory', { content: 'x' }, TASKING, {
      inputResponses: { 'scope-memory:write': { action: 'accept', content: { reason: 'Notes' } } },
    });
    const [approvalKey] = Object.keys(filed.inputRequests as object);
    await call(`/api/v1/agents/permission-requests/${approvalKey!.slice('approval-'.length)}/deny`, { method: 'POST', token: user.token, body: {} });
    expect(await refusal(TASKING, { inputResponses: { [approvalKey!]: { action: 'accept', content: {} } } })).toMatchObject({ code: 'FORBIDDEN' });
  });
});
