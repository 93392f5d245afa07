import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import type { StepMessage, WorkflowRun } from '../../durable-objects/WorkflowRun';
import worker from '../../workers/index';
import { advanceClock } from '../../workers/lib/clock';
import { BASE, call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { shardD1 } from '../helpers/shards';
import { sseMessages } from '../helpers/sse';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

const SKILL = {
  name: 'Meeting Summarizer',
  description: 'Summarises notes.',
  category: 'productivity',
  prompt: '# Meeting Summarizer\nYou summarise meeting notes.',
};
const addSkill = (user: TestUser) => call('/api/v1/skills/meeting-summarizer', { method: 'PUT', token: user.token, body: SKILL });

const sleep = (id: string, duration = 1) => ({ type: 'sleep', id, duration });
const humanInput = (id: string, prompt = 'Approve?') => ({ type: 'tool', id, toolId: 'human-input', options: { metadata: { prompt } } });
const stub = (runId: string) => env.WORKFLOW_RUN.getByName(runId);

type Task = { key: string; status: string; attempt: number; execution_id: string | null; step_id: string };
const tasksOf = (runId: string) =>
  runInDurableObject(stub(runId), (_: WorkflowRun, state) =>
    state.storage.sql.exec<Task>('SELECT key, status, attempt, execution_id, step_id FROM tasks ORDER BY key').toArray(),
  );

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function runOf(graph: unknown[], inputs: Record<string, unknown> = {}, user?: TestUser) {
  const u = user ?? (await signUp());
  await install(u, 'flow', definition('flow', graph));
  const runId = await launch(u, 'flow', inputs);
  return { user: u, runId };
}

describe('entry types', () => {
  it('maps every source kind and passes each output on as the next input', async () => {
    const { user, runId } = await runOf(
      [
        mapping('hello', { greeting: { template: 'Hello ${initData.name}' }, who: { initData: true, path: 'name' } }),
        sleep('pause'),
        mapping('shout', {
          text: { step: 'hello', path: 'greeting' },
          ws: { requestContextPath: 'workspaceId' },
          fixed: { value: [1, 2] },
          gone: { step: 'hello', path: 'missing' },
        }),
      ],
      { name: 'Ada' },
    );
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(run.snapshot.result).toEqual({ text: 'Hello Ada', ws: user.workspaceId, fixed: [1, 2] });
    expect(steps.pause).toEqual({ status: 'success', output: { greeting: 'Hello Ada', who: 'Ada' } });
  });

  it('runs parallel children on the same input and keys the output by child id', async () => {
    const { user, runId } = await runOf([mapping('m', { n: { value: 1 } }), { type: 'parallel', id: 'both', steps: [sleep('a', 20), sleep('b', 5)] }]);
    const { run, steps } = await waitForRun(user, runId);
    expect(run.snapshot.result).toEqual({ a: { n: 1 }, b: { n: 1 } });
    expect(steps.both.output).toEqual({ a: { n: 1 }, b: { n: 1 } });
    expect(steps.a.output).toEqual({ n: 1 });
  });

  it('runs every conditional branch whose predicate holds; missing paths make comparisons false', async () => {
    const graph = [
      mapping('m', { score: { initData: true, path: 'score' } }),
      {
        type: 'conditional',
        id: 'route',
        steps: [sleep('high'), sleep('low'), sleep('unknown'), sleep('always')],
        predicates: [
          { op: 'gte', left: { path: 'inputData.score' }, right: { literal: 50 } },
          { op: 'lt', left: { path: 'inputData.score' }, right: { literal: 50 } },
          {
            op: 'or',
            args: [
              { op: 'notExists', path: 'stepResults.m.score' },
              { op: 'eq', left: { path: 'initData.nope.deeper' }, right: { literal: null } },
            ],
          },
          {
            op: 'and',
            args: [
              { op: 'in', value: { path: 'initData.tag' }, set: { literal: ['x', 'y'] } },
              { op: 'not', arg: { op: 'falsy', value: { path: 'stepResults.m' } } },
            ],
          },
        ],
      },
    ];
    const user = await signUp();
    const high = await runOf(graph, { score: 80, tag: 'x' }, user);
    expect((await waitForRun(user, high.runId)).run.snapshot.result).toEqual({ high: { score: 80 }, always: { score: 80 } });
    const missing = await runOf(graph, { tag: 'z' }, user);
    const res = await waitForRun(user, missing.runId);
    expect(res.run.snapshot.result).toEqual({ unknown: {} });
    expect(Object.keys(res.steps).sort()).toEqual(['m', 'route', 'unknown']);
  });

  it('evaluates the remaining operators through the queue too', async () => {
    const { user, runId } = await runOf(
      [
        mapping('m', { n: { initData: true, path: 'n' }, tag: { value: 'b' } }),
        {
          type: 'conditional',
          id: 'ops',
          steps: ['ne', 'lte', 'gt', 'notIn', 'exists', 'truthy', 'neMissing'].map((id) => sleep(id)),
          predicates: [
            { op: 'ne', left: { path: 'inputData.n' }, right: { literal: 4 } },
            { op: 'lte', left: { path: 'inputData.n' }, right: { literal: 3 } },
            { op: 'gt', left: { path: 'stepResults.m.n' }, right: { literal: 3 } },
            { op: 'notIn', value: { path: 'inputData.tag' }, set: { literal: ['a', 'c'] } },
            { op: 'exists', path: 'initData.n' },
            { op: 'truthy', value: { path: 'state.flag' } },
            { op: 'ne', left: { path: 'inputData.none' }, right: { literal: 1 } },
          ],
        },
      ],
      { n: 3 },
    );
    const { run } = await waitForRun(user, runId);
    // gt 3 is false for 3; state is empty (no stateSchema), so truthy is false; ne on a missing path is false.
    expect(Object.keys(run.snapshot.result).sort()).toEqual(['exists', 'lte', 'ne', 'notIn']);
  });

  it('loops until its predicate ends it, and fails past maxIterations with a clear error', async () => {
    const until1 = await runOf([
      mapping('m', { done: { value: true } }),
      { type: 'loop', id: 'l', step: sleep('body'), loopType: 'dountil', predicate: { op: 'truthy', value: { path: 'inputData.done' } } },
    ]);
    expect((await waitForRun(until1.user, until1.runId)).run).toMatchObject({ status: 'success', snapshot: { result: { done: true } } });
    const forever = await runOf([
      mapping('m', { done: { value: false } }),
      {
        type: 'loop',
        id: 'l',
        step: sleep('body'),
        loopType: 'dowhile',
        predicate: { op: 'falsy', value: { path: 'stepResults.body.done' } },
        maxIterations: 3,
      },
    ]);
    const { run } = await waitForRun(forever.user, forever.runId);
    expect(run.status).toBe('failed');
    expect(run.snapshot.error).toBe('Loop l reached its maxIterations (3) without its condition ending it');
    expect((await tasksOf(forever.runId)).filter((t) => t.step_id === 'body')).toHaveLength(3);
  });

  it('runs foreach over an array in input order, at most `concurrency` items at once', async () => {
    // The inputs object is not an array: a clear failure.
    const objectInput = await runOf([{ type: 'foreach', id: 'each', step: sleep('nap') }]);
    expect((await waitForRun(objectInput.user, objectInput.runId)).run).toMatchObject({
      status: 'failed',
      snapshot: { error: 'foreach each needs an array as input, got object' },
    });
    // An array arrives as a human-input step's resume data.
    const fe = await runOf([humanInput('list'), { type: 'foreach', id: 'each', step: sleep('nap', 300), opts: { concurrency: 2 } }]);
    await waitForRun(fe.user, fe.runId, ['suspended']);
    expect((await call(`/api/v1/workflows/runs/${fe.runId}/resume`, { token: fe.user.token, body: { resumeData: ['a', 'b', 'c', 'd'] } })).status).toBe(200);
    const started = await until(
      () => tasksOf(fe.runId),
      (ts) => ts.some((t) => t.key.startsWith('1[')),
      'foreach items',
    );
    expect(started.filter((t) => t.key.startsWith('1[')).map((t) => t.key)).toEqual(['1[0]', '1[1]']);
    const { run, steps } = await waitForRun(fe.user, fe.runId);
    expect(run.snapshot.result).toEqual(['a', 'b', 'c', 'd']);
    expect(steps.each.output).toEqual(['a', 'b', 'c', 'd']);
    expect(steps.nap.output).toEqual(['a', 'b', 'c', 'd']);
  });

  it('passes through sleepUntil in the past at once', async () => {
    const { user, runId } = await runOf([mapping('m', { a: { value: 1 } }), { type: 'sleepUntil', id: 'then', date: '2020-01-01T00:00:00Z' }]);
    expect((await waitForRun(user, runId)).run.snapshot.result).toEqual({ a: 1 });
  });
});

describe('execute-skill and agent steps', () => {
  it('runs a skill through the executions runtime and blocks until it is terminal', async () => {
    const user = await signUp();
    await addSkill(user);
    const { runId } = await runOf(
      [
        mapping('shape', { slug: { value: 'meeting-summarizer' }, input: { value: { notes: 'We ship Friday.' } } }),
        { type: 'tool', id: 'run', toolId: 'execute-skill' },
        mapping('after', { summary: { template: '${stepResults.run.text}' } }),
      ],
      {},
      user,
    );
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(steps.run.output).toEqual({
      executionId: expect.stringMatching(/^exec_\d+$/),
      status: 'completed',
      text: expect.stringContaining('Meeting Summarizer'),
    });
    expect(run.snapshot.result.summary).toBe(steps.run.output.text);
    const execution = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT input_text, status FROM executions WHERE id = ?')
      .bind(Number(steps.run.output.executionId.slice(5)))
      .first();
    // Rule 10: a non-string input is JSON-stringified.
    expect(execution).toEqual({ input_text: '{"notes":"We ship Friday."}', status: 'completed' });
  });

  it('fails the run when the skill cannot run, naming the step', async () => {
    const { user, runId } = await runOf([
      mapping('shape', { slug: { value: 'not-installed' }, input: { value: 'x' } }),
      { type: 'tool', id: 'run', toolId: 'execute-skill' },
    ]);
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('failed');
    expect(run.snapshot.error).toMatch(/^Step run failed: NOT_FOUND/);
    expect(steps.run.status).toBe('failed');
  });

  it('runs a workspace agent with its instructions; an outputSchema the answer does not meet fails the step', async () => {
    const user = await signUp();
    await call('/api/v1/agents', { token: user.token, body: { slug: 'writer', name: 'Writer', instructions: '# Release Writer\nYou write release notes.' } });
    const { runId } = await runOf(
      [mapping('brief', { topic: { value: 'The new search' } }), { type: 'agent', id: 'write', agentId: '${workspaceId}:writer' }],
      {},
      user,
    );
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(steps.write.output.text).toContain('Release Writer');
    const exec = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT skill_slug, source FROM executions WHERE id = ?')
      .bind(Number(steps.write.output.executionId.slice(5)))
      .first();
    expect(exec).toEqual({ skill_slug: 'agent:writer', source: 'workflow' });

    // A budget on the step is the run's budget.
    await install(user, 'budgeted', definition('budgeted', [{ type: 'agent', id: 'write', agentId: '${workspaceId}:writer', budget: 2.5 }]));
    const budgeted = await waitForRun(user, await launch(user, 'budgeted'));
    expect(budgeted.run.status).toBe('success');
    const budget = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT budget FROM executions WHERE id = ?')
      .bind(Number(budgeted.steps.write.output.executionId.slice(5)))
      .first();
    expect(budget).toEqual({ budget: 250 });

    await install(
      user,
      'typed',
      definition('typed', [{ type: 'agent', id: 'write', agentId: '${workspaceId}:writer', outputSchema: { type: 'object', required: ['title'] } }]),
    );
    const typed = await launch(user, 'typed');
    const failed = await waitForRun(user, typed);
    expect(failed.run.status).toBe('failed');
    expect(failed.run.snapshot.error).toContain('outputSchema');
  });
});

describe('human input: suspend and resume', () => {
  it('suspends with the prompt, and the resume data becomes the step output', async () => {
    const { user, runId } = await runOf([humanInput('approve', 'Ship it?'), mapping('after', { answer: { step: 'approve', path: 'ok' } })]);
    const suspended = await waitForRun(user, runId, ['suspended']);
    expect(suspended.run.snapshot).toMatchObject({ status: 'suspended', value: { approve: 'suspended' }, suspended: { approve: { prompt: 'Ship it?' } } });
    expect(suspended.steps).toEqual({ approve: { status: 'suspended', output: null } });
    // A suspended step holds nothing: no timer.
    expect(await runInDurableObject(stub(runId), (_: WorkflowRun, state) => state.storage.getAlarm())).toBeNull();
    // The queue lists runs that have not finished.
    expect((await call('/api/v1/workflows/queue', { token: user.token })).body).toEqual({
      queued: [{ runId, workflowSlug: 'flow', enqueuedAt: expect.any(String), status: 'suspended' }],
      total: 1,
    });
    expectError(await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { stepId: 'other', resumeData: {} } }), 409, 'STEP_MISMATCH');
    const res = await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { ok: true } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ runId, status: 'running' });
    const { run, steps } = await waitForRun(user, runId);
    expect(run.snapshot.result).toEqual({ answer: true });
    expect(steps.approve).toEqual({ status: 'success', output: { ok: true } });
    // Finished: the legacy shape of spec 7.3.
    const again = await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: {} } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ cancelled: true, error: expect.any(String) });
    expect((await call('/api/v1/workflows/queue', { token: user.token })).body).toEqual({ queued: [], total: 0 });
  });

  it('answers NOT_SUSPENDED while the run is running', async () => {
    const { user, runId } = await runOf([sleep('long', 60_000), humanInput('approve')]);
    await until(
      () => tasksOf(runId),
      (ts) => ts[0]?.status === 'waiting',
      'the sleep',
    );
    expectError(await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: {} }), 409, 'NOT_SUSPENDED');
    await call(`/api/v1/workflows/runs/${runId}/cancel`, { token: user.token, body: {} });
  });

  it('serialises racing resumes: one wins, the others get 409', async () => {
    const { user, runId } = await runOf([humanInput('approve'), sleep('after', 5)]);
    await waitForRun(user, runId, ['suspended']);
    const answers = await Promise.all([1, 2, 3].map((n) => call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { n } } })));
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of answers.filter((a) => a.status !== 200)) {
      expect(lost.status).toBe(409);
      expect(['RESUME_IN_PROGRESS', 'NOT_SUSPENDED']).toContain(lost.body.error.code);
    }
    const { steps } = await waitForRun(user, runId);
    expect([1, 2, 3]).toContain(steps.approve.output.n);
  });
});

