import { DurableObject } from 'cloudflare:workers';
import { sql } from 'drizzle-orm';
import { openDb } from '../workers/lib/db';
import { threadMessages } from '../schema/traces';
import { workflowRuns, workflowStepResults, type WorkflowRunStatus } from '../schema/workflows';
import type { Actor } from '../workers/auth/actor';
import { launcherNow } from '../workers/auth/launcher';
import { hasScope } from '../workers/auth/scopes';
import type { Db, Env } from '../workers/env';
import type { Resumer } from '../workers/services/workflow-runs';
import { isoNow, now } from '../workers/lib/clock';
import type { CompiledWorkflow, GraphNode, Json, LeafStep, MappingStep } from '../workers/workflows/compiler';
import { valueProblem } from '../workers/workflows/json-schema';
import { evaluate, fillTemplate, isMissing, segmentsOf, walk, type Scope } from '../workers/workflows/predicates';
import { checkExecution, runInstantTool, startAgent, startSkill, stepScope, stopExecution } from '../workers/runtime/step-tools';
import { executionOutput, StepError } from '../workers/workflows/steps';

/** What launch hands a new run. The graph and inputs travel as JSON text (RPC types cannot carry recursive JSON). */
export interface StartInput {
  runId: string;
  workspaceId: string;
  workflowId: string;
  /**
   * Who the steps act for: the launching credential (its kind and id, read again before each
   * step) and the scopes it held at launch, which no step exceeds.
   */
  actor: Actor;
  workflow: string;
  initData: string;
  threadId?: string | null;
}

/** A resume as the run records it (`snapshot.resumes`). */
type ResumeRecord = { stepId: string; at: string; by: Resumer['by'] };

