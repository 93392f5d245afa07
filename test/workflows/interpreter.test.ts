import { describe, expect, it } from 'vitest';
import { compileWorkflow, type Json } from '../../workers/workflows/compiler';
import {
  initialRunState,
  interpret,
  neededScopes,
  resume,
  tasksIn,
  type Effect,
  type Program,
  type ResumeRequest,
  type RunInput,
  type RunState,
  type StepKind,
} from '../../workers/workflows/interpreter';

// The interpreter knows tools only by the kind the program gives them: these ids are made up.
const KINDS: Record<string, StepKind> = { ask: 'input', lookup: 'read', work: 'execution' };
const SCOPES: Record<string, string> = { lookup: 'memory:read', work: 'tool:execute' };

const mapping = (id: string, config: Record<string, unknown>) => ({ type: 'mapping', id, mapConfig: JSON.stringify(config) });
const tool = (id: string, toolId: string, options?: Record<string, unknown>) => ({ type: 'tool', id, toolId, ...(options ? { options } : {}) });
const sleep = (id: string, duration: number) => ({ type: 'sleep', id, duration });
const eq = (path: string, literal: unknown) => ({ op: 'eq', left: { path }, right: { literal } });

function programOf(graph: unknown[], initData: Json = {}, extra: Record<string, unknown> = {}): Program {
  const workflow = compileWorkflow(
    { id: 'flow', inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, graph, ...extra },
    { workspaceId: 'ws_1', hasAgent: (slug) => slug === 'writer', tools: new Set([...Object.keys(KINDS), 'gone']) },
  );
  return {
    workflow,
    initData,
    workflowState: { mood: 'calm' },
    requestContext: { workspaceId: 'ws_1', userId: 'usr_1', runId: 'run-1', workflowId: 'flow' },
    kindOf: (toolId) => KINDS[toolId],
    scopeOf: (step) => (step.type === 'agent' ? 'tool:execute' : step.type === 'tool' ? (SCOPES[step.toolId] ?? null) : null),
  };
}

/** Freezes the whole state, so a transition that wrote to the state it was given would throw. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A run driven by hand: each input goes through the interpreter; `effects` are those of the last one. */
class Run {
  state: RunState;
  now = Date.parse('2030-01-01T00:00:00Z');
  effects: Effect[] = [];
  readonly log: Effect[] = [];

  constructor(
    readonly program: Program,
    { runPure = true } = {},
  ) {
    this.state = deepFreeze(initialRunState(program));
    this.send({ type: 'start' });
    if (runPure) this.runPure();
  }

  static of(graph: unknown[], initData: Json = {}, extra: Record<string, unknown> = {}) {
    return new Run(programOf(graph, initData, extra));
  }

  private take(effects: Effect[]) {
    this.effects = effects;
    this.log.push(...effects);
  }

  send(input: RunInput): Effect[] {
    const before = this.state;
    const t = interpret(this.program, before, input, this.now);
    this.state = deepFreeze(t.state);
    this.take(t.effects);
    return t.effects;
  }

  /** Runs every ready unit that only computes, as the object's slices do. */
  runPure() {
    for (;;) {
      const before = this.state;
      this.send({ type: 'run-pure' });
      if (this.state === before) return;
    }
  }

  /** Delivers the unit's message and lets it act; answers what it asks of the outside. */
  claim(key: string): Effect[] {
    this.send({ type: 'claim', key, attempt: this.task(key).attempt });
    const effects = this.send({ type: 'execute', key });
    this.runPure();
    return effects;
  }

  resume(request: Partial<ResumeRequest> & { data: Json }) {
    const r = resume(this.program, this.state, { stepId: null, holds: () => true, by: { userId: 'usr_2' }, ...request }, this.now);
    this.state = deepFreeze(r.state);
    this.take(r.effects);
    this.runPure();
    return r.outcome;
  }

  task(key: string) {
    const task = this.state.tasks[key];
    if (!task) throw new Error(`no unit ${key}: ${Object.keys(this.state.tasks).join(', ')}`);
    return task;
  }

  output(stepId: string) {
    return this.state.results[stepId];
  }