describe('cancel', () => {
  it("cancels during a long sleep: one change, the sleep's alarm cleared (the one left is the run's expiry), no further step", async () => {
    const { user, runId } = await runOf([sleep('long', 3_600_000), mapping('never', { x: { value: 1 } })]);
    await until(
      () => tasksOf(runId),
      (ts) => ts[0]?.status === 'waiting',
      'the sleep',
    );
    expect(await runInDurableObject(stub(runId), (_: WorkflowRun, state) => state.storage.getAlarm())).not.toBeNull();
    const res = await call(`/api/v1/workflows/runs/${runId}/cancel`, { token: user.token, body: {} });
    expect(res.body).toEqual({ success: true, runId });
    const { run, steps } = await waitForRun(user, runId, ['canceled']);
    expect(run.snapshot.status).toBe('canceled');
    expect(steps).toEqual({});
    // The retention window's end (30 days by default, docs/operations.md), not the hour's sleep.
    const alarm = await runInDurableObject(stub(runId), (_: WorkflowRun, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    expect((await tasksOf(runId)).map((t) => t.status)).toEqual(['canceled']);
    // Canceling again is harmless; resuming a canceled run is the finished shape.
    expect((await call(`/api/v1/workflows/runs/${runId}/cancel`, { token: user.token, body: {} })).body).toEqual({ success: true, runId });
    expect((await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: {} })).body.cancelled).toBe(true);
  });

  it('a long sleep is an alarm: moving the clock past it and firing the alarm completes it', async () => {
    const { user, runId } = await runOf([mapping('m', { a: { value: 1 } }), sleep('day', 24 * 3_600_000)]);
    await until(
      () => tasksOf(runId),
      (ts) => ts.some((t) => t.key === '1' && t.status === 'waiting'),
      'the sleep',
    );
    advanceClock(24 * 3_600_000 + 1000);
    try {
      expect(await runDurableObjectAlarm(stub(runId))).toBe(true);
    } finally {
      advanceClock(-(24 * 3_600_000 + 1000));
    }
    expect((await waitForRun(user, runId)).run.snapshot.result).toEqual({ a: 1 });
  });

  it('cancels during a skill step and interrupts its execution', async () => {
    const user = await signUp();
    await addSkill(user);
    const { runId } = await runOf(
      [
        mapping('shape', { slug: { value: 'meeting-summarizer' }, input: { value: 'Long notes. '.repeat(200) } }),
        { type: 'tool', id: 'run', toolId: 'execute-skill' },
        sleep('after'),
      ],
      {},
      user,
    );
    const [task] = await until(
      () => tasksOf(runId).then((ts) => ts.filter((t) => t.key === '1' && t.execution_id)),
      (ts) => ts.length === 1,
      'the execution to start',
    );
    const executionId = task!.execution_id!;
    const res = await call(`/api/v1/workflows/runs/${runId}/cancel`, { token: user.token, body: {} });
    expect(res.status).toBe(200);
    expect((await waitForRun(user, runId, ['canceled'])).run.status).toBe('canceled');
    const events = await until(
      () => env.EXECUTION_SESSION.getByName(executionId).events(0),
      (es) => es.some((e) => e.type === 'session.status_idle'),
      'the execution to stop',
    );
    expect(events.map((e) => e.type)).toContain('user.interrupt');
    expect(events.at(-1)!.payload).toEqual({ stop_reason: { type: 'interrupt' } });
    expect((await tasksOf(runId)).find((t) => t.key === '1')!.status).toBe('canceled');
  });

  it('DELETE /workflows/queue/:runId cancels a queued run', async () => {
    const { user, runId } = await runOf([humanInput('wait')]);
    await waitForRun(user, runId, ['suspended']);
    expect((await call(`/api/v1/workflows/queue/${runId}`, { method: 'DELETE', token: user.token })).body).toEqual({ success: true });
    expect((await waitForRun(user, runId, ['canceled'])).run.status).toBe('canceled');
    expect((await call('/api/v1/workflows/queue', { token: user.token })).body.total).toBe(0);
    const audit = await call('/api/v1/audit-logs?resource_type=workflow_run', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action).sort()).toEqual(['workflow.canceled', 'workflow.launched']);
  });
});