/** The queue message: "advance run R at step S" (`key` names the unit of work, `attempt` its dispatch). */
export interface StepMessage {
  runId: string;
  key: string;
  attempt: number;
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

type TaskStatus = 'queued' | 'running' | 'waiting' | 'suspended' | 'done' | 'failed' | 'canceled';
/** Why a waiting task waits: a sleep, an execution it polls, a retry backoff, or capacity (another execution working). */
type WaitReason = 'sleep' | 'execution' | 'backoff' | 'capacity';

type TaskRow = {
  key: string;
  node: number;
  step_id: string;
  item: number;
  status: TaskStatus;
  input: string;
  attempt: number;
  sent: number;
  failures: number;
  wait: WaitReason | null;
  due_at: number | null;
  execution_id: string | null;
  updated_at: number;
};

interface RunMeta {
  runId: string;
  workspaceId: string;
  workflowId: string;
  actor: Actor;
  workflow: CompiledWorkflow;
  initData: Json;
  state: Json;
  threadId: string | null;
  status: WorkflowRunStatus;
  /** The top-level entry running now, and its input (the previous entry's output). */
  cursor: number;
  input: Json;
  result?: Json;
  error?: string;
  resuming: boolean;
  createdAt: number;
}

/** What the run's event log says changed; the run stream sends these between its snapshots. */
export type RunEventType =
  'workflow-step-started' | 'workflow-step-execution' | 'workflow-step-finished' | 'workflow-suspended' | 'workflow-resumed' | 'workflow-finished';

/** One logged change; `payload` is JSON text (an object). */
export interface RunEvent {
  seq: number;
  type: RunEventType;
  at: number;
  payload: string;
}

/** How much of an output or result the event log keeps as its summary. */
const SUMMARY_CHARS = 280;
const summaryOf = (value: Json | undefined): string => {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
};
/** Events answered per read. */
const EVENTS_PAGE = 500;

/** foreach bookkeeping: the items, the next one to start, and outputs in input order. */
interface ForeachProgress {
  items: Json[];
  next: number;
  done: number;
  outputs: Json[];
}

const FINAL: readonly WorkflowRunStatus[] = ['success', 'failed', 'canceled'];

/** How often a step's execution is checked while it works. */
const POLL_MS = 500;
/** How long a step waits when the workspace's execution slot is taken. */
const CAPACITY_WAIT_MS = 2_000;
/** A queued message no consumer took within this is sent again (a lost message or a crashed consumer). */
const REDELIVER_MS = 60_000;
/** A step marked running this long without an outcome was cut off (an eviction mid-step) and is queued again. */
const LEASE_MS = 120_000;
/** An unsent message (the queue refused it) is tried again after this. */
const OUTBOX_RETRY_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/**
 * Steps that only compute (a mapping, a sleep already due) run in the object as soon as they are
 * ready, without a queue message each; a slice ends after this many of them or this much time,
 * and what is left goes out as ordinary units, so one run cannot hold its object for long.
 */
const PURE_SLICE_STEPS = 64;
const PURE_SLICE_MS = 50;
const SCHEMA_VERSION = 1;

const parse = (text: string | null): Json => (text === null ? null : (JSON.parse(text) as Json));

/**
 * One per workflow run, addressed by the run id: the only writer of the run's state.
 *
 * Storage (SQLite): `tasks` holds every unit of work (a step, a parallel child, a foreach item,
 * a loop iteration) keyed `<entry>`, `<entry>/<childId>`, `<entry>[<item>]` or `<entry>#<iteration>`,
 * with its status, input, dispatch `attempt`, whether its message was `sent`, retry `failures`,
 * and what a waiting task waits for (`wait`, `due_at`, `execution_id`). `results` holds each
 * step id's `{status, output}` with the `rev` it was written at; kv holds the run (`run`), foreach
 * progress (`foreach:<entry>`), the write counter (`rev`) and how far D1 has caught up
 * (`persisted`). `events` is the run's change log (`seq`, `type`, `payload`, `at`), written in the
 * same synchronous step as the change it describes and read by the run stream.
 *
 * Lifecycle: `start` writes the run and queues its first unit. A queue message calls `advance`,
 * which runs the unit if it is still queued under that attempt (a duplicate delivery finds it
 * taken and does nothing), and a finished unit's result, the next units and the run's new state
 * are one synchronous storage change, so a result is recorded once. Messages for new units are
 * an outbox: rows with `sent = 0`, sent after the change and re-sent by the alarm if the send or
 * the object failed in between. The one alarm is multiplexed: due sleeps, execution polls,
 * retry backoffs, and the watchdog for lost messages and cut-off steps. `cancel` is one storage
 * change (run canceled, open tasks canceled, alarm cleared) followed by interrupting the
 * executions those tasks started. After each change the run record and changed step results go
 * to D1 by versioned upsert, one write at a time.
 */
export class WorkflowRun extends DurableObject<Env> {
  private persisting: Promise<void> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const s = ctx.storage.sql;
      s.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
      s.exec(`CREATE TABLE IF NOT EXISTS tasks (
        key TEXT PRIMARY KEY, node INTEGER NOT NULL, step_id TEXT NOT NULL, item INTEGER NOT NULL,
        status TEXT NOT NULL, input TEXT NOT NULL, attempt INTEGER NOT NULL, sent INTEGER NOT NULL,
        failures INTEGER NOT NULL DEFAULT 0, wait TEXT, due_at INTEGER, execution_id TEXT, updated_at INTEGER NOT NULL)`);
      s.exec(`CREATE TABLE IF NOT EXISTS results (step_id TEXT PRIMARY KEY, status TEXT NOT NULL, output TEXT, rev INTEGER NOT NULL)`);
      s.exec(`CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, payload TEXT NOT NULL, at INTEGER NOT NULL)`);
      s.exec(`INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)`, String(SCHEMA_VERSION));
    });
  }

  private get db(): Db {
    return openDb(this.env.DB);
  }

  // ---- storage helpers -------------------------------------------------------------------

  private meta(): RunMeta | undefined {
    return this.ctx.storage.kv.get<RunMeta>('run');
  }

  private bump(): number {
    const rev = (this.ctx.storage.kv.get<number>('rev') ?? 0) + 1;
    this.ctx.storage.kv.put('rev', rev);
    return rev;
  }

  private saveMeta(meta: RunMeta) {
    this.ctx.storage.kv.put('run', meta);
    this.bump();
  }

  private task(key: string): TaskRow | null {
    return this.ctx.storage.sql.exec<TaskRow>(`SELECT * FROM tasks WHERE key = ?`, key).toArray()[0] ?? null;
  }

  private tasks(where: string, ...args: (string | number)[]): TaskRow[] {
    return this.ctx.storage.sql.exec<TaskRow>(`SELECT * FROM tasks WHERE ${where} ORDER BY node, item, key`, ...args).toArray();
  }

  private setTask(key: string, change: Partial<Omit<TaskRow, 'key'>>) {
    const entries = Object.entries({ ...change, updated_at: now() });
    this.ctx.storage.sql.exec(
      `UPDATE tasks SET ${entries.map(([k]) => `${k} = ?`).join(', ')} WHERE key = ?`,
      ...entries.map(([, v]) => v as string | number | null),
      key,
    );
    this.bump();
  }

  private addTask(key: string, node: number, stepId: string, item: number, input: Json) {
    this.ctx.storage.sql.exec(
      `INSERT INTO tasks (key, node, step_id, item, status, input, attempt, sent, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, 1, 0, ?)`,
      key,
      node,
      stepId,
      item,
      JSON.stringify(input),
      now(),
    );
    this.bump();
  }

  private setResult(stepId: string, status: string, output: Json) {
    this.ctx.storage.sql.exec(
      `INSERT INTO results (step_id, status, output, rev) VALUES (?, ?, ?, ?) ON CONFLICT(step_id) DO UPDATE SET status = excluded.status, output = excluded.output, rev = excluded.rev`,
      stepId,
      status,
      JSON.stringify(output),
      this.bump(),
    );
  }

  private record(type: RunEventType, payload: Record<string, Json>) {
    this.ctx.storage.sql.exec(`INSERT INTO events (type, payload, at) VALUES (?, ?, ?)`, type, JSON.stringify(payload), now());
  }

  private outputs(): Record<string, Json> {
    const rows = this.ctx.storage.sql
      .exec<{ step_id: string; output: string | null }>(`SELECT step_id, output FROM results WHERE status = 'success'`)
      .toArray();
    return Object.fromEntries(rows.map((r) => [r.step_id, parse(r.output)]));
  }

  private scope(meta: RunMeta, inputData: Json): Scope {
    return { initData: meta.initData, inputData, state: meta.state, stepResults: this.outputs() };
  }

  // ---- the RPC surface ---------------------------------------------------------------------

  /** The change log after `afterSeq`, oldest first. */
  events(afterSeq = 0): RunEvent[] {
    return this.ctx.storage.sql
      .exec<{ seq: number; type: RunEventType; payload: string; at: number }>(
        `SELECT seq, type, payload, at FROM events WHERE seq > ? ORDER BY seq LIMIT ?`,
        afterSeq,
        EVENTS_PAGE,
      )
      .toArray();
  }

  /** Writes the new run (status running), queues its first entry, and waits until D1 shows it. */
  async start(input: StartInput): Promise<void> {
    if (this.meta()) return;
    const workflow = JSON.parse(input.workflow) as CompiledWorkflow;
    const initData = JSON.parse(input.initData) as Json;
    const meta: RunMeta = {
      runId: input.runId,
      workspaceId: input.workspaceId,
      workflowId: input.workflowId,
      actor: input.actor,
      workflow,
      initData,
      state: initialState(workflow),
      threadId: input.threadId ?? null,
      status: 'running',
      cursor: 0,
      input: initData,
      resuming: false,
      createdAt: now(),
    };
    this.saveMeta(meta);
    this.activate(meta, 0, initData);
    await this.afterChange();
  }

  /** A queue message: runs the unit if it is still queued under this attempt; anything else is a duplicate or stale. */
  async advance(key: string, attempt: number): Promise<'ran' | 'ignored'> {
    const meta = this.meta();
    if (!meta || FINAL.includes(meta.status)) return 'ignored';
    const task = this.task(key);
    if (!task || task.status !== 'queued' || task.attempt !== attempt) return 'ignored';
    this.setTask(key, { status: 'running' });
    this.record('workflow-step-started', { stepId: task.step_id, unit: key, attempt: task.attempt });
    try {
      // The launcher as it is now: a credential revoked since launch (or since the last step) stops the run here.
      const launcher = await launcherNow(this.db, meta.actor);
      if (launcher.ok) await this.execute(meta, task, launcher.actor);
      else this.failTask(key, launcher.reason, false);
    } catch (error) {
      // An unexpected fault (not a StepError) fails the step like any other.
      this.failTask(key, error instanceof Error ? error.message : String(error));
    }
    this.runPureSlice();
    // The next unit's message goes out first; the D1 write and the alarm follow without holding
    // the consumer, so the queue can deliver the next step while the record is written.
    await this.flushOutbox();
    this.ctx.waitUntil(this.persist().then(() => this.rearm()));
    return 'ran';
  }

  /**
   * Takes the resume data as the suspended step's output, if `resumer` holds every scope the
   * steps still to run may need (a resume sets the run acting again, so it takes no less than
   * launching it would); records who resumed.
   */
  async resume(stepId: string | null, resumeData: string, resumer: Resumer): Promise<ResumeOutcome> {
    const meta = this.meta();
    if (!meta) return { kind: 'no_frame' };
    if (FINAL.includes(meta.status)) return { kind: 'finished', status: meta.status };
    if (meta.resuming) return { kind: 'in_progress' };
    if (meta.status !== 'suspended') return { kind: 'not_suspended', status: meta.status };
    const suspended = this.tasks(`status = 'suspended'`);
    if (suspended.length === 0) return { kind: 'no_frame' };
    const target = stepId === null ? (suspended.length === 1 ? suspended[0] : undefined) : suspended.find((t) => t.step_id === stepId);
    if (!target) return { kind: 'step_mismatch', suspended: suspended.map((t) => t.step_id) };
    const missing = this.neededScopes(meta).filter((scope) => !hasScope(resumer.scopes, scope));
    if (missing.length > 0) return { kind: 'forbidden', stepId: target.step_id, missing };
    const step = this.step(meta, target);
    const resumeSchema = step.type === 'tool' ? step.metadata.resumeSchema : undefined;
    const problem = resumeSchema === undefined ? null : valueProblem(resumeSchema, JSON.parse(resumeData));
    if (problem) return { kind: 'invalid', stepId: target.step_id, ...problem };
    // Racing resumes: this flag and the status change are one synchronous step, so the next caller sees them.
    meta.resuming = true;
    meta.status = 'running';
    const kv = this.ctx.storage.kv;
    kv.put('resumes', [...(kv.get<ResumeRecord[]>('resumes') ?? []), { stepId: target.step_id, at: isoNow(), by: resumer.by }]);
    this.saveMeta(meta);
    this.record('workflow-resumed', { stepId: target.step_id, resumedBy: resumer.by });
    try {
      this.finishTask(target.key, JSON.parse(resumeData) as Json);
      await this.afterChange();
    } finally {
      const latest = this.meta()!;
      latest.resuming = false;
      this.saveMeta(latest);
    }
    await this.persist();
    return { kind: 'resumed', stepId: target.step_id };
  }

  /** An execution a step started has ended (its object says so): the step is checked now instead of at its next poll. */
  async executionEnded(executionId: string): Promise<void> {
    const meta = this.meta();
    if (!meta || FINAL.includes(meta.status)) return;
    const waiting = this.tasks(`status = 'waiting' AND wait = 'execution' AND execution_id = ?`, executionId);
    if (waiting.length === 0) return;
    for (const task of waiting) await this.pollExecution(this.meta()!, task);
    await this.afterChange();
  }

  /** One storage change: the run, its open tasks and its timers; then the in-flight executions are interrupted. */
  async cancel(): Promise<{ canceled: boolean; status: string }> {
    const meta = this.meta();
    if (!meta) return { canceled: false, status: 'missing' };
    if (FINAL.includes(meta.status)) return { canceled: false, status: meta.status };
    const inflight = this.closeRun(meta, 'canceled');
    await this.persist();
    // Clears the alarm (pending sleeps and polls were canceled with their units above).
    await this.rearm();
    await this.stopAll(meta, inflight);
    return { canceled: true, status: 'canceled' };
  }

  /** The alarm: due sleeps, execution polls, backoffs, and the watchdog for lost messages and cut-off steps. */
  override async alarm(): Promise<void> {
    const meta = this.meta();
    if (!meta) return;
    if (FINAL.includes(meta.status)) {
      // Only a D1 write that failed brings a finished run's alarm back.
      await this.persist();
      return this.rearm();
    }
    const t = now();
    for (const task of this.tasks(`status = 'waiting' AND due_at <= ?`, t)) {
      if (this.meta()!.status !== 'running' && this.meta()!.status !== 'suspended') break;
      if (task.wait === 'sleep') this.finishTask(task.key, parse(task.input));
      else if (task.wait === 'execution') await this.pollExecution(this.meta()!, task);
      else this.requeue(task);
    }
    for (const task of this.tasks(`status = 'queued' AND sent = 1 AND updated_at <= ?`, t - REDELIVER_MS)) this.requeue(task);
    for (const task of this.tasks(`status = 'running' AND updated_at <= ?`, t - LEASE_MS)) this.requeue(task);
    await this.afterChange();
  }

  // ---- running units -----------------------------------------------------------------------

  /** A ready unit that needs nothing outside the object. */
  private pure(step: LeafStep | MappingStep): boolean {
    if (step.type === 'mapping') return true;
    if (step.type === 'sleep') return step.duration === 0;
    return step.type === 'sleepUntil' && Date.parse(step.date) <= now();
  }

  /**
   * Runs the queued units that only compute, one after another, until none is ready or the slice
   * is spent. It is synchronous, so the slice and its results are one storage change: a crash
   * loses the whole slice and its units run again from the queue (redelivery or the watchdog),
   * and each result is still recorded once. The run record goes to D1 once, after the slice.
   */
  private runPureSlice() {
    const started = Date.now();
    for (let ran = 0; ran < PURE_SLICE_STEPS && Date.now() - started < PURE_SLICE_MS; ran++) {
      const meta = this.meta();
      if (!meta || meta.status !== 'running') return;
      const task = this.tasks(`status = 'queued' AND sent = 0`).find((t) => this.pure(this.step(meta, t)));
      if (!task) return;
      this.setTask(task.key, { status: 'running' });
      this.record('workflow-step-started', { stepId: task.step_id, unit: task.key, attempt: task.attempt });
      const step = this.step(meta, task);
      try {
        this.finishTask(task.key, step.type === 'mapping' ? this.mapping(meta, step, parse(task.input)) : parse(task.input));
      } catch (error) {
        this.failTask(task.key, error instanceof Error ? error.message : String(error));
      }
    }
  }

  private step(meta: RunMeta, task: TaskRow): LeafStep | MappingStep {
    const node = meta.workflow.nodes[task.node]!;
    switch (node.type) {
      case 'parallel':
        return node.steps.find((s) => s.id === task.step_id)!;
      case 'conditional':
        return node.branches.find((b) => b.step.id === task.step_id)!.step;
      case 'loop':
      case 'foreach':
        return node.step;
      default:
        return node;
    }
  }

  /**
   * The scopes the steps still to run may need: those of the current entry's open units (of its
   * one step, for a loop or foreach) and of every entry after it, each branch counted.
   */
  private neededScopes(meta: RunMeta): string[] {
    const [current, ...later] = meta.workflow.nodes.slice(meta.cursor);
    const open = new Set(this.tasks(`status NOT IN ('done', 'failed', 'canceled')`).map((t) => t.step_id));
    const steps = [
      ...(current ? leavesOf(current).filter((s) => current.type === 'loop' || current.type === 'foreach' || open.has(s.id)) : []),
      ...later.flatMap(leavesOf),
    ];
    return [...new Set(steps.map(stepScope).filter((scope) => scope !== null))];
  }

  /** Runs a unit for `actor`: the launcher as it stands now. */
  private async execute(meta: RunMeta, task: TaskRow, actor: Actor) {
    const step = this.step(meta, task);
    const input = parse(task.input);
    switch (step.type) {
      case 'mapping':
        return this.finishTask(task.key, this.mapping(meta, step, input));
      case 'sleep':
        return step.duration === 0 ? this.finishTask(task.key, input) : this.wait(task.key, 'sleep', now() + step.duration);
      case 'sleepUntil': {
        const at = Date.parse(step.date);
        return at <= now() ? this.finishTask(task.key, input) : this.wait(task.key, 'sleep', at);
      }
      case 'tool':
        if (step.toolId === 'human-input') {
          this.setTask(task.key, { status: 'suspended' });
          this.setResult(step.id, 'suspended', null);
          return this.refreshStatus(this.meta()!);
        }
        if (step.toolId !== 'execute-skill') {
          const output = await this.attempt(task.key, () => runInstantTool(this.db, this.env, actor, step.toolId, meta.runId));
          if (output !== undefined && this.task(task.key)?.status === 'running') this.finishTask(task.key, output);
          return;
        }
        return this.startExecution(meta, task, () => startSkill(this.db, this.env, actor, input));
      case 'agent':
        return this.startExecution(meta, task, () => startAgent(this.db, this.env, actor, step, input));
    }
  }

  /** Runs `fn`; a StepError fails (or, if retryable, delays) the task and answers undefined. */
  private async attempt<T>(key: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof StepError)) throw error;
      if (this.task(key)?.status !== 'running') return undefined;
      if (error.retryable) this.wait(key, 'capacity', now() + CAPACITY_WAIT_MS);
      else this.failTask(key, error.message);
      return undefined;
    }
  }

  private async startExecution(meta: RunMeta, task: TaskRow, start: () => Promise<{ executionId: string }>) {
    const started = await this.attempt(task.key, start);
    if (!started) return;
    if (this.task(task.key)?.status !== 'running') {
      // Canceled (or failed) while the execution was starting: it is not wanted.
      await stopExecution(this.env, this.db, meta.workspaceId, started.executionId);
      return;
    }
    this.setTask(task.key, { status: 'waiting', wait: 'execution', execution_id: started.executionId, due_at: now() + POLL_MS });
    // Where a client follows the execution: its status, and a signed stream URL to mint.
    this.record('workflow-step-execution', {
      stepId: task.step_id,
      unit: task.key,
      executionId: started.executionId,
      statusPath: `/api/v1/executions/${started.executionId}/status`,
      streamTokenPath: `/api/v1/executions/${started.executionId}/stream-token`,
    });
  }

  private async pollExecution(meta: RunMeta, task: TaskRow) {
    const check = await checkExecution(this.db, this.env, meta.workspaceId, task.execution_id!);
    if (this.task(task.key)?.status !== 'waiting') return;
    if (check.state === 'working') return this.setTask(task.key, { due_at: now() + POLL_MS });
    if (check.state === 'stopped') return this.failTask(task.key, check.reason);
    try {
      this.finishTask(task.key, executionOutput(this.step(meta, task) as LeafStep, check));
    } catch (error) {
      if (!(error instanceof StepError)) throw error;
      this.failTask(task.key, error.message);
    }
  }

  private wait(key: string, wait: WaitReason, dueAt: number) {
    this.setTask(key, { status: 'waiting', wait, due_at: dueAt });
  }

  /** A new dispatch of the unit: a later attempt, so a late duplicate of the old message is ignored. */
  private requeue(task: TaskRow) {
    this.setTask(task.key, { status: 'queued', attempt: task.attempt + 1, sent: 0, wait: null, due_at: null, execution_id: null });
  }

  /** A failed step: retried with backoff while `options.retries` allows (and `retry`), else the run fails. */
  private failTask(key: string, message: string, retry = true) {
    const meta = this.meta()!;
    const task = this.task(key);
    if (!task || !['running', 'waiting'].includes(task.status) || FINAL.includes(meta.status)) return;
    const step = this.step(meta, task);
    const retries = retry && step.type === 'tool' ? step.retries : 0;
    if (task.failures < retries) {
      this.setTask(key, {
        status: 'waiting',
        wait: 'backoff',
        failures: task.failures + 1,
        due_at: now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** task.failures),
      });
      return;
    }
    this.setTask(key, { status: 'failed' });
    this.setResult(task.step_id, 'failed', { error: message });
    this.record('workflow-step-finished', { stepId: task.step_id, unit: key, status: 'failed', error: message });
    const inflight = this.closeRun(meta, 'failed', `Step ${task.step_id} failed: ${message}`);
    this.ctx.waitUntil(this.stopAll(meta, inflight));
  }

  private mapping(meta: RunMeta, step: MappingStep, input: Json): Json {
    const scope = this.scope(meta, input);
    const context = { workspaceId: meta.workspaceId, userId: meta.actor.userId, runId: meta.runId, workflowId: meta.workflowId };
    const out: Record<string, Json> = {};
    for (const [name, source] of Object.entries(step.fields)) {
      let value: unknown;
      if (source.kind === 'value') value = source.value;
      else if (source.kind === 'template') value = fillTemplate(source.template, scope);
      else if (source.kind === 'requestContext') value = walk(context, segmentsOf(source.path));
      else if (source.kind === 'initData') value = walk(meta.initData, segmentsOf(source.path));
      else value = source.step in scope.stepResults ? walk(scope.stepResults[source.step], segmentsOf(source.path)) : undefined;
      // A missing source leaves the field out.
      if (!isMissing(value) && value !== undefined) out[name] = value as Json;
    }
    return out;
  }

  // ---- the graph ---------------------------------------------------------------------------

  /** Starts top-level entry `i` on `input`, or finishes the run after the last one. */
  private activate(meta: RunMeta, i: number, input: Json) {
    meta.cursor = i;
    meta.input = input;
    this.saveMeta(meta);
    const node = meta.workflow.nodes[i];
    if (!node) return this.closeRun(meta, 'success', undefined, input);
    switch (node.type) {
      case 'parallel':
        for (const child of node.steps) this.addTask(`${i}/${child.id}`, i, child.id, -1, input);
        return;
      case 'conditional': {
        const scope = this.scope(meta, input);
        const holding = node.branches.filter((b) => evaluate(b.predicate, scope));
        if (holding.length === 0) return this.completeNode(meta, i, {});
        for (const b of holding) this.addTask(`${i}/${b.step.id}`, i, b.step.id, -1, input);
        return;
      }
      case 'loop':
        this.addTask(`${i}#0`, i, node.step.id, 0, input);
        return;
      case 'foreach': {
        if (!Array.isArray(input)) {
          this.closeRun(meta, 'failed', `foreach ${node.id} needs an array as input, got ${input === null ? 'null' : typeof input}`);
          return;
        }
        const progress: ForeachProgress = { items: input, next: 0, done: 0, outputs: new Array(input.length).fill(null) };
        if (input.length === 0) return this.completeNode(meta, i, []);
        while (progress.next < Math.min(node.concurrency, input.length)) {
          this.addTask(`${i}[${progress.next}]`, i, node.step.id, progress.next, input[progress.next]!);
          progress.next++;
        }
        this.ctx.storage.kv.put(`foreach:${i}`, progress);
        return;
      }
      default:
        this.addTask(String(i), i, node.id, -1, input);
    }
  }

  /** Records a unit's output once, then moves its entry (and the run) on, all in one synchronous change. */
  private finishTask(key: string, output: Json) {
    const meta = this.meta()!;
    const task = this.task(key);
    if (!task || ['done', 'failed', 'canceled'].includes(task.status) || FINAL.includes(meta.status)) return;
    this.setTask(key, { status: 'done' });
    const node = meta.workflow.nodes[task.node]!;
    this.setResult(task.step_id, 'success', output);
    this.record('workflow-step-finished', { stepId: task.step_id, unit: key, status: 'success', summary: summaryOf(output) });
    switch (node.type) {
      case 'parallel':
      case 'conditional': {
        const open = this.tasks(`node = ? AND status != 'done'`, task.node);
        if (open.length > 0) return this.refreshStatus(meta);
        const outputs = this.outputs();
        const siblings = this.tasks(`node = ?`, task.node);
        return this.completeNode(meta, task.node, Object.fromEntries(siblings.map((s) => [s.step_id, outputs[s.step_id] ?? null])));
      }
      case 'loop': {
        const holds = evaluate(node.predicate, this.scope(meta, output));
        const again = node.loopType === 'dowhile' ? holds : !holds;
        if (!again) return this.completeNode(meta, task.node, output);
        const next = task.item + 1;
        if (next >= node.maxIterations) {
          const inflight = this.closeRun(meta, 'failed', `Loop ${node.id} reached its maxIterations (${node.maxIterations}) without its condition ending it`);
          return void this.ctx.waitUntil(this.stopAll(meta, inflight));
        }
        this.addTask(`${task.node}#${next}`, task.node, node.step.id, next, output);
        return;
      }
      case 'foreach': {
        const progress = this.ctx.storage.kv.get<ForeachProgress>(`foreach:${task.node}`)!;
        progress.outputs[task.item] = output;
        progress.done++;
        if (progress.next < progress.items.length) {
          this.addTask(`${task.node}[${progress.next}]`, task.node, node.step.id, progress.next, progress.items[progress.next]!);
          progress.next++;
        }
        this.ctx.storage.kv.put(`foreach:${task.node}`, progress);
        if (progress.done < progress.items.length) return;
        this.setResult(node.step.id, 'success', progress.outputs);
        return this.completeNode(meta, task.node, progress.outputs);
      }
      default:
        return this.completeNode(meta, task.node, output);
    }
  }

  private completeNode(meta: RunMeta, i: number, output: Json) {
    const node: GraphNode = meta.workflow.nodes[i]!;
    if (node.type === 'parallel' || node.type === 'conditional' || node.type === 'loop' || node.type === 'foreach') {
      this.setResult(node.id, 'success', output);
      this.record('workflow-step-finished', { stepId: node.id, unit: String(i), status: 'success', summary: summaryOf(output) });
    }
    this.activate(this.meta()!, i + 1, output);
  }

  /** Running while any unit is active; suspended when the only open units wait for human input. */
  private refreshStatus(meta: RunMeta) {
    if (FINAL.includes(meta.status)) return;
    const active = this.tasks(`status IN ('queued', 'running', 'waiting')`).length;
    const suspended = this.tasks(`status = 'suspended'`);
    const status = active === 0 && suspended.length > 0 ? 'suspended' : 'running';
    if (status !== meta.status) {
      meta.status = status;
      this.saveMeta(meta);
      if (status === 'suspended') {
        this.record('workflow-suspended', {
          steps: suspended.map((t) => {
            const step = this.step(meta, t);
            return { stepId: t.step_id, prompt: step.type === 'tool' ? (step.metadata.prompt ?? null) : null };
          }),
        });
        this.notify(
          meta,
          `Workflow ${meta.workflowId} is waiting for input at ${suspended.map((t) => t.step_id).join(', ')}; resume run ${meta.runId} to go on.`,
        );
      }
    }
  }

  /** A chat-started run reports into its thread; the message goes to D1 with the next run record write. */
  private notify(meta: RunMeta, text: string) {
    if (!meta.threadId) return;
    const kv = this.ctx.storage.kv;
    kv.put('notices', [...(kv.get<string[]>('notices') ?? []), text]);
  }

  /** Ends the run: open units are canceled; answers the executions they had started. */
  private closeRun(meta: RunMeta, status: 'success' | 'failed' | 'canceled', error?: string, result?: Json): string[] {
    const inflight = this.tasks(`status IN ('running', 'waiting') AND execution_id IS NOT NULL`).map((t) => t.execution_id!);
    this.ctx.storage.sql.exec(`UPDATE tasks SET status = 'canceled', updated_at = ? WHERE status NOT IN ('done', 'failed')`, now());
    const latest = this.meta()!;
    Object.assign(latest, { status, ...(error === undefined ? {} : { error }), ...(result === undefined ? {} : { result }) });
    this.saveMeta(latest);
    Object.assign(meta, latest);
    this.record('workflow-finished', { status, ...(error === undefined ? {} : { error }), ...(status === 'success' ? { summary: summaryOf(result) } : {}) });
    if (status === 'success') this.notify(latest, `Workflow ${latest.workflowId} finished (run ${latest.runId}).`);
    if (status === 'failed') this.notify(latest, `Workflow ${latest.workflowId} failed (run ${latest.runId}): ${error ?? 'unknown error'}`);
    return inflight;
  }

  private async stopAll(meta: RunMeta, executionIds: string[]) {
    for (const id of executionIds) {
      try {
        await stopExecution(this.env, this.db, meta.workspaceId, id);
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', runId: meta.runId, executionId: id, error: String(error) }));
      }
    }
  }

  // ---- after every change: outbox, D1, alarm ------------------------------------------------

  private async afterChange() {
    this.runPureSlice();
    await this.flushOutbox();
    await this.persist();
    await this.rearm();
  }

  private async flushOutbox() {
    const meta = this.meta();
    if (!meta || FINAL.includes(meta.status)) return;
    const unsent = this.tasks(`status = 'queued' AND sent = 0`);
    if (unsent.length === 0) return;
    try {
      await this.env.WORKFLOW_STEPS.sendBatch(unsent.map((t) => ({ body: { runId: meta.runId, key: t.key, attempt: t.attempt } satisfies StepMessage })));
    } catch (error) {
      // The rows stay unsent; the alarm tries again.
      console.error(JSON.stringify({ level: 'error', runId: meta.runId, error: `queue send failed: ${String(error)}` }));
      return;
    }
    for (const t of unsent) {
      if (this.task(t.key)?.attempt === t.attempt)
        this.ctx.storage.sql.exec(`UPDATE tasks SET sent = 1, updated_at = ? WHERE key = ? AND attempt = ?`, now(), t.key, t.attempt);
    }
  }

  private async rearm() {
    const meta = this.meta();
    const t = now();
    const kv = this.ctx.storage.kv;
    // A D1 write that failed is tried again in a second, even for a finished run.
    const unwritten = (kv.get<number>('rev') ?? 0) > (kv.get<number>('persisted') ?? 0) ? [t + OUTBOX_RETRY_MS] : [];
    if (!meta || FINAL.includes(meta.status)) {
      if (unwritten.length) return this.ctx.storage.setAlarm(Date.now() + OUTBOX_RETRY_MS);
      return this.ctx.storage.deleteAlarm();
    }
    const candidates = [
      ...unwritten,
      ...this.tasks(`status = 'waiting'`).map((task) => task.due_at ?? t),
      ...this.tasks(`status = 'queued'`).map((task) => (task.sent ? task.updated_at + REDELIVER_MS : t + OUTBOX_RETRY_MS)),
      ...this.tasks(`status = 'running'`).map((task) => task.updated_at + LEASE_MS),
    ];
    if (candidates.length === 0) return this.ctx.storage.deleteAlarm();
    // Due times are on the service clock; alarms run on the real one.
    await this.ctx.storage.setAlarm(Date.now() + Math.max(0, Math.min(...candidates) - t));
  }

  /** Queues a D1 write of the current state behind any write in flight. */
  private persist(): Promise<void> {
    this.persisting = this.persisting
      .then(() => this.writeD1())
      .catch((error) => console.error(JSON.stringify({ level: 'error', error: `run record write failed: ${String(error)}` })));
    return this.persisting;
  }

  /** Versioned upsert of the run record, plus the step results written since the last write. */
  private async writeD1() {
    const meta = this.meta();
    if (!meta) return;
    const kv = this.ctx.storage.kv;
    const rev = kv.get<number>('rev') ?? 0;
    const persisted = kv.get<number>('persisted') ?? 0;
    if (rev <= persisted) return;
    const results = this.ctx.storage.sql
      .exec<{ step_id: string; status: string; output: string | null; rev: number }>(`SELECT * FROM results ORDER BY rev`)
      .toArray();
    const open = this.tasks(`status IN ('queued', 'running', 'waiting', 'suspended')`);
    const resumes = kv.get<ResumeRecord[]>('resumes') ?? [];
    const snapshot = {
      status: meta.status,
      context: { input: meta.initData, ...Object.fromEntries(results.map((r) => [r.step_id, { status: r.status, output: parse(r.output) }])) },
      value: Object.fromEntries(open.map((t) => [t.step_id, t.status === 'suspended' ? 'suspended' : 'running'])),
      ...(meta.status === 'suspended' || open.some((t) => t.status === 'suspended') ? { suspended: this.suspendedFrames(meta, open) } : {}),
      ...(meta.result === undefined ? {} : { result: meta.result }),
      ...(meta.error === undefined ? {} : { error: meta.error }),
      ...(resumes.length === 0 ? {} : { resumes }),
    };
    const db = this.db;
    const t = now();
    const notices = meta.threadId ? (kv.get<string[]>('notices') ?? []) : [];
    const run = {
      runId: meta.runId,
      workspaceId: meta.workspaceId,
      workflowId: meta.workflowId,
      status: meta.status,
      resourceId: meta.actor.userId,
      snapshot: JSON.stringify(snapshot),
      version: rev,
      threadId: meta.threadId,
      createdAt: meta.createdAt,
      updatedAt: t,
    };
    await db.batch([
      db
        .insert(workflowRuns)
        .values(run)
        .onConflictDoUpdate({
          target: workflowRuns.runId,
          set: { status: run.status, snapshot: run.snapshot, version: run.version, updatedAt: t },
          setWhere: sql`${workflowRuns.version} < ${rev}`,
        }),
      ...results
        .filter((r) => r.rev > persisted)
        .map((r) =>
          db
            .insert(workflowStepResults)
            .values({ runId: meta.runId, stepId: r.step_id, status: r.status, output: r.output, updatedAt: t })
            .onConflictDoUpdate({ target: [workflowStepResults.runId, workflowStepResults.stepId], set: { status: r.status, output: r.output, updatedAt: t } }),
        ),
      ...notices.map((content) => db.insert(threadMessages).values({ threadId: meta.threadId!, role: 'assistant', content, createdAt: t })),
    ]);
    kv.put('persisted', Math.max(rev, kv.get<number>('persisted') ?? 0));
    // Notices raised while this write was in flight stay for the next one.
    if (notices.length) kv.put('notices', (kv.get<string[]>('notices') ?? []).slice(notices.length));
  }

  /** What a suspended step asks: `options.metadata.prompt` of its human-input entry. */
  private suspendedFrames(meta: RunMeta, open: TaskRow[]) {
    return Object.fromEntries(
      open
        .filter((t) => t.status === 'suspended')
        .map((t) => {
          const step = this.step(meta, t);
          return [t.step_id, { prompt: step.type === 'tool' ? (step.metadata.prompt ?? null) : null, metadata: step.type === 'tool' ? step.metadata : {} }];
        }),
    );
  }
}

/** Run state starts at the stateSchema's property defaults (rule 8: nothing writes it afterwards). */
function initialState(workflow: CompiledWorkflow): Json {
  const schema = workflow.stateSchema as { properties?: Record<string, { default?: Json }> } | null;
  const state: Record<string, Json> = {};
  for (const [key, property] of Object.entries(schema?.properties ?? {})) if (property.default !== undefined) state[key] = property.default;
  return state;
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