  /** Keys of the units that are open, in order. */
  get open() {
    return tasksIn(this.state, 'queued', 'running', 'waiting', 'suspended').map((t) => `${t.key}:${t.status}`);
  }

  events(type: string) {
    return this.log.flatMap((e) => (e.type === 'event' && e.event === type ? [e.payload] : []));
  }
}

describe('entries that only compute', () => {
  it('a mapping reads every source kind; each output is the next input, the last one the result', () => {
    const run = Run.of(
      [
        mapping('hello', { greeting: { template: 'Hello ${initData.name}' }, who: { initData: true, path: 'name' } }),
        mapping('shout', {
          text: { step: 'hello', path: 'greeting' },
          ws: { requestContextPath: 'workspaceId' },
          fixed: { value: [1, 2] },
          gone: { step: 'hello', path: 'missing' },
        }),
      ],
      { name: 'Ada' },
    );
    expect(run.state.status).toBe('success');
    expect(run.output('hello')).toEqual({ status: 'success', output: { greeting: 'Hello Ada', who: 'Ada' } });
    expect(run.state.result).toEqual({ text: 'Hello Ada', ws: 'ws_1', fixed: [1, 2] });
    expect(run.events('workflow-step-finished').map((p) => p.stepId)).toEqual(['hello', 'shout']);
    expect(run.events('workflow-finished')).toEqual([{ status: 'success', summary: JSON.stringify(run.state.result) }]);
  });

  it('a sleep of 0 and a sleepUntil already past run here; a longer sleep waits for its timer and passes its input on', () => {
    const run = Run.of([sleep('now', 0), { type: 'sleepUntil', id: 'past', date: '2001-01-01T00:00:00Z' }, sleep('later', 5000)], { n: 1 });
    expect(run.open).toEqual(['2:queued']);
    expect(run.claim('2')).toEqual([]);
    expect(run.task('2')).toMatchObject({ status: 'waiting', wait: 'sleep', dueAt: run.now + 5000 });
    // A timer that comes early changes nothing.
    run.send({ type: 'timer', key: '2' });
    expect(run.task('2').status).toBe('waiting');
    run.now += 5000;
    run.send({ type: 'timer', key: '2' });
    expect(run.state).toMatchObject({ status: 'success', result: { n: 1 } });
  });

  it('a sleepUntil in the future goes by message and waits until its date', () => {
    const run = Run.of([{ type: 'sleepUntil', id: 'then', date: '2100-01-01T00:00:00Z' }]);
    expect(run.open).toEqual(['0:queued']);
    run.claim('0');
    expect(run.task('0')).toMatchObject({ status: 'waiting', wait: 'sleep', dueAt: Date.parse('2100-01-01T00:00:00Z') });
  });
});