describe('durability', () => {
  it('a skill step goes on when its execution ends, told by the execution rather than found by its poll', async () => {
    const user = await signUp();
    await addSkill(user);
    const { runId } = await runOf(
      [mapping('shape', { slug: { value: 'meeting-summarizer' }, input: { value: 'Notes.' } }), { type: 'tool', id: 'run', toolId: 'execute-skill' }],
      {},
      user,
    );
    await until(
      async () => (await tasksOf(runId)).find((t) => t.key === '1'),
      (t) => t?.status === 'waiting' && t.execution_id !== null,
      'the skill step waiting on its execution',
    );
    // No poll: the run's alarm is cleared (twice, past a re-arm that was already on its way).
    const clear = () => runInDurableObject(stub(runId), (_: WorkflowRun, state) => state.storage.deleteAlarm());
    await clear();
    await new Promise((r) => setTimeout(r, 50));
    await clear();
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(steps.run.output.status).toBe('completed');
  });

  it('the consumer acknowledges a real batch; a message delivered twice starts the skill once and records its result once', async () => {
    const user = await signUp();
    await addSkill(user);
    const { runId } = await runOf(
      [
        humanInput('go'),
        mapping('shape', { slug: { value: 'meeting-summarizer' }, input: { value: 'Notes.' } }),
        { type: 'tool', id: 'run', toolId: 'execute-skill' },
      ],
      {},
      user,
    );
    await waitForRun(user, runId, ['suspended']);
    // From here the run's messages are captured instead of sent, so this test delivers them itself.
    const captured: { body: StepMessage }[] = [];
    const real = env.WORKFLOW_STEPS;
    const setQueue = (queue: Queue) =>
      runInDurableObject(stub(runId), (instance: WorkflowRun) => {
        (instance as unknown as { env: typeof env }).env = { ...env, WORKFLOW_STEPS: queue };
      });
    await setQueue({ sendBatch: async (messages: { body: StepMessage }[]) => void captured.push(...messages) } as unknown as Queue);
    expect((await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: {} } })).status).toBe(200);
    const deliver = async (messages: { id: string; body: unknown }[]) => {
      const batch = createMessageBatch(
        'workflow-steps',
        messages.map((m) => ({ ...m, timestamp: new Date(), attempts: 1 })),
      );
      const ctx = createExecutionContext();
      await (worker.queue as ExportedHandlerQueueHandler<typeof env>)(batch, env, ctx);
      return getQueueResult(batch, ctx);
    };
    // The mapping step only computes: it ran in the object with the resume, so no message was sent for it.
    // The skill step: the same message twice in one batch, plus a malformed one.
    const skillMessage = await until(async () => captured.find((m) => m.body.key === '2'), Boolean, 'the skill message');
    expect(captured.map((m) => m.body.key)).toEqual(['2']);
    const result = await deliver([
      { id: 'dup-1', body: skillMessage!.body },
      { id: 'dup-2', body: skillMessage!.body },
      { id: 'junk', body: { hello: 'world' } },
    ]);
    expect(result.explicitAcks.sort()).toEqual(['dup-1', 'dup-2', 'junk']);
    expect(result.retryMessages).toEqual([]);
    await setQueue(real);
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    const executions = await (await shardD1(user.workspaceId)).prepare('SELECT id FROM executions WHERE workspace_id = ?').bind(user.workspaceId).all();
    expect(executions.results).toHaveLength(1);
    expect(steps.run.output.executionId).toBe(`exec_${executions.results[0]!.id}`);
    expect((await tasksOf(runId)).find((t) => t.key === '2')).toMatchObject({ status: 'done', attempt: 1 });
    // A late duplicate after the run finished changes nothing either.
    expect((await deliver([{ id: 'late', body: skillMessage!.body }])).explicitAcks).toEqual(['late']);
    expect(
      (await (await shardD1(user.workspaceId)).prepare('SELECT COUNT(*) AS n FROM executions WHERE workspace_id = ?').bind(user.workspaceId).first())!.n,
    ).toBe(1);
  });

  it('a crash between a step completing and the next message: the alarm sends the next step', async () => {
    // The step after the resumed one reads memory: work outside the object, so it goes by message.
    const { user, runId } = await runOf([humanInput('approve'), { type: 'tool', id: 'after', toolId: 'read-memory' }]);
    await waitForRun(user, runId, ['suspended']);
    // The queue refuses sends, as if the object died right after recording the result.
    const real = env.WORKFLOW_STEPS;
    await runInDurableObject(stub(runId), (instance: WorkflowRun) => {
      (instance as unknown as { env: typeof env }).env = {
        ...env,
        WORKFLOW_STEPS: { send: () => Promise.reject(new Error('down')), sendBatch: () => Promise.reject(new Error('down')) } as unknown as Queue,
      };
    });
    expect((await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { ok: 'yes' } } })).status).toBe(200);
    const tasks = await tasksOf(runId);
    expect(tasks.find((t) => t.key === '0')!.status).toBe('done');
    expect(tasks.find((t) => t.key === '1')).toMatchObject({ status: 'queued', attempt: 1 });
    expect((await call(`/api/v1/workflows/runs/${runId}`, { token: user.token })).body.run.status).toBe('running');
    await runInDurableObject(stub(runId), (instance: WorkflowRun) => {
      (instance as unknown as { env: typeof env }).env = { ...env, WORKFLOW_STEPS: real };
    });
    await runDurableObjectAlarm(stub(runId));
    const { run, steps } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(steps.approve.output).toEqual({ ok: 'yes' });
    expect(steps.after.output).toEqual({ content: '' });
  });
});

