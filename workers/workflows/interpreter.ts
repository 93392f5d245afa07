import type { WorkflowRunStatus } from '../../schema/shard/workflows';
import type { CompiledWorkflow, GraphNode, Json, LeafStep, MappingStep } from './compiler';
import { valueProblem } from './json-schema';
import { evaluate, fillTemplate, isMissing, segmentsOf, walk, type Scope } from './predicates';
import { executionOutput, StepError, type ExecutionCheck } from './steps';

/**
 * The workflow interpreter (docs/workflows.md, Running): given a run's state and one thing that
 * happened to it, the run's next state and what must happen outside it. Pure: no storage, no
 * clock (`now` is handed in), no messages. durable-objects/WorkflowRun.ts keeps the state,
 * sends the queue messages, arms the alarm and carries out the effects; this module decides
 * which units exist, what each one does when it runs, and how the run moves on.
 *
 * A run is a row of top-level entries; the entry at `cursor` has one or more units of work
 * (`tasks`), keyed `<entry>`, `<entry>/<childId>`, `<entry>[<item>]` or `<entry>#<iteration>`.
 * A unit is queued under a dispatch `attempt`; a message for that attempt runs it once.
 */

/** How a `tool` step runs, as its capability declares: an execution it waits for, input it suspends for, or a read that answers at once. */
export type StepKind = 'execution' | 'input' | 'read';

export type TaskStatus = 'queued' | 'running' | 'waiting' | 'suspended' | 'done' | 'failed' | 'canceled';
/** Why a waiting unit waits: a sleep, an execution it polls, a retry backoff, or capacity (another execution working). */
export type WaitReason = 'sleep' | 'execution' | 'backoff' | 'capacity';

export interface Task {
  key: string;
  /** The top-level entry. */
  node: number;
  stepId: string;
  /** The foreach item or loop iteration; -1 otherwise. */
  item: number;
  status: TaskStatus;
  input: Json;
  attempt: number;
  /** Whether this attempt's queue message went out: queued units not sent are the outbox. */
  sent: boolean;
  /** Failures spent from the step's `retries`. */
  failures: number;
  wait: WaitReason | null;
  dueAt: number | null;
  executionId: string | null;
  updatedAt: number;
}

export interface StepResult {
  status: 'success' | 'failed' | 'suspended';
  output: Json;
}

/**
 * Where a rerun starts (docs/workflows.md, Rerun from a step): the top-level entry, its input,
 * and the results it keeps of the steps before that entry, which do not run again.
 */
export interface RerunFrom {
  cursor: number;
  input: Json;
  results: Record<string, StepResult>;
}

/** foreach bookkeeping: the items, the next one to start, and outputs in input order. */
export interface ForeachProgress {
  items: Json[];
  next: number;
  done: number;
  outputs: Json[];
}

export interface RunState {
  status: WorkflowRunStatus;
  /** The top-level entry running now, and its input (the previous entry's output). */
  cursor: number;
  input: Json;
  result?: Json;
  error?: string;
  /** A resume is being carried out: a racing one answers RESUME_IN_PROGRESS until it settles. */
  resuming: boolean;
  tasks: Readonly<Record<string, Task>>;
  results: Readonly<Record<string, StepResult>>;
  /** By top-level entry. */
  foreach: Readonly<Record<number, ForeachProgress>>;
}

/** What a run is of: its graph and data, and what the deployment says about tools. */
export interface Program {
  workflow: CompiledWorkflow;
  initData: Json;
  /** Run state: the stateSchema's property defaults (read-only). */
  workflowState: Json;
  /** What a mapping's `requestContextPath` reads. */
  requestContext: { workspaceId: string; userId: string; runId: string; workflowId: string };
  /** How a tool step of this id runs; undefined for one this deployment does not offer. */
  kindOf(toolId: string): StepKind | undefined;
  /** The scope the check of a step needs, or null for one that acts on nothing outside its run. */
  scopeOf(step: LeafStep | MappingStep): string | null;
}