describe('tool and agent steps', () => {
  it('a read tool asks the outside to run it, and its answer is the output', () => {
    const run = Run.of([tool('mem', 'lookup'), mapping('after', { content: { step: 'mem', path: 'content' } })]);
    expect(run.claim('0')).toEqual([{ type: 'run-tool', key: '0', toolId: 'lookup' }]);
    expect(run.events('workflow-step-started')).toEqual([{ stepId: 'mem', unit: '0', attempt: 1 }]);
    run.send({ type: 'answered', key: '0', output: { content: 'notes' } });
    run.runPure();
    expect(run.state).toMatchObject({ status: 'success', result: { content: 'notes' } });
  });

  it('an execution tool starts an execution, is polled while it works, and outputs its answer', () => {
    const run = Run.of([tool('run', 'work')], { slug: 'notes', input: 'x' });
    expect(run.claim('0')).toEqual([{ type: 'start-execution', key: '0', step: run.program.workflow.nodes[0], input: { slug: 'notes', input: 'x' } }]);
    run.send({ type: 'execution-started', key: '0', executionId: 'exec_7' });
    expect(run.task('0')).toMatchObject({ status: 'waiting', wait: 'execution', executionId: 'exec_7', dueAt: run.now + 500 });
    expect(run.events('workflow-step-execution')).toEqual([
      {
        stepId: 'run',
        unit: '0',
        executionId: 'exec_7',
        statusPath: '/api/v1/executions/exec_7/status',
        streamTokenPath: '/api/v1/executions/exec_7/stream-token',
      },
    ]);
    run.now += 500;
    expect(run.send({ type: 'timer', key: '0' })).toEqual([{ type: 'poll', key: '0', executionId: 'exec_7' }]);
    run.send({ type: 'execution-checked', key: '0', check: { state: 'working' } });
    expect(run.task('0').dueAt).toBe(run.now + 500);
    run.send({ type: 'execution-checked', key: '0', check: { state: 'completed', text: 'Done.', executionId: 'exec_7' } });
    expect(run.state).toMatchObject({ status: 'success', result: { executionId: 'exec_7', status: 'completed', text: 'Done.' } });
  });

  it('an agent step starts an execution; an answer that breaks its outputSchema fails the run', () => {
    const run = Run.of([{ type: 'agent', id: 'write', agentId: 'ws_1:writer', outputSchema: { type: 'object', required: ['title'] } }]);
    expect(run.claim('0')).toMatchObject([{ type: 'start-execution', key: '0', step: { type: 'agent', agentSlug: 'writer' } }]);
    run.send({ type: 'execution-started', key: '0', executionId: 'exec_8' });
    run.send({ type: 'execution-checked', key: '0', check: { state: 'completed', text: '{"name":"Q3"}', executionId: 'exec_8' } });
    expect(run.state.status).toBe('failed');
    expect(run.state.error).toMatch(/^Step write failed: agent step write: the answer does not satisfy its outputSchema/);
  });

  it('an execution that stops fails its step, and the step and run failures are logged', () => {
    const run = Run.of([tool('run', 'work')]);
    run.claim('0');
    run.send({ type: 'execution-started', key: '0', executionId: 'exec_9' });
    run.send({ type: 'execution-checked', key: '0', check: { state: 'stopped', reason: 'execution exec_9 ended with interrupt' } });
    expect(run.state).toMatchObject({ status: 'failed', error: 'Step run failed: execution exec_9 ended with interrupt' });
    expect(run.output('run')).toEqual({ status: 'failed', output: { error: 'execution exec_9 ended with interrupt' } });
    expect(run.events('workflow-step-finished')).toEqual([{ stepId: 'run', unit: '0', status: 'failed', error: 'execution exec_9 ended with interrupt' }]);
    expect(run.log).toContainEqual({ type: 'notify', text: 'Workflow flow failed (run run-1): Step run failed: execution exec_9 ended with interrupt' });
  });

  it('a tool id the deployment no longer offers fails the step', () => {
    const run = Run.of([tool('old', 'gone')]);
    run.claim('0');
    expect(run.state).toMatchObject({ status: 'failed', error: 'Step old failed: Tool gone is not available in this deployment' });
  });
});