describe('steps that only compute', () => {
  type Sent = { key: string; sent: number; attempt: number };
  const sentOf = (runId: string) =>
    runInDurableObject(stub(runId), (_: WorkflowRun, state) => state.storage.sql.exec<Sent>('SELECT key, sent, attempt FROM tasks').toArray());
  const finishedSteps = (runId: string) =>
    runInDurableObject(stub(runId), (instance: WorkflowRun) =>
      instance
        .events()
        .filter((e) => e.type === 'workflow-step-finished')
        .map((e) => (JSON.parse(e.payload) as { stepId: string }).stepId),
    );
  const chain = (n: number) => Array.from({ length: n }, (_, i) => mapping(`m${i}`, { i: { value: i }, name: { initData: true, path: 'name' } }));

  it('run in the object in one unit, each finishing once, with no queue message', async () => {
    const { user, runId } = await runOf(chain(5), { name: 'Ada' });
    const { run } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(run.snapshot.result).toEqual({ i: 4, name: 'Ada' });
    expect((await sentOf(runId)).filter((t) => t.sent === 1)).toEqual([]);
    expect(await finishedSteps(runId)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
  });

  it('a chain longer than one slice goes on through the queue and still finishes every step once', async () => {
    const { user, runId } = await runOf(chain(150), { name: 'Ada' });
    const { run } = await waitForRun(user, runId);
    expect(run.status).toBe('success');
    expect(run.snapshot.result).toEqual({ i: 149, name: 'Ada' });
    const sent = (await sentOf(runId)).filter((t) => t.sent === 1);
    expect(sent.length).toBeGreaterThan(0); // where a slice ended, the next unit went by message
    expect(sent.length).toBeLessThan(150 / 2);
    expect(await finishedSteps(runId)).toEqual(chain(150).map((m) => m.id));
  });
});

describe('retries, resume frames and the UI message stream', () => {
  it('retries a failing tool step per options.retries with backoff, then fails the run', async () => {
    const started = Date.now();
    const { user, runId } = await runOf([
      mapping('shape', { slug: { value: 'not-installed' }, input: { value: 'x' } }),
      { type: 'tool', id: 'run', toolId: 'execute-skill', options: { retries: 1 } },
    ]);
    const { run } = await waitForRun(user, runId);
    expect(run.status).toBe('failed');
    expect(run.snapshot.error).toMatch(/^Step run failed: NOT_FOUND/);
    // One retry after a 1 s backoff, delivered as a second attempt of the same unit.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect((await tasksOf(runId)).find((t) => t.key === '1')).toMatchObject({ status: 'failed', attempt: 2 });
  });

  it('answers NO_SUSPEND_FRAME for a run marked suspended without a suspended step', async () => {
    const { user, runId } = await runOf([humanInput('approve')]);
    await waitForRun(user, runId, ['suspended']);
    await runInDurableObject(stub(runId), (_: WorkflowRun, state) => {
      state.storage.sql.exec(`UPDATE tasks SET status = 'done'`);
    });
    expectError(await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: {} }), 409, 'NO_SUSPEND_FRAME');
  });

  it('launches and resumes through POST /workflows/:id/stream as an AI SDK UI message stream', async () => {
    const user = await signUp();
    await install(user, 'flow', definition('flow', [humanInput('approve'), mapping('after', { ok: { step: 'approve', path: 'ok' } })]));
    const parts = async (res: Response) => sseMessages(await res.text()).map(({ data }) => (data === '[DONE]' ? data : JSON.parse(data)));
    const launched = await exports.default.fetch(`${BASE}/api/v1/workflows/flow/stream`, {
      method: 'POST',
      headers: { 'x-auth-token': user.token, 'content-type': 'application/json' },
      body: JSON.stringify({ inputData: {} }),
    });
    expect(launched.status).toBe(200);
    expect(launched.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    const first = await parts(launched);
    expect(first[0]).toMatchObject({ type: 'start' });
    const runId = first[0].messageId.slice(3);
    const snapshots = first.filter((p) => p.type === 'data-workflow');
    expect(snapshots.at(-1).data).toMatchObject({ type: 'workflow-snapshot', runId, status: 'suspended' });
    expect(first.slice(-5).map((p) => (p === '[DONE]' ? p : p.type))).toEqual(['text-start', 'text-delta', 'text-end', 'finish', '[DONE]']);
    expect(first.find((p) => p.type === 'text-delta').delta).toBe(`Workflow flow run ${runId}: suspended`);

    const resumed = await exports.default.fetch(`${BASE}/api/v1/workflows/flow/stream`, {
      method: 'POST',
      headers: { 'x-auth-token': user.token, 'content-type': 'application/json' },
      body: JSON.stringify({ runId, step: 'approve', resumeData: { ok: 1 } }),
    });
    const second = await parts(resumed);
    expect(second.filter((p) => p.type === 'data-workflow').at(-1).data).toMatchObject({ status: 'success', snapshot: { result: { ok: 1 } } });
    // A resume that cannot happen answers before any stream, in the resume shape.
    const again = await exports.default.fetch(`${BASE}/api/v1/workflows/flow/stream`, {
      method: 'POST',
      headers: { 'x-auth-token': user.token, 'content-type': 'application/json' },
      body: JSON.stringify({ runId, resumeData: {} }),
    });
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ cancelled: true, error: expect.any(String) });
  });
});