/** What the run's event log says changed; the run stream sends these between its snapshots. */
export type RunEventType =
  'workflow-step-started' | 'workflow-step-execution' | 'workflow-step-finished' | 'workflow-suspended' | 'workflow-resumed' | 'workflow-finished';

export type Effect =
  /** A line of the run's event log. */
  | { type: 'event'; event: RunEventType; payload: Record<string, Json> }
  /** A message for the thread a chat-started run reports into. */
  | { type: 'notify'; text: string }
  /** Run the read tool of a running unit for the launcher; answer with `answered` or `refused`. */
  | { type: 'run-tool'; key: string; toolId: string }
  /** Start the execution of a running unit (an agent, or a tool of kind execution); answer with `execution-started` or `refused`. */
  | { type: 'start-execution'; key: string; step: LeafStep; input: Json }
  /** Check the execution a unit waits for; answer with `execution-checked`. */
  | { type: 'poll'; key: string; executionId: string }
  /** Interrupt executions the run no longer needs. */
  | { type: 'stop-executions'; executionIds: string[] };

export type RunInput =
  /** The run begins: its first entry's units, on the launch inputs; a rerun at `from`. */
  | { type: 'start'; from?: RerunFrom }
  /** A queue message for the unit arrived. */
  | { type: 'claim'; key: string; attempt: number }
  /** The claimed unit may act (its launcher still holds): what it does. */
  | { type: 'execute'; key: string }
  /** The first ready unit that only computes, run here and now. */
  | { type: 'run-pure' }
  /** These messages went out. */
  | { type: 'sent'; units: { key: string; attempt: number }[] }
  | { type: 'answered'; key: string; output: Json }
  /** Running the unit's tool or starting its execution was refused; a retryable refusal waits for capacity. */
  | { type: 'refused'; key: string; message: string; retryable: boolean }
  | { type: 'execution-started'; key: string; executionId: string }
  | { type: 'execution-checked'; key: string; check: ExecutionCheck }
  /** The unit failed; with `retry` false its `retries` are not spent on it (a revoked launcher). */
  | { type: 'failed'; key: string; message: string; retry: boolean }
  /** A waiting unit's `dueAt` came. */
  | { type: 'timer'; key: string }
  /** A new dispatch of the unit (its message was lost, or it was cut off mid-run). */
  | { type: 'requeue'; key: string }
  | { type: 'cancel' }
  /** The launching credential no longer holds (revoked, signed out, its holder gone): the run fails now, whatever it waits for. */
  | { type: 'launcher-gone'; message: string }
  /** The resume that set `resuming` has been carried out. */
  | { type: 'resume-settled' };

/** Answers the state it was given when nothing changed. */
export interface Transition {
  state: RunState;
  effects: Effect[];
}

export type ResumeOutcome =
  | { kind: 'resumed'; stepId: string }
  | { kind: 'finished'; status: string }
  | { kind: 'not_suspended'; status: string }
  | { kind: 'in_progress' }
  | { kind: 'no_frame' }
  | { kind: 'step_mismatch'; suspended: string[] }
  /** The resumer's credential lacks scopes the steps still to run need. */
  | { kind: 'forbidden'; stepId: string; missing: string[] }
  /** The resume data does not satisfy the step's `resumeSchema`; `pointer` is where (JSON pointer). */
  | { kind: 'invalid'; stepId: string; pointer: string; message: string; missing?: string };

export interface ResumeRequest {
  /** Which suspended step; null when only one is. */
  stepId: string | null;
  data: Json;
  /** Whether the resumer's own credential holds a scope. */
  holds(scope: string): boolean;
  /** Who resumed, as the event log records it. */
  by: Json;
}

export const FINAL: readonly WorkflowRunStatus[] = ['success', 'failed', 'canceled'];
const CLOSED: readonly TaskStatus[] = ['done', 'failed', 'canceled'];

/** How often a step's execution is checked while it works. */
export const POLL_MS = 500;
/** How long a step waits when the workspace's execution slot is taken. */
export const CAPACITY_WAIT_MS = 2_000;
/** How much of an output or result the event log keeps as its summary. */
const SUMMARY_CHARS = 280;