describe('retries', () => {
  it('a failing tool is retried after 1, 2 s as a new attempt of its unit, then fails the run', () => {
    const run = Run.of([tool('mem', 'lookup', { retries: 2 })]);
    run.claim('0');
    run.send({ type: 'refused', key: '0', message: 'NOT_FOUND: gone', retryable: false });
    expect(run.task('0')).toMatchObject({ status: 'waiting', wait: 'backoff', failures: 1, dueAt: run.now + 1000, attempt: 1 });
    run.now += 1000;
    run.send({ type: 'timer', key: '0' });
    expect(run.task('0')).toMatchObject({ status: 'queued', attempt: 2, sent: false });
    // The first attempt's message, delivered late, does nothing.
    const before = run.state;
    run.send({ type: 'claim', key: '0', attempt: 1 });
    expect(run.state).toBe(before);
    run.claim('0');
    run.send({ type: 'refused', key: '0', message: 'NOT_FOUND: gone', retryable: false });
    expect(run.task('0')).toMatchObject({ wait: 'backoff', failures: 2, dueAt: run.now + 2000 });
    run.now += 2000;
    run.send({ type: 'timer', key: '0' });
    run.claim('0');
    run.send({ type: 'refused', key: '0', message: 'NOT_FOUND: gone', retryable: false });
    expect(run.task('0')).toMatchObject({ status: 'failed', attempt: 3 });
    expect(run.state).toMatchObject({ status: 'failed', error: 'Step mem failed: NOT_FOUND: gone' });
  });

  it('a retry policy sets the waits and their ceiling, the attempts in all, and the failures never retried', () => {
    const policy = { attempts: 4, initialIntervalMs: 500, backoffCoefficient: 3, maximumIntervalMs: 2000, nonRetryable: ['INVALID_INPUT'] };
    const run = Run.of([tool('mem', 'lookup', { retries: policy })]);
    const fail = (message = 'SERVICE_UNAVAILABLE: try later') => {
      run.claim('0');
      run.send({ type: 'refused', key: '0', message, retryable: false });
    };
    fail();
    expect(run.task('0')).toMatchObject({ wait: 'backoff', failures: 1, dueAt: run.now + 500 });
    run.now += 500;
    run.send({ type: 'timer', key: '0' });
    fail();
    expect(run.task('0')).toMatchObject({ wait: 'backoff', failures: 2, dueAt: run.now + 1500 });
    run.now += 1500;
    run.send({ type: 'timer', key: '0' });
    fail();
    // 500 × 3² = 4500, held to the 2000 ceiling.
    expect(run.task('0')).toMatchObject({ wait: 'backoff', failures: 3, dueAt: run.now + 2000 });
    run.now += 2000;
    run.send({ type: 'timer', key: '0' });
    fail();
    expect(run.state).toMatchObject({ status: 'failed', error: 'Step mem failed: SERVICE_UNAVAILABLE: try later' });

    const never = Run.of([tool('mem', 'lookup', { retries: policy })]);
    never.claim('0');
    never.send({ type: 'refused', key: '0', message: 'INVALID_INPUT: key is required', retryable: false });
    expect(never.state).toMatchObject({ status: 'failed', error: 'Step mem failed: INVALID_INPUT: key is required' });
  });

  it('a capacity refusal waits and tries again without spending a retry', () => {
    const run = Run.of([tool('run', 'work')]);
    run.claim('0');
    run.send({ type: 'refused', key: '0', message: 'EXECUTION_RUNNING: busy', retryable: true });
    expect(run.task('0')).toMatchObject({ status: 'waiting', wait: 'capacity', failures: 0, dueAt: run.now + 2000 });
    run.now += 2000;
    run.send({ type: 'timer', key: '0' });
    expect(run.task('0')).toMatchObject({ status: 'queued', attempt: 2 });
  });

  it('a failure that spends no retries (a revoked launcher) fails the run at once', () => {
    const run = Run.of([tool('mem', 'lookup', { retries: 3 })]);
    run.send({ type: 'claim', key: '0', attempt: 1 });
    run.send({ type: 'failed', key: '0', message: 'The credential that launched this run was revoked', retry: false });
    expect(run.state).toMatchObject({ status: 'failed', error: 'Step mem failed: The credential that launched this run was revoked' });
  });
});