describe('runs started from a chat thread', () => {
  it('answers conversationId and reports suspension and completion into the thread', async () => {
    const user = await signUp();
    await addSkill(user);
    const thread = await call('/api/v1/threads', { token: user.token, body: { skill_slug: 'meeting-summarizer' } });
    expect(thread.status).toBe(201);
    await install(user, 'flow', definition('flow', [humanInput('approve'), sleep('after')]));
    const launched = await call('/api/v1/workflows/flow/launch', { token: user.token, body: { threadId: thread.body.id } });
    expect(launched.status).toBe(201);
    expect(launched.body).toEqual({ runId: expect.any(String), workflowId: 'flow', status: 'started', conversationId: thread.body.id });
    const runId = launched.body.runId;
    await waitForRun(user, runId, ['suspended']);
    await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: {} } });
    await waitForRun(user, runId, ['success']);
    const shard = await shardD1(user.workspaceId);
    const rows = await until(
      () =>
        shard
          .prepare('SELECT role, content FROM thread_messages WHERE thread_id = ? ORDER BY id')
          .bind(thread.body.id)
          .all()
          .then((r) => r.results),
      (r) => r.length === 2,
      'the notifications',
    );
    expect(rows).toEqual([
      { role: 'assistant', content: `Workflow flow is waiting for input at approve; resume run ${runId} to go on.` },
      { role: 'assistant', content: `Workflow flow finished (run ${runId}).` },
    ]);
    const other = await signUp();
    await install(other, 'flow', definition('flow', [sleep('a')]));
    const refused = expectError(await call('/api/v1/workflows/flow/launch', { token: other.token, body: { threadId: thread.body.id } }), 404, 'NOT_FOUND');
    expect(refused.details!.field).toBe('threadId');
    // Without a thread, no conversationId.
    expect(Object.keys((await call('/api/v1/workflows/flow/launch', { token: other.token, body: {} })).body)).toEqual(['runId', 'workflowId', 'status']);
  });

  it('starts from an agent turn in the thread (start_workflow), only for a caller who may launch workflows', async () => {
    const user = await signUp();
    await addSkill(user);
    // The BYOK fixture model calls start_workflow when the message asks for it (test/setup/tool-calling-model.ts).
    expect((await call('/api/v1/byok', { method: 'PUT', token: user.token, body: { key: inject('modelKeys').byok } })).status).toBe(200);
    await install(user, 'flow', definition('flow', [mapping('greet', { hello: { value: 'world' } })]));
    const thread = (await call('/api/v1/threads', { token: user.token, body: { skill_slug: 'meeting-summarizer' } })).body;
    const posted = await call(`/api/v1/threads/${thread.id}/messages`, { token: user.token, body: { content: 'Please start workflow flow' } });
    expect(posted.status).toBe(201);
    expect(posted.body.status).toBe('completed');
    const runId = /as run ([\w-]+);/.exec(posted.body.reply.content)?.[1];
    expect(posted.body.reply.content).toBe(`Started workflow flow as run ${runId}; its outcome will be posted to this conversation.`);
    await waitForRun(user, runId!, ['success']);
    const shard = await shardD1(user.workspaceId);
    const notice = await until(
      () =>
        shard
          .prepare('SELECT role, content FROM thread_messages WHERE thread_id = ? AND execution_id IS NULL')
          .bind(thread.id)
          .all()
          .then((r) => r.results),
      (r) => r.length === 1,
      'the completion notice',
    );
    expect(notice).toEqual([{ role: 'assistant', content: `Workflow flow finished (run ${runId}).` }]);
    const runs = await call('/api/v1/workflows/runs', { token: user.token });
    expect(runs.body.runs.map((r: { runId: string }) => r.runId)).toEqual([runId]);

    // A key with thread:write but without workflow:run: the turn is not offered the tool, so nothing starts.
    const key = await createKey(user, ['thread:read', 'thread:write', 'library:read']);
    const refused = await call(`/api/v1/threads/${thread.id}/messages`, { apiKey: key.key, body: { content: 'Now start workflow flow' } });
    expect(refused.status).toBe(201);
    expect(refused.body.reply.content).toBe('Done on your own key.');
    expect((await call('/api/v1/workflows/runs', { token: user.token })).body.runs).toHaveLength(1);
  });
});