export const summaryOf = (value: Json | undefined): string => {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
};

/** Units in the order the run goes through them: by entry, item, then key. */
export const ordered = (tasks: Iterable<Task>): Task[] =>
  [...tasks].sort((a, b) => a.node - b.node || a.item - b.item || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

/** The units in `statuses`, in order. */
export const tasksIn = (state: RunState, ...statuses: TaskStatus[]): Task[] => ordered(Object.values(state.tasks).filter((t) => statuses.includes(t.status)));

/** Run state starts at the stateSchema's property defaults (rule 8: nothing writes it afterwards). */
export function initialWorkflowState(workflow: CompiledWorkflow): Json {
  const schema = workflow.stateSchema as { properties?: Record<string, { default?: Json }> } | null;
  const state: Record<string, Json> = {};
  for (const [key, property] of Object.entries(schema?.properties ?? {})) if (property.default !== undefined) state[key] = property.default;
  return state;
}

/** The step a unit runs. */
export function stepOf(workflow: CompiledWorkflow, task: Pick<Task, 'node' | 'stepId'>): LeafStep | MappingStep {
  const node = workflow.nodes[task.node]!;
  switch (node.type) {
    case 'parallel':
      return node.steps.find((s) => s.id === task.stepId)!;
    case 'conditional':
      return node.branches.find((b) => b.step.id === task.stepId)!.step;
    case 'loop':
    case 'foreach':
      return node.step;
    default:
      return node;
  }
}

/** The steps an entry runs. */
const leavesOf = (node: GraphNode): (LeafStep | MappingStep)[] =>
  node.type === 'parallel'
    ? node.steps
    : node.type === 'conditional'
      ? node.branches.map((b) => b.step)
      : node.type === 'loop' || node.type === 'foreach'
        ? [node.step]
        : [node];

/**
 * The scopes the steps still to run may need: those of the current entry's open units (of its
 * one step, for a loop or foreach) and of every entry after it, each branch counted.
 */
export function neededScopes(program: Program, state: RunState): string[] {
  const [current, ...later] = program.workflow.nodes.slice(state.cursor);
  const open = new Set(
    Object.values(state.tasks)
      .filter((t) => !CLOSED.includes(t.status))
      .map((t) => t.stepId),
  );
  const steps = [
    ...(current ? leavesOf(current).filter((s) => current.type === 'loop' || current.type === 'foreach' || open.has(s.id)) : []),
    ...later.flatMap(leavesOf),
  ];
  return [...new Set(steps.map((s) => program.scopeOf(s)).filter((scope) => scope !== null))];
}

/** A ready unit that needs nothing outside the run. */
function isPure(step: LeafStep | MappingStep, now: number): boolean {
  if (step.type === 'mapping') return true;
  if (step.type === 'sleep') return step.duration === 0;
  return step.type === 'sleepUntil' && Date.parse(step.date) <= now;
}

/** One transition being worked out: copies what it changes, so the state it started from stays as it was. */
class Draft {
  readonly effects: Effect[] = [];
  private readonly s: RunState;
  private changed = false;
  private readonly copied = new Set<'tasks' | 'results' | 'foreach'>();

  constructor(
    readonly program: Program,
    private readonly base: RunState,
    readonly now: number,
  ) {
    this.s = { ...base };
  }

  get state(): Readonly<RunState> {
    return this.s;
  }

  transition(): Transition {
    return { state: this.changed ? this.s : this.base, effects: this.effects };
  }

  private own<K extends 'tasks' | 'results' | 'foreach'>(part: K): RunState[K] {
    this.changed = true;
    if (!this.copied.has(part)) {
      this.copied.add(part);
      (this.s as Record<K, unknown>)[part] = { ...this.s[part] };
    }
    return this.s[part];
  }

  setRun(change: Partial<Pick<RunState, 'status' | 'cursor' | 'input' | 'result' | 'error' | 'resuming'>>) {
    this.changed = true;
    Object.assign(this.s, change);
  }

  task(key: string): Task | undefined {
    return this.s.tasks[key];
  }

  setTask(key: string, change: Partial<Omit<Task, 'key'>>) {
    const tasks = this.own('tasks') as Record<string, Task>;
    tasks[key] = { ...tasks[key]!, ...change, updatedAt: this.now };
  }

  addTask(key: string, node: number, stepId: string, item: number, input: Json) {
    const tasks = this.own('tasks') as Record<string, Task>;
    tasks[key] = {
      key,
      node,
      stepId,
      item,
      status: 'queued',
      input,
      attempt: 1,
      sent: false,
      failures: 0,
      wait: null,
      dueAt: null,
      executionId: null,
      updatedAt: this.now,
    };
  }

  setResult(stepId: string, status: StepResult['status'], output: Json) {
    (this.own('results') as Record<string, StepResult>)[stepId] = { status, output };
  }

  setForeach(node: number, progress: ForeachProgress) {
    (this.own('foreach') as Record<number, ForeachProgress>)[node] = progress;
  }

  record(event: RunEventType, payload: Record<string, Json>) {
    this.effects.push({ type: 'event', event, payload });
  }

  outputs(): Record<string, Json> {
    return Object.fromEntries(Object.entries(this.s.results).flatMap(([id, r]) => (r.status === 'success' ? [[id, r.output]] : [])));
  }

  scope(inputData: Json): Scope {
    return { initData: this.program.initData, inputData, state: this.program.workflowState, stepResults: this.outputs() };
  }
}

// ---- the graph ------------------------------------------------------------------------------

/** Starts top-level entry `i` on `input`, or finishes the run after the last one. */
function activate(d: Draft, i: number, input: Json) {
  d.setRun({ cursor: i, input });
  const node = d.program.workflow.nodes[i];
  if (!node) return closeRun(d, 'success', undefined, input);
  switch (node.type) {
    case 'parallel':
      for (const child of node.steps) d.addTask(`${i}/${child.id}`, i, child.id, -1, input);
      return;
    case 'conditional': {
      const scope = d.scope(input);
      const holding = node.branches.filter((b) => evaluate(b.predicate, scope));
      if (holding.length === 0) return completeNode(d, i, {});
      for (const b of holding) d.addTask(`${i}/${b.step.id}`, i, b.step.id, -1, input);
      return;
    }
    case 'loop':
      d.addTask(`${i}#0`, i, node.step.id, 0, input);
      return;
    case 'foreach': {
      if (!Array.isArray(input)) return closeRun(d, 'failed', `foreach ${node.id} needs an array as input, got ${input === null ? 'null' : typeof input}`);
      if (input.length === 0) return completeNode(d, i, []);
      const progress: ForeachProgress = { items: input, next: 0, done: 0, outputs: new Array<Json>(input.length).fill(null) };
      while (progress.next < Math.min(node.concurrency, input.length)) {
        d.addTask(`${i}[${progress.next}]`, i, node.step.id, progress.next, input[progress.next]!);
        progress.next++;
      }
      d.setForeach(i, progress);
      return;
    }
    default:
      d.addTask(String(i), i, node.id, -1, input);
  }
}

/** Records a unit's output once, then moves its entry (and the run) on. */
function finishTask(d: Draft, key: string, output: Json) {
  const task = d.task(key);
  if (!task || CLOSED.includes(task.status) || FINAL.includes(d.state.status)) return;
  d.setTask(key, { status: 'done' });
  const node = d.program.workflow.nodes[task.node]!;
  d.setResult(task.stepId, 'success', output);
  d.record('workflow-step-finished', { stepId: task.stepId, unit: key, status: 'success', summary: summaryOf(output) });
  switch (node.type) {
    case 'parallel':
    case 'conditional': {
      const siblings = ordered(Object.values(d.state.tasks).filter((t) => t.node === task.node));
      if (siblings.some((t) => t.status !== 'done')) return refreshStatus(d);
      const outputs = d.outputs();
      return completeNode(d, task.node, Object.fromEntries(siblings.map((s) => [s.stepId, outputs[s.stepId] ?? null])));
    }
    case 'loop': {
      const holds = evaluate(node.predicate, d.scope(output));
      const again = node.loopType === 'dowhile' ? holds : !holds;
      if (!again) return completeNode(d, task.node, output);
      const next = task.item + 1;
      if (next >= node.maxIterations)
        return closeRun(d, 'failed', `Loop ${node.id} reached its maxIterations (${node.maxIterations}) without its condition ending it`);
      d.addTask(`${task.node}#${next}`, task.node, node.step.id, next, output);
      return;
    }
    case 'foreach': {
      const before = d.state.foreach[task.node]!;
      const progress = { ...before, outputs: before.outputs.map((o, i) => (i === task.item ? output : o)), done: before.done + 1 };
      if (progress.next < progress.items.length) {
        d.addTask(`${task.node}[${progress.next}]`, task.node, node.step.id, progress.next, progress.items[progress.next]!);
        progress.next++;
      }
      d.setForeach(task.node, progress);
      if (progress.done < progress.items.length) return;
      d.setResult(node.step.id, 'success', progress.outputs);
      return completeNode(d, task.node, progress.outputs);
    }
    default:
      return completeNode(d, task.node, output);
  }
}

function completeNode(d: Draft, i: number, output: Json) {
  const node = d.program.workflow.nodes[i]!;
  if (node.type === 'parallel' || node.type === 'conditional' || node.type === 'loop' || node.type === 'foreach') {
    d.setResult(node.id, 'success', output);
    d.record('workflow-step-finished', { stepId: node.id, unit: String(i), status: 'success', summary: summaryOf(output) });
  }
  activate(d, i + 1, output);
}

const promptOf = (step: LeafStep | MappingStep): Json => (step.type === 'tool' ? (step.metadata.prompt ?? null) : null);

/** Running while any unit is active; suspended when the only open units wait for input. */
function refreshStatus(d: Draft) {
  if (FINAL.includes(d.state.status)) return;
  const units = Object.values(d.state.tasks);
  const active = units.some((t) => t.status === 'queued' || t.status === 'running' || t.status === 'waiting');
  const suspended = ordered(units.filter((t) => t.status === 'suspended'));
  const status = !active && suspended.length > 0 ? 'suspended' : 'running';
  if (status === d.state.status) return;
  d.setRun({ status });
  if (status !== 'suspended') return;
  d.record('workflow-suspended', { steps: suspended.map((t) => ({ stepId: t.stepId, prompt: promptOf(stepOf(d.program.workflow, t)) })) });
  const { workflowId, runId } = d.program.requestContext;
  d.effects.push({
    type: 'notify',
    text: `Workflow ${workflowId} is waiting for input at ${suspended.map((t) => t.stepId).join(', ')}; resume run ${runId} to go on.`,
  });
}

/** Ends the run: open units are canceled, and the executions they had started are to be stopped. */
function closeRun(d: Draft, status: 'success' | 'failed' | 'canceled', error?: string, result?: Json) {
  const units = ordered(Object.values(d.state.tasks));
  const inflight = units.filter((t) => (t.status === 'running' || t.status === 'waiting') && t.executionId !== null).map((t) => t.executionId!);
  for (const t of units) if (t.status !== 'done' && t.status !== 'failed') d.setTask(t.key, { status: 'canceled' });
  d.setRun({ status, ...(error === undefined ? {} : { error }), ...(result === undefined ? {} : { result }) });
  d.record('workflow-finished', { status, ...(error === undefined ? {} : { error }), ...(status === 'success' ? { summary: summaryOf(result) } : {}) });
  const { workflowId, runId } = d.program.requestContext;
  if (status === 'success') d.effects.push({ type: 'notify', text: `Workflow ${workflowId} finished (run ${runId}).` });
  if (status === 'failed') d.effects.push({ type: 'notify', text: `Workflow ${workflowId} failed (run ${runId}): ${error ?? 'unknown error'}` });
  if (inflight.length > 0) d.effects.push({ type: 'stop-executions', executionIds: inflight });
}

// ---- running units ----------------------------------------------------------------------------

/**
 * A failed step: a tool step is tried again after its retry policy's wait while the policy
 * allows (and `retry`: a revoked launcher spends none) and the failure is not one it never
 * retries; else the run fails.
 */
function failTask(d: Draft, key: string, message: string, retry = true) {
  const task = d.task(key);
  if (!task || (task.status !== 'running' && task.status !== 'waiting') || FINAL.includes(d.state.status)) return;
  const step = stepOf(d.program.workflow, task);
  const policy = retry && step.type === 'tool' ? step.retry : undefined;
  if (policy && task.failures + 1 < policy.attempts && !policy.nonRetryable.some((entry) => message.includes(entry))) {
    const wait = Math.min(policy.maximumIntervalMs, Math.round(policy.initialIntervalMs * policy.backoffCoefficient ** task.failures));
    d.setTask(key, { status: 'waiting', wait: 'backoff', failures: task.failures + 1, dueAt: d.now + wait });
    return;
  }
  d.setTask(key, { status: 'failed' });
  d.setResult(task.stepId, 'failed', { error: message });
  d.record('workflow-step-finished', { stepId: task.stepId, unit: key, status: 'failed', error: message });
  closeRun(d, 'failed', `Step ${task.stepId} failed: ${message}`);
}

/**
 * The launcher no longer holds: the first open unit (the step the run waits at, suspended,
 * sleeping or backing off) fails with the reason, as it would have when it woke, and the run
 * with it; a run with no open unit (queued for its concurrency key) fails with the reason alone.
 */
function launcherGone(d: Draft, message: string) {
  const open = ordered(Object.values(d.state.tasks)).find((t) => !CLOSED.includes(t.status));
  if (!open) return closeRun(d, 'failed', message);
  d.setTask(open.key, { status: 'failed' });
  d.setResult(open.stepId, 'failed', { error: message });
  d.record('workflow-step-finished', { stepId: open.stepId, unit: open.key, status: 'failed', error: message });
  closeRun(d, 'failed', `Step ${open.stepId} failed: ${message}`);
}

function mappingOutput(d: Draft, step: MappingStep, input: Json): Json {
  const scope = d.scope(input);
  const out: Record<string, Json> = {};
  for (const [name, source] of Object.entries(step.fields)) {
    let value: unknown;
    if (source.kind === 'value') value = source.value;
    else if (source.kind === 'template') value = fillTemplate(source.template, scope);
    else if (source.kind === 'requestContext') value = walk(d.program.requestContext, segmentsOf(source.path));
    else if (source.kind === 'initData') value = walk(d.program.initData, segmentsOf(source.path));
    else value = source.step in scope.stepResults ? walk(scope.stepResults[source.step], segmentsOf(source.path)) : undefined;
    // A missing source leaves the field out.
    if (!isMissing(value) && value !== undefined) out[name] = value as Json;
  }
  return out;
}

/** Runs a unit that only computes: its output, or its failure. */
function computeTask(d: Draft, task: Task, step: MappingStep | LeafStep) {
  let output: Json;
  try {
    output = step.type === 'mapping' ? mappingOutput(d, step, task.input) : task.input;
  } catch (error) {
    return failTask(d, task.key, error instanceof Error ? error.message : String(error));
  }
  finishTask(d, task.key, output);
}

function wait(d: Draft, key: string, reason: WaitReason, dueAt: number) {
  d.setTask(key, { status: 'waiting', wait: reason, dueAt });
}

/** What a claimed unit does once it may act. */
function execute(d: Draft, task: Task) {
  const step = stepOf(d.program.workflow, task);
  switch (step.type) {
    case 'mapping':
      return computeTask(d, task, step);
    case 'sleep':
      return step.duration === 0 ? finishTask(d, task.key, task.input) : wait(d, task.key, 'sleep', d.now + step.duration);
    case 'sleepUntil': {
      const at = Date.parse(step.date);
      return at <= d.now ? finishTask(d, task.key, task.input) : wait(d, task.key, 'sleep', at);
    }
    case 'agent':
      return void d.effects.push({ type: 'start-execution', key: task.key, step, input: task.input });
    case 'tool':
      switch (d.program.kindOf(step.toolId)) {
        case 'input':
          d.setTask(task.key, { status: 'suspended' });
          d.setResult(step.id, 'suspended', null);
          return refreshStatus(d);
        case 'read':
          return void d.effects.push({ type: 'run-tool', key: task.key, toolId: step.toolId });
        case 'execution':
          return void d.effects.push({ type: 'start-execution', key: task.key, step, input: task.input });
        default:
          return failTask(d, task.key, `Tool ${step.toolId} is not available in this deployment`);
      }
  }
}

/** A new dispatch of the unit: a later attempt, so a late duplicate of the old message is ignored. */
function requeue(d: Draft, task: Task) {
  d.setTask(task.key, { status: 'queued', attempt: task.attempt + 1, sent: false, wait: null, dueAt: null, executionId: null });
}

const isRunning = (d: Draft, key: string) => d.task(key)?.status === 'running';

function apply(d: Draft, input: RunInput) {
  const live = !FINAL.includes(d.state.status);
  switch (input.type) {
    case 'start':
      if (!live || d.state.cursor !== 0 || Object.keys(d.state.tasks).length > 0) return;
      if (!input.from) return activate(d, 0, d.program.initData);
      for (const [stepId, kept] of Object.entries(input.from.results)) d.setResult(stepId, kept.status, kept.output);
      return activate(d, input.from.cursor, input.from.input);
    case 'claim': {
      const task = d.task(input.key);
      if (!live || !task || task.status !== 'queued' || task.attempt !== input.attempt) return;
      d.setTask(task.key, { status: 'running' });
      return d.record('workflow-step-started', { stepId: task.stepId, unit: task.key, attempt: task.attempt });
    }
    case 'execute': {
      const task = d.task(input.key);
      if (live && task?.status === 'running') execute(d, task);
      return;
    }
    case 'run-pure': {
      if (d.state.status !== 'running') return;
      const task = tasksIn(d.state as RunState, 'queued').find((t) => !t.sent && isPure(stepOf(d.program.workflow, t), d.now));
      if (!task) return;
      d.setTask(task.key, { status: 'running' });
      d.record('workflow-step-started', { stepId: task.stepId, unit: task.key, attempt: task.attempt });
      return computeTask(d, task, stepOf(d.program.workflow, task));
    }
    case 'sent':
      for (const unit of input.units) if (d.task(unit.key)?.attempt === unit.attempt) d.setTask(unit.key, { sent: true });
      return;
    case 'answered':
      if (isRunning(d, input.key)) finishTask(d, input.key, input.output);
      return;
    case 'refused':
      if (!isRunning(d, input.key)) return;
      if (input.retryable) return wait(d, input.key, 'capacity', d.now + CAPACITY_WAIT_MS);
      return failTask(d, input.key, input.message);
    case 'execution-started': {
      const task = d.task(input.key);
      // Canceled (or failed) while the execution was starting: it is not wanted.
      if (task?.status !== 'running') return void d.effects.push({ type: 'stop-executions', executionIds: [input.executionId] });
      d.setTask(task.key, { status: 'waiting', wait: 'execution', executionId: input.executionId, dueAt: d.now + POLL_MS });
      // Where a client follows the execution: its status, and a signed stream URL to mint.
      return d.record('workflow-step-execution', {
        stepId: task.stepId,
        unit: task.key,
        executionId: input.executionId,
        statusPath: `/api/v1/executions/${input.executionId}/status`,
        streamTokenPath: `/api/v1/executions/${input.executionId}/stream-token`,
      });
    }
    case 'execution-checked': {
      const task = d.task(input.key);
      if (task?.status !== 'waiting') return;
      const { check } = input;
      if (check.state === 'working') return d.setTask(task.key, { dueAt: d.now + POLL_MS });
      if (check.state === 'stopped') return failTask(d, task.key, check.reason);
      let output: Json;
      try {
        output = executionOutput(stepOf(d.program.workflow, task) as LeafStep, check);
      } catch (error) {
        if (!(error instanceof StepError)) throw error;
        return failTask(d, task.key, error.message);
      }
      return finishTask(d, task.key, output);
    }
    case 'failed':
      return failTask(d, input.key, input.message, input.retry);
    case 'timer': {
      const task = d.task(input.key);
      if (!live || task?.status !== 'waiting' || task.dueAt === null || task.dueAt > d.now) return;
      if (task.wait === 'sleep') return finishTask(d, task.key, task.input);
      if (task.wait === 'execution') return void d.effects.push({ type: 'poll', key: task.key, executionId: task.executionId! });
      return requeue(d, task);
    }
    case 'requeue': {
      const task = d.task(input.key);
      if (live && task && !CLOSED.includes(task.status) && task.status !== 'suspended') requeue(d, task);
      return;
    }
    case 'cancel':
      if (live) closeRun(d, 'canceled');
      return;
    case 'launcher-gone':
      if (live) launcherGone(d, input.message);
      return;
    case 'resume-settled':
      if (d.state.resuming) d.setRun({ resuming: false });
      return;
  }
}

/** A run before its start: running, at its first entry, with no units yet. */
export const initialRunState = (program: Program): RunState => ({
  status: 'running',
  cursor: 0,
  input: program.initData,
  resuming: false,
  tasks: {},
  results: {},
  foreach: {},
});

/** The run after `input`, and what must happen outside it. */
export function interpret(program: Program, state: RunState, input: RunInput, now: number): Transition {
  const d = new Draft(program, state, now);
  apply(d, input);
  return d.transition();
}

/**
 * Takes the resume data as the suspended step's output, if the resumer holds every scope the
 * steps still to run may need (a resume sets the run acting again, so it takes no less than
 * launching it would) and the data satisfies the step's `resumeSchema`. The run is `resuming`
 * until `resume-settled`.
 */
export function resume(program: Program, state: RunState, request: ResumeRequest, now: number): Transition & { outcome: ResumeOutcome } {
  const unchanged = (outcome: ResumeOutcome) => ({ state, effects: [], outcome });
  if (FINAL.includes(state.status)) return unchanged({ kind: 'finished', status: state.status });
  if (state.resuming) return unchanged({ kind: 'in_progress' });
  if (state.status !== 'suspended') return unchanged({ kind: 'not_suspended', status: state.status });
  const suspended = tasksIn(state, 'suspended');
  if (suspended.length === 0) return unchanged({ kind: 'no_frame' });
  const target = request.stepId === null ? (suspended.length === 1 ? suspended[0] : undefined) : suspended.find((t) => t.stepId === request.stepId);
  if (!target) return unchanged({ kind: 'step_mismatch', suspended: suspended.map((t) => t.stepId) });
  const missing = neededScopes(program, state).filter((scope) => !request.holds(scope));
  if (missing.length > 0) return unchanged({ kind: 'forbidden', stepId: target.stepId, missing });
  const step = stepOf(program.workflow, target);
  const resumeSchema = step.type === 'tool' ? step.metadata.resumeSchema : undefined;
  const problem = resumeSchema === undefined ? null : valueProblem(resumeSchema, request.data);
  if (problem) return unchanged({ kind: 'invalid', stepId: target.stepId, ...problem });
  const d = new Draft(program, state, now);
  d.setRun({ resuming: true, status: 'running' });
  d.record('workflow-resumed', { stepId: target.stepId, resumedBy: request.by });
  finishTask(d, target.key, request.data);
  return { ...d.transition(), outcome: { kind: 'resumed', stepId: target.stepId } };
}