describe('containers', () => {
  it('parallel runs every child on its input and outputs them by id once all are done', () => {
    const run = Run.of([{ type: 'parallel', id: 'both', steps: [tool('a', 'lookup'), sleep('b', 10)] }], { x: 1 });
    expect(run.open).toEqual(['0/a:queued', '0/b:queued']);
    run.claim('0/b');
    run.claim('0/a');
    run.send({ type: 'answered', key: '0/a', output: { content: 'A' } });
    expect(run.state.status).toBe('running');
    run.now += 10;
    run.send({ type: 'timer', key: '0/b' });
    expect(run.state).toMatchObject({ status: 'success', result: { a: { content: 'A' }, b: { x: 1 } } });
    expect(run.output('both')).toEqual({ status: 'success', output: { a: { content: 'A' }, b: { x: 1 } } });
    expect(run.events('workflow-step-finished').at(-1)).toMatchObject({ stepId: 'both', unit: '0', status: 'success' });
  });

  it('conditional runs only the branches whose predicate holds, and outputs {} when none does', () => {
    const branches = {
      type: 'conditional',
      id: 'pick',
      steps: [sleep('yes', 0), sleep('no', 0), sleep('also', 0)],
      predicates: [eq('initData.go', true), eq('initData.go', false), { op: 'truthy', value: { path: 'state.mood' } }],
    };
    expect(Run.of([branches], { go: true }).state.result).toEqual({ yes: { go: true }, also: { go: true } });
    const none = { ...branches, steps: [sleep('yes', 0)], predicates: [eq('initData.go', true)] };
    expect(Run.of([none], { go: 'maybe' }).state).toMatchObject({ status: 'success', result: {} });
  });

  it('a dowhile loop feeds the body its own output while the predicate holds', () => {
    const run = Run.of([{ type: 'loop', id: 'again', loopType: 'dowhile', step: tool('ask', 'ask'), predicate: eq('stepResults.ask.more', true) }]);
    run.claim('0#0');
    expect(run.resume({ data: { more: true } })).toEqual({ kind: 'resumed', stepId: 'ask' });
    run.send({ type: 'resume-settled' });
    expect(run.task('0#1')).toMatchObject({ status: 'queued', input: { more: true }, item: 1 });
    run.claim('0#1');
    run.resume({ data: { more: false } });
    expect(run.state).toMatchObject({ status: 'success', result: { more: false } });
    expect(run.output('again')).toEqual({ status: 'success', output: { more: false } });
  });

  it('a dountil loop stops when the predicate holds, and fails the run at maxIterations', () => {
    const loop = (max: number) => ({
      type: 'loop',
      id: 'until',
      loopType: 'dountil',
      maxIterations: max,
      step: tool('mem', 'lookup'),
      predicate: eq('stepResults.mem.content', 'ok'),
    });
    const run = Run.of([loop(3)]);
    for (const [i, content] of ['no', 'ok'].entries()) {
      run.claim(`0#${i}`);
      run.send({ type: 'answered', key: `0#${i}`, output: { content } });
    }
    expect(run.state).toMatchObject({ status: 'success', result: { content: 'ok' } });

    const capped = Run.of([loop(2)]);
    for (const i of [0, 1]) {
      capped.claim(`0#${i}`);
      capped.send({ type: 'answered', key: `0#${i}`, output: { content: 'no' } });
    }
    expect(capped.state).toMatchObject({ status: 'failed', error: 'Loop until reached its maxIterations (2) without its condition ending it' });
  });

  it('foreach runs its child on each item, at most concurrency at a time, and outputs in input order', () => {
    const run = Run.of([{ type: 'foreach', id: 'each', opts: { concurrency: 2 }, step: tool('mem', 'lookup') }], ['a', 'b', 'c']);
    expect(run.open).toEqual(['0[0]:queued', '0[1]:queued']);
    run.claim('0[1]');
    run.send({ type: 'answered', key: '0[1]', output: 'B' });
    expect(run.open).toEqual(['0[0]:queued', '0[2]:queued']);
    expect(run.task('0[2]').input).toBe('c');
    for (const [key, out] of [
      ['0[2]', 'C'],
      ['0[0]', 'A'],
    ]) {
      run.claim(key!);
      run.send({ type: 'answered', key: key!, output: out! });
    }
    expect(run.state).toMatchObject({ status: 'success', result: ['A', 'B', 'C'] });
    expect(run.output('mem')).toEqual({ status: 'success', output: ['A', 'B', 'C'] });
  });

  it('foreach over an empty array outputs [], and over anything else fails the run', () => {
    const each = { type: 'foreach', id: 'each', step: sleep('s', 0) };
    expect(Run.of([each], []).state).toMatchObject({ status: 'success', result: [] });
    expect(Run.of([each], { not: 'an array' }).state).toMatchObject({ status: 'failed', error: 'foreach each needs an array as input, got object' });
  });
});

describe('suspend and resume', () => {
  const ask = (id: string, metadata: Record<string, unknown> = { prompt: 'Ship it?' }) => tool(id, 'ask', { metadata });

  it('an input step suspends the run, asking its prompt; the resume data is its output', () => {
    const run = Run.of([ask('approve'), mapping('after', { ok: { step: 'approve', path: 'ok' } })]);
    run.claim('0');
    expect(run.state.status).toBe('suspended');
    expect(run.output('approve')).toEqual({ status: 'suspended', output: null });
    expect(run.events('workflow-suspended')).toEqual([{ steps: [{ stepId: 'approve', prompt: 'Ship it?' }] }]);
    expect(run.log).toContainEqual({ type: 'notify', text: 'Workflow flow is waiting for input at approve; resume run run-1 to go on.' });
    expect(run.resume({ data: { ok: 'yes' }, by: { userId: 'usr_2' } })).toEqual({ kind: 'resumed', stepId: 'approve' });
    expect(run.events('workflow-resumed')).toEqual([{ stepId: 'approve', resumedBy: { userId: 'usr_2' } }]);
    expect(run.state).toMatchObject({ status: 'success', result: { ok: 'yes' }, resuming: true });
    run.send({ type: 'resume-settled' });
    expect(run.state.resuming).toBe(false);
  });

  it('a launcher gone while the run waits fails the step it waits at, stops its execution, and leaves nothing to resume', () => {
    const reason = 'The credential that launched this run was revoked';
    const waiting = Run.of([{ type: 'parallel', id: 'two', steps: [ask('a'), tool('work', 'work')] }, tool('mem', 'lookup')]);
    waiting.claim('0/a');
    waiting.claim('0/work');
    waiting.send({ type: 'execution-started', key: '0/work', executionId: 'exec_7' });
    waiting.send({ type: 'launcher-gone', message: reason });
    expect(waiting.state).toMatchObject({ status: 'failed', error: `Step a failed: ${reason}` });
    expect(waiting.output('a')).toEqual({ status: 'failed', output: { error: reason } });
    expect(waiting.open).toEqual([]);
    expect(waiting.log).toContainEqual({ type: 'stop-executions', executionIds: ['exec_7'] });
    expect(waiting.resume({ data: {} })).toEqual({ kind: 'finished', status: 'failed' });

    // An ended run stays as it ended.
    const done = Run.of([mapping('only', { x: { value: 1 } })]);
    const before = done.state;
    done.send({ type: 'launcher-gone', message: reason });
    expect(done.state).toBe(before);
  });

  it('answers why a resume cannot be taken, leaving the run as it was', () => {
    const run = Run.of([
      { type: 'parallel', id: 'two', steps: [ask('a'), ask('b', { resumeSchema: { type: 'object', required: ['approved'] } })] },
      tool('mem', 'lookup'),
    ]);
    expect(run.resume({ data: {} })).toEqual({ kind: 'not_suspended', status: 'running' });
    run.claim('0/a');
    // One input step suspended, the other still queued: the run is still running.
    expect(run.state.status).toBe('running');
    run.claim('0/b');
    const suspended = run.state;
    expect(run.resume({ data: {} })).toEqual({ kind: 'step_mismatch', suspended: ['a', 'b'] });
    expect(run.resume({ stepId: 'a', data: {}, holds: (scope) => scope !== 'memory:read' })).toEqual({
      kind: 'forbidden',
      stepId: 'a',
      missing: ['memory:read'],
    });
    expect(run.resume({ stepId: 'b', data: {} })).toMatchObject({ kind: 'invalid', stepId: 'b', pointer: '' });
    expect(run.state).toBe(suspended);
    expect(run.resume({ stepId: 'a', data: 'A' })).toEqual({ kind: 'resumed', stepId: 'a' });
    // A racing resume while the first one is carried out, then once it settled.
    expect(run.resume({ stepId: 'b', data: { approved: true } })).toEqual({ kind: 'in_progress' });
    run.send({ type: 'resume-settled' });
    expect(run.resume({ stepId: 'b', data: { approved: true } })).toEqual({ kind: 'resumed', stepId: 'b' });
    expect(run.output('two')).toEqual({ status: 'success', output: { a: 'A', b: { approved: true } } });
    run.send({ type: 'resume-settled' });
    run.send({ type: 'cancel' });
    expect(run.resume({ data: {} })).toEqual({ kind: 'finished', status: 'canceled' });
  });

  it('needs the scopes of the open units of the current entry and of every later entry', () => {
    const run = Run.of([
      ask('approve'),
      { type: 'conditional', id: 'c', steps: [tool('m', 'lookup'), tool('w', 'work')], predicates: [eq('initData.a', 1), eq('initData.a', 2)] },
    ]);
    run.claim('0');
    expect(neededScopes(run.program, run.state)).toEqual(['memory:read', 'tool:execute']);
  });
});

describe('cancel, duplicates and lost messages', () => {
  it('cancel closes the run and its open units, and stops the executions they started', () => {
    const run = Run.of([{ type: 'parallel', id: 'p', steps: [tool('run', 'work'), sleep('nap', 60_000)] }]);
    run.claim('0/run');
    run.claim('0/nap');
    run.send({ type: 'execution-started', key: '0/run', executionId: 'exec_3' });
    expect(run.send({ type: 'cancel' })).toEqual([
      { type: 'event', event: 'workflow-finished', payload: { status: 'canceled' } },
      { type: 'stop-executions', executionIds: ['exec_3'] },
    ]);
    expect(run.state.status).toBe('canceled');
    expect(tasksIn(run.state, 'canceled').map((t) => t.key)).toEqual(['0/nap', '0/run']);
    // Nothing moves a canceled run: a timer, a late answer, a second cancel.
    const canceled = run.state;
    run.now += 60_000;
    run.send({ type: 'timer', key: '0/nap' });
    run.send({ type: 'execution-checked', key: '0/run', check: { state: 'completed', text: 'late', executionId: 'exec_3' } });
    expect(run.send({ type: 'cancel' })).toEqual([]);
    expect(run.state).toBe(canceled);
  });

  it('an execution that started after its unit was canceled is stopped', () => {
    const run = Run.of([tool('run', 'work')]);
    run.claim('0');
    run.send({ type: 'cancel' });
    expect(run.send({ type: 'execution-started', key: '0', executionId: 'exec_5' })).toEqual([{ type: 'stop-executions', executionIds: ['exec_5'] }]);
  });

  it('a message delivered twice runs its unit once; a lost one is sent again as a new attempt', () => {
    const run = Run.of([tool('mem', 'lookup')]);
    run.send({ type: 'sent', units: [{ key: '0', attempt: 1 }] });
    expect(run.task('0').sent).toBe(true);
    run.send({ type: 'claim', key: '0', attempt: 1 });
    const claimed = run.state;
    run.send({ type: 'claim', key: '0', attempt: 1 });
    expect(run.state).toBe(claimed);
    // Cut off mid-run: queued again under attempt 2, and an answer of the first attempt is still taken once.
    run.send({ type: 'requeue', key: '0' });
    expect(run.task('0')).toMatchObject({ status: 'queued', attempt: 2, sent: false });
    run.send({ type: 'answered', key: '0', output: { content: 'x' } });
    expect(run.task('0').status).toBe('queued');
    run.claim('0');
    run.send({ type: 'answered', key: '0', output: { content: 'x' } });
    run.send({ type: 'answered', key: '0', output: { content: 'y' } });
    expect(run.state).toMatchObject({ status: 'success', result: { content: 'x' } });
    expect(run.events('workflow-step-finished')).toHaveLength(1);
  });

  it('leaves a chain of mappings to the object by the unit, each finishing once', () => {
    const run = new Run(programOf([mapping('a', { n: { value: 1 } }), mapping('b', { n: { step: 'a', path: 'n' } })]), { runPure: false });
    expect(run.open).toEqual(['0:queued']);
    run.send({ type: 'run-pure' });
    expect(run.open).toEqual(['1:queued']);
    // A unit whose message went out is the queue's to run.
    run.send({ type: 'sent', units: [{ key: '1', attempt: 1 }] });
    const before = run.state;
    run.send({ type: 'run-pure' });
    expect(run.state).toBe(before);
    run.claim('1');
    expect(run.state).toMatchObject({ status: 'success', result: { n: 1 } });
  });
});
