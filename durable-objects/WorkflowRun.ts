import { DurableObject } from 'cloudflare:workers';
import { sql } from 'drizzle-orm';
import { directoryRoutedShardDb } from '../workers/services/directory-routed';
import { threadMessages } from '../schema/shard/traces';
import { workflowRuns, workflowStepResults } from '../schema/shard/workflows';
import type { Actor } from '../workers/auth/actor';
import { launcherNow } from '../workers/auth/launcher';
import { hasScope } from '../workers/auth/scopes';
import type { ShardDb, Env } from '../workers/env';
import type { Resumer } from '../workers/services/workflow-runs';
import { outboxInsert, sendWebhookEvents, webhookEvent } from '../workers/services/webhook-events';
import { queueWorkflowExport } from '../workers/services/telemetry-export';
import { stepTraceparent, type StepFacts, type WorkflowTraceSource } from '../workers/services/workflow-spans';
import { admitQueuedRun, oldestQueuedRuns } from '../workers/services/run-concurrency';
import type { WebhookEventType } from '../schema/shard/webhooks';
import { isoNow, now } from '../workers/lib/clock';
import { deleteWorkflowRunRow, expiryAlarmTime, expiryDecision, expiryFrom, postponed, type Expiry } from '../workers/services/object-expiry';
import type { CompiledWorkflow, Json, LeafStep, MappingStep } from '../workers/workflows/compiler';
import type { RerunOf, StartInput } from '../workers/workflows/run-start';
import {
  FINAL,
  initialRunState,
  initialWorkflowState,
  interpret,
  resume,
  stepOf,
  tasksIn,
  type Effect,
  type ForeachProgress,
  type Program,
  type RerunFrom,
  type ResumeOutcome,
  type RunEventType,
  type RunInput,
  type RunState,
  type Task,
  type TaskStatus,
  type Transition,
  type WaitReason,
} from '../workers/workflows/interpreter';
import { checkExecution, runInstantTool, startStep, stepKind, stepScope, stopExecution } from '../workers/runtime/step-tools';
import { StepError } from '../workers/workflows/steps';
import { RunNotices } from './run-notices';

export type { ResumeOutcome, RunEventType };

/** A resume as the run records it (`snapshot.resumes`). */
type ResumeRecord = { stepId: string; at: string; by: Resumer['by'] };

/** The queue message: "advance run R at step S" (`key` names the unit of work, `attempt` its dispatch). */
export interface StepMessage {
  runId: string;
  key: string;
  attempt: number;
}

/** A unit as the `tasks` table holds it. */
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

/** The run as kv `run` holds it: who launched it, its graph and data, and where the interpreter has it. */
interface RunMeta extends Pick<RunState, 'status' | 'cursor' | 'input' | 'result' | 'error' | 'resuming'> {
  runId: string;
  workspaceId: string;
  workflowId: string;
  actor: Actor;
  workflow: CompiledWorkflow;
  initData: Json;
  state: Json;
  threadId: string | null;
  rerunOf?: RerunOf;
  /** Its concurrency key (docs/workflows.md, Concurrency keys): the run starts `queued` and waits for a slot of it. */
  concurrencyKey?: string;
  /** The schedule that launched it, told when it ends. */
  scheduleId?: string;
  createdAt: number;
}

/** One logged change; `payload` is JSON text (an object). */
export interface RunEvent {
  seq: number;
  type: RunEventType;
  at: number;
  payload: string;
}

/** A webhook event of the run (it ended or suspended), kept with the change that made it until the D1 write puts it in the outbox. */
interface RunAnnouncement {
  /** The occurrence: the write that made it so. */
  key: string;
  type: WebhookEventType;
  status: RunState['status'];
  at: string;
}

/** The run as loaded: its record, what the interpreter runs it on, and its state. */
interface Loaded {
  meta: RunMeta;
  program: Program;
  state: RunState;
}

/** Events answered per read. */
const EVENTS_PAGE = 500;
/** A queued message no consumer took within this is sent again (a lost message or a crashed consumer). */
const REDELIVER_MS = 60_000;
/** A step marked running this long without an outcome was cut off (an eviction mid-step) and is queued again. */
const LEASE_MS = 120_000;
/** An unsent message (the queue refused it) is tried again after this. */
const OUTBOX_RETRY_MS = 1_000;
/**
 * Steps that only compute (a mapping, a sleep already due) run in the object as soon as they are
 * ready, without a queue message each; a slice ends after this many of them or this much time,
 * and what is left goes out as ordinary units, so one run cannot hold its object for long.
 */
const PURE_SLICE_STEPS = 64;
const PURE_SLICE_MS = 50;
const SCHEMA_VERSION = 1;
/**
 * A queued run asks for a slot again this often: the run that frees one wakes the oldest queued
 * runs of its key, and this covers a finisher that crashed before it could.
 */
const QUEUED_RECHECK_MS = 30_000;

const parse = (text: string | null): Json => (text === null ? null : (JSON.parse(text) as Json));

const taskOf = (r: TaskRow): Task => ({
  key: r.key,
  node: r.node,
  stepId: r.step_id,
  item: r.item,
  status: r.status,
  input: parse(r.input),
  attempt: r.attempt,
  sent: r.sent === 1,
  failures: r.failures,
  wait: r.wait,
  dueAt: r.due_at,
  executionId: r.execution_id,
  updatedAt: r.updated_at,
});

const programOf = (meta: RunMeta): Program => ({
  workflow: meta.workflow,
  initData: meta.initData,
  workflowState: meta.state,
  requestContext: { workspaceId: meta.workspaceId, userId: meta.actor.userId, runId: meta.runId, workflowId: meta.workflowId },
  kindOf: stepKind,
  scopeOf: stepScope,
});

/** The webhook event of each status a run may reach that someone waits to hear of. */
const RUN_WEBHOOK_EVENTS: Partial<Record<RunState['status'], WebhookEventType>> = {
  success: 'workflow_run.succeeded',
  failed: 'workflow_run.failed',
  suspended: 'workflow_run.suspended',
};

const stopsIn = (effects: Effect[]) => effects.flatMap((e) => (e.type === 'stop-executions' ? e.executionIds : []));

/**
 * One per workflow run, addressed by the run id: the only writer of the run's state. What the
 * graph means (which units exist, what each does, how the run moves on) is the interpreter's
 * (workers/workflows/interpreter.ts); this object keeps its state, hands it each input, writes
 * the transition and carries out the effects: tools, executions, polls, queue messages, alarms
 * and the D1 record.
 *
 * Storage (SQLite): `tasks` holds every unit of work, keyed `<entry>`, `<entry>/<childId>`,
 * `<entry>[<item>]` or `<entry>#<iteration>`, with its status, input, dispatch `attempt`, whether
 * its message was `sent`, retry `failures`, and what a waiting unit waits for (`wait`, `due_at`,
 * `execution_id`). `results` holds each step id's `{status, output}` with the `rev` it was
 * written at; kv holds the run (`run`), foreach progress (`foreach:<entry>`), who resumed
 * (`resumes`), thread notices not yet written (`notices`), webhook events of the run ending or
 * suspending not yet in the shard's outbox (`webhooks`), the write counter (`rev`) and how far
 * D1 has caught up (`persisted`). `events` is the run's change log, written in the same
 * synchronous step as the change it describes and read by the run stream. The state is read
 * again at every call, so it is what storage holds.
 *
 * Lifecycle: `start` writes the run and queues its first unit. A queue message calls `advance`,
 * which claims the unit if it is still queued under that attempt (a duplicate delivery finds it
 * taken and does nothing). Each transition is one synchronous storage change, so a result is
 * recorded once. Messages for new units are an outbox: queued units not `sent`, sent after the
 * change and re-sent by the alarm if the send or the object failed in between. The one alarm is
 * multiplexed: due sleeps, execution polls, retry backoffs, and the watchdog for lost messages
 * and cut-off steps. `cancel` is one storage change (run canceled, open units canceled, alarm
 * cleared) followed by interrupting the executions those units started. After each change the
 * run record and changed step results go to D1 by versioned upsert, one write at a time, with
 * the change's webhook events into the outbox (workers/services/webhook-events.ts), queued once
 * the write has landed: an event is kept with the change that made it, so none is lost.
 *
 * Followers: `fetch` answers a stream of change notices (run-notices.ts): the record's version
 * D1 holds, then each new version once its write has landed, until the run's last. The run
 * stream and MCP task follows (workers/services/run-follow.ts) read the record once per notice,
 * not on a timer; an eviction drops the streams, and followers read the record and open again.
 *
 * Expiry (docs/operations.md, Retention): once the run is final and D1 holds its last write, kv
 * `expiry` records when it ended and the alarm is armed for the end of the default window. When
 * it rings it reads the workspace's window: not yet past (lengthened), it is armed again; past,
 * the run's row is deleted, then this storage (`erase`). The hourly sweep deletes rows whose
 * window passed sooner (shortened) and erases their objects the same way, row first.
 */
export class WorkflowRun extends DurableObject<Env> {
  private persisting: Promise<void> = Promise.resolve();
  private run: Loaded | undefined;
  private readonly notices = new RunNotices();

  /** Whether this instance's storage has its tables: not after `erase`, until a call needs them again. */
  private hasSchema = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => this.createSchema());
  }

  private createSchema() {
    const s = this.ctx.storage.sql;
    s.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    s.exec(`CREATE TABLE IF NOT EXISTS tasks (
      key TEXT PRIMARY KEY, node INTEGER NOT NULL, step_id TEXT NOT NULL, item INTEGER NOT NULL,
      status TEXT NOT NULL, input TEXT NOT NULL, attempt INTEGER NOT NULL, sent INTEGER NOT NULL,
      failures INTEGER NOT NULL DEFAULT 0, wait TEXT, due_at INTEGER, execution_id TEXT, updated_at INTEGER NOT NULL)`);
    s.exec(`CREATE TABLE IF NOT EXISTS results (step_id TEXT PRIMARY KEY, status TEXT NOT NULL, output TEXT, rev INTEGER NOT NULL)`);
    s.exec(`CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, payload TEXT NOT NULL, at INTEGER NOT NULL)`);
    s.exec(`INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)`, String(SCHEMA_VERSION));
    this.hasSchema = true;
  }

  /** The object's SQL storage, its tables made again first if `erase` dropped them. */
  private get sql(): SqlStorage {
    if (!this.hasSchema) this.createSchema();
    return this.ctx.storage.sql;
  }

  /** The shard of the run's workspace, as the directory names it at each statement (the workspace may move while the run goes on). */
  private get db(): ShardDb {
    const { actor } = this.run!.meta;
    return directoryRoutedShardDb(this.env, actor.workspaceId, actor.shard);
  }

  // ---- state: loading it, and writing a transition ---------------------------------------------

  /** Reads the run from storage; every call starts here. */
  private load(): Loaded | undefined {
    const kv = this.ctx.storage.kv;
    const meta = kv.get<RunMeta>('run');
    if (!meta) return (this.run = undefined);
    const s = this.sql;
    const tasks = s.exec<TaskRow>(`SELECT * FROM tasks`).toArray().map(taskOf);
    const results = s
      .exec<{ step_id: string; status: RunState['results'][string]['status']; output: string | null }>(`SELECT step_id, status, output FROM results`)
      .toArray();
    const foreach = [...kv.list<ForeachProgress>({ prefix: 'foreach:' })].map(([key, progress]) => [Number(key.slice('foreach:'.length)), progress]);
    const state: RunState = {
      status: meta.status,
      cursor: meta.cursor,
      input: meta.input,
      ...(meta.result === undefined ? {} : { result: meta.result }),
      ...(meta.error === undefined ? {} : { error: meta.error }),
      resuming: meta.resuming,
      tasks: Object.fromEntries(tasks.map((t) => [t.key, t])),
      results: Object.fromEntries(results.map((r) => [r.step_id, { status: r.status, output: parse(r.output) }])),
      foreach: Object.fromEntries(foreach),
    };
    return (this.run = { meta, program: programOf(meta), state });
  }

  private bump(): number {
    const rev = (this.ctx.storage.kv.get<number>('rev') ?? 0) + 1;
    this.ctx.storage.kv.put('rev', rev);
    return rev;
  }

  /** Writes a transition (what changed, its log lines and notices) as one storage change; answers the effects left to carry out. */
  private commit({ state, effects }: Transition): Effect[] {
    const run = this.run!;
    const before = run.state;
    const s = this.sql;
    const kv = this.ctx.storage.kv;
    this.ctx.storage.transactionSync(() => {
      if (state !== before) {
        const rev = this.bump();
        const { status, cursor, input, result, error, resuming } = state;
        Object.assign(run.meta, { status, cursor, input, resuming }, result === undefined ? {} : { result }, error === undefined ? {} : { error });
        kv.put('run', run.meta);
        const announced = status !== before.status ? RUN_WEBHOOK_EVENTS[status] : undefined;
        if (announced) {
          const announcement: RunAnnouncement = { key: `workflow_run:${run.meta.runId}:${rev}`, type: announced, status, at: isoNow() };
          kv.put('webhooks', [...(kv.get<RunAnnouncement[]>('webhooks') ?? []), announcement]);
        }
        for (const t of Object.values(state.tasks)) {
          if (before.tasks[t.key] === t) continue;
          s.exec(
            `INSERT OR REPLACE INTO tasks (key, node, step_id, item, status, input, attempt, sent, failures, wait, due_at, execution_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            t.key,
            t.node,
            t.stepId,
            t.item,
            t.status,
            JSON.stringify(t.input),
            t.attempt,
            t.sent ? 1 : 0,
            t.failures,
            t.wait,
            t.dueAt,
            t.executionId,
            t.updatedAt,
          );
        }
        for (const [stepId, r] of Object.entries(state.results)) {
          if (before.results[stepId] === r) continue;
          s.exec(
            `INSERT INTO results (step_id, status, output, rev) VALUES (?, ?, ?, ?) ON CONFLICT(step_id) DO UPDATE SET status = excluded.status, output = excluded.output, rev = excluded.rev`,
            stepId,
            r.status,
            JSON.stringify(r.output),
            rev,
          );
        }
        for (const [node, progress] of Object.entries(state.foreach)) if (before.foreach[Number(node)] !== progress) kv.put(`foreach:${node}`, progress);
      }
      for (const e of effects) {
        if (e.type === 'event') s.exec(`INSERT INTO events (type, payload, at) VALUES (?, ?, ?)`, e.event, JSON.stringify(e.payload), now());
        // A chat-started run reports into its thread; the message goes to D1 with the next run record write.
        if (e.type === 'notify' && run.meta.threadId) kv.put('notices', [...(kv.get<string[]>('notices') ?? []), e.text]);
      }
    });
    run.state = state;
    if (state.status !== before.status) {
      if (FINAL.includes(state.status)) {
        this.ctx.waitUntil(this.unwatchLauncher());
        if (run.meta.concurrencyKey !== undefined || run.meta.scheduleId !== undefined) this.ctx.waitUntil(this.tellEnded());
        const { runId, workspaceId, actor } = run.meta;
        this.ctx.waitUntil(queueWorkflowExport(this.db, this.env, { workspaceId, shard: actor.shard, runId, traceparent: actor.origin.traceparent ?? null }));
      }
    }
    return effects.filter((e) => e.type !== 'event' && e.type !== 'notify');
  }

  private apply(input: RunInput): Effect[] {
    const run = this.run!;
    return this.commit(interpret(run.program, run.state, input, now()));
  }

  /** Whether `input` changed the run. */
  private changes(input: RunInput): { changed: boolean; effects: Effect[] } {
    const before = this.run!.state;
    const effects = this.apply(input);
    return { changed: this.run!.state !== before, effects };
  }

  private get final(): boolean {
    return !this.run || FINAL.includes(this.run.state.status);
  }

  // ---- the RPC surface ---------------------------------------------------------------------

  /** The change log after `afterSeq`, oldest first. */
  events(afterSeq = 0): RunEvent[] {
    return this.sql
      .exec<{ seq: number; type: RunEventType; payload: string; at: number }>(
        `SELECT seq, type, payload, at FROM events WHERE seq > ? ORDER BY seq LIMIT ?`,
        afterSeq,
        EVENTS_PAGE,
      )
      .toArray();
  }

  /**
   * The run's change notices (run-notices.ts): the version D1 holds of its record now, if newer
   * than `after` (query), then each version as its write lands, until the run's last. 204 when the
   * run has ended and D1 holds nothing newer, or there is no run.
   */
  override async fetch(request: Request): Promise<Response> {
    const after = Number(new URL(request.url).searchParams.get('after') ?? 0);
    const kv = this.ctx.storage.kv;
    const meta = kv.get<RunMeta>('run');
    const persisted = kv.get<number>('persisted') ?? 0;
    const ended = !meta || (FINAL.includes(meta.status) && persisted >= (kv.get<number>('rev') ?? 0));
    return this.notices.open(Number.isSafeInteger(after) ? after : 0, meta ? persisted : 0, ended, request.signal);
  }

  /** What the run's trace is built from (workers/services/workflow-spans.ts): the run, its graph's steps and its whole change log. */
  traceSource(): WorkflowTraceSource | null {
    const run = this.load();
    if (!run) return null;
    const { meta } = run;
    const facts = (step: LeafStep | MappingStep): StepFacts => ({ id: step.id, type: step.type, ...(step.type === 'tool' ? { toolId: step.toolId } : {}) });
    return {
      runId: meta.runId,
      workspaceId: meta.workspaceId,
      workflowId: meta.workflowId,
      status: meta.status,
      error: meta.error ?? null,
      createdAt: meta.createdAt,
      nodes: meta.workflow.nodes.map((node) => {
        const inner =
          node.type === 'parallel' ? node.steps : node.type === 'conditional' ? node.branches.map((b) => b.step) : 'step' in node ? [node.step] : [];
        return { id: node.id, type: node.type, inner: inner.map(facts) };
      }),
      events: this.sql.exec<{ type: RunEventType; at: number; payload: string }>(`SELECT type, at, payload FROM events ORDER BY seq`).toArray(),
    };
  }

  /**
   * Writes the new run (status running), queues its first entry, and waits until D1 shows it. A
   * run with a concurrency key is written `queued` first and starts only once admitted to a slot.
   */
  async start(input: StartInput): Promise<void> {
    if (this.load()) return;
    await this.watchLauncher(input.actor.userId, input.runId);
    const queued = typeof input.concurrencyKey === 'string';
    const workflow = JSON.parse(input.workflow) as CompiledWorkflow;
    const initData = JSON.parse(input.initData) as Json;
    const meta: RunMeta = {
      runId: input.runId,
      workspaceId: input.workspaceId,
      workflowId: input.workflowId,
      actor: input.actor,
      workflow,
      initData,
      state: initialWorkflowState(workflow),
      threadId: input.threadId ?? null,
      ...(input.rerunOf ? { rerunOf: input.rerunOf } : {}),
      ...(queued ? { concurrencyKey: input.concurrencyKey! } : {}),
      ...(input.scheduleId ? { scheduleId: input.scheduleId } : {}),
      status: queued ? 'queued' : 'running',
      cursor: 0,
      input: initData,
      resuming: false,
      createdAt: now(),
    };
    const program = programOf(meta);
    this.run = { meta, program, state: initialRunState(program) };
    if (queued) {
      this.ctx.storage.transactionSync(() => {
        this.ctx.storage.kv.put('run', meta);
        this.bump();
      });
      this.run.state = { ...this.run.state, status: 'queued' };
      return this.admitIfFree();
    }
    this.inBackground(this.apply({ type: 'start', ...(input.from ? { from: JSON.parse(input.from) as RerunFrom } : {}) }));
    await this.afterChange();
  }

  /** A slot of this queued run's key may have freed (the run that held it finished): it asks for it. */
  async admitQueued(): Promise<void> {
    if (this.load()?.meta.status === 'queued') await this.admitIfFree();
  }

  /**
   * A queued run's D1 row asks for a slot of its key (run-concurrency.ts); admitted, the run
   * starts as a launch would. Not admitted, or its row not yet written, its alarm asks again.
   */
  private async admitIfFree(): Promise<void> {
    const { meta } = this.run!;
    await this.persist();
    const admitted = !this.unwritten && (await admitQueuedRun(this.db, meta.runId, meta.workflow.concurrency?.limit ?? 1));
    const run = this.load();
    if (!run || run.meta.status !== 'queued') return;
    if (!admitted) return this.rearm();
    this.commit({ state: { ...run.state, status: 'running' }, effects: [] });
    this.inBackground(this.apply({ type: 'start' }));
    await this.afterChange();
  }

  /**
   * This run ended: once D1 shows it, the oldest queued runs of its key are asked to take the
   * slot, and the schedule that launched it hears (its fire waiting behind this run starts).
   */
  private async tellEnded(): Promise<void> {
    const { meta } = this.run!;
    await this.persist();
    // Unwritten, the run still looks unfinished; the queued runs' and the schedule's alarms look again.
    if (this.unwritten) return;
    if (meta.scheduleId !== undefined) {
      try {
        await this.env.WORKFLOW_SCHEDULE.getByName(meta.scheduleId).runEnded();
      } catch (error) {
        console.error(
          JSON.stringify({ level: 'error', runId: meta.runId, scheduleId: meta.scheduleId, error: `telling the schedule failed: ${String(error)}` }),
        );
      }
    }
    if (meta.concurrencyKey === undefined) return;
    const next = await oldestQueuedRuns(
      this.db,
      { workspaceId: meta.workspaceId, workflowId: meta.workflowId, concurrencyKey: meta.concurrencyKey },
      meta.workflow.concurrency?.limit ?? 1,
    );
    for (const runId of next) {
      try {
        await this.env.WORKFLOW_RUN.getByName(runId).admitQueued();
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', runId: meta.runId, queuedRunId: runId, error: `waking a queued run failed: ${String(error)}` }));
      }
    }
  }

  /** A queue message: runs the unit if it is still queued under this attempt; anything else is a duplicate or stale. */
  async advance(key: string, attempt: number): Promise<'ran' | 'ignored'> {
    if (!this.load()) return 'ignored';
    if (!this.changes({ type: 'claim', key, attempt }).changed) return 'ignored';
    try {
      // The launcher as it is now: a credential revoked since launch (or since the last step) stops the run here.
      const launcher = await launcherNow(this.env, this.run!.meta.actor);
      if (launcher.ok) await this.carryOut(this.apply({ type: 'execute', key }), launcher.actor);
      else this.inBackground(this.apply({ type: 'failed', key, message: launcher.reason, retry: false }));
    } catch (error) {
      // An unexpected fault (not a StepError) fails the step like any other.
      this.inBackground(this.apply({ type: 'failed', key, message: error instanceof Error ? error.message : String(error), retry: true }));
    }
    this.runPureSlice();
    // The next unit's message goes out first; the D1 write and the alarm follow without holding
    // the consumer, so the queue can deliver the next step while the record is written.
    await this.flushOutbox();
    this.ctx.waitUntil(this.persist().then(() => this.rearm()));
    return 'ran';
  }

  /** Takes the resume data as the suspended step's output (the interpreter judges it); records who resumed. */
  async resume(stepId: string | null, resumeData: string, resumer: Resumer): Promise<ResumeOutcome> {
    const run = this.load();
    if (!run) return { kind: 'no_frame' };
    const holds = (scope: string) => hasScope(resumer.scopes, scope);
    const taken = resume(run.program, run.state, { stepId, data: JSON.parse(resumeData) as Json, holds, by: resumer.by }, now());
    if (taken.outcome.kind !== 'resumed') return taken.outcome;
    // Racing resumes: `resuming` and the status change are one synchronous step, so the next caller sees them.
    const kv = this.ctx.storage.kv;
    kv.put('resumes', [...(kv.get<ResumeRecord[]>('resumes') ?? []), { stepId: taken.outcome.stepId, at: isoNow(), by: resumer.by }]);
    this.inBackground(this.commit(taken));
    try {
      await this.afterChange();
    } finally {
      this.apply({ type: 'resume-settled' });
    }
    await this.persist();
    return taken.outcome;
  }

  /** An execution a step started has ended (its object says so): the step is checked now instead of at its next poll. */
  async executionEnded(executionId: string): Promise<void> {
    if (!this.load() || this.final) return;
    const waiting = tasksIn(this.run!.state, 'waiting').filter((t) => t.wait === 'execution' && t.executionId === executionId);
    if (waiting.length === 0) return;
    for (const task of waiting) await this.poll(task.key, executionId);
    await this.afterChange();
  }

  /** One storage change: the run, its open units and its timers; then the in-flight executions are interrupted. */
  async cancel(): Promise<{ canceled: boolean; status: string }> {
    const run = this.load();
    if (!run) return { canceled: false, status: 'missing' };
    if (this.final) return { canceled: false, status: run.state.status };
    const inflight = stopsIn(this.apply({ type: 'cancel' }));
    await this.persist();
    // Clears the alarm (pending sleeps and polls were canceled with their units above).
    await this.rearm();
    await this.stopAll(inflight);
    return { canceled: true, status: 'canceled' };
  }

  /**
   * The launcher's credentials changed (its CredentialGate says so, docs/auth.md): read again,
   * a launcher that no longer holds fails the run now, whatever it waits for (input, a sleep, a
   * retry, an execution, a concurrency slot), its open step failing with the reason. Answers
   * whether the run is still going, so the gate stops telling one that has ended.
   */
  async launcherChanged(): Promise<'going' | 'ended'> {
    if (!this.load() || this.final) return 'ended';
    const launcher = await launcherNow(this.env, this.run!.meta.actor);
    if (launcher.ok || this.final) return this.final ? 'ended' : 'going';
    const inflight = stopsIn(this.apply({ type: 'launcher-gone', message: launcher.reason }));
    await this.persist();
    await this.rearm();
    await this.stopAll(inflight);
    return 'ended';
  }

  /**
   * Asks the launcher's CredentialGate to tell this run of changes to their credentials until it
   * ends. Not reached, the run still stops at its next step for a launcher that no longer holds.
   */
  private async watchLauncher(userId: string, runId: string) {
    try {
      await this.env.CREDENTIAL_GATE.getByName(userId).watchRun(runId);
    } catch (error) {
      console.error(JSON.stringify({ level: 'error', runId, error: `watching the launcher failed: ${String(error)}` }));
    }
  }

  private async unwatchLauncher() {
    const { runId, actor } = this.run!.meta;
    try {
      await this.env.CREDENTIAL_GATE.getByName(actor.userId).unwatchRun(runId);
    } catch (error) {
      // The gate drops it when it next tells the run, which answers that it ended.
      console.error(JSON.stringify({ level: 'error', runId, error: `unwatching the launcher failed: ${String(error)}` }));
    }
  }

  /** The alarm: due sleeps, execution polls, backoffs, and the watchdog for lost messages and cut-off steps. */
  override async alarm(): Promise<void> {
    if (!this.load()) return;
    if (this.run!.meta.status === 'queued') return this.admitIfFree();
    if (this.final) {
      // A D1 write that failed, or the end of the run's retention window, brings a finished run's alarm back.
      await this.persist();
      if (!this.unwritten && (await this.expireIfDue())) return;
      return this.rearm();
    }
    const t = now();
    for (const task of tasksIn(this.run!.state, 'waiting').filter((w) => w.dueAt !== null && w.dueAt <= t)) {
      if (this.final) break;
      await this.carryOut(this.apply({ type: 'timer', key: task.key }));
    }
    const lapsed = [
      ...tasksIn(this.run!.state, 'queued').filter((q) => q.sent && q.updatedAt <= t - REDELIVER_MS),
      ...tasksIn(this.run!.state, 'running').filter((r) => r.updatedAt <= t - LEASE_MS),
    ];
    for (const task of lapsed) this.apply({ type: 'requeue', key: task.key });
    await this.afterChange();
  }

  // ---- effects -------------------------------------------------------------------------------

  /** Carries out effects in order; a tool or an execution acts for `actor`, the launcher as it stands now. */
  private async carryOut(effects: Effect[], actor?: Actor) {
    for (const effect of effects) {
      switch (effect.type) {
        case 'run-tool': {
          const output = await this.attempt(effect.key, () => runInstantTool(this.db, this.env, actor!, effect.toolId, this.run!.meta.runId));
          if (output !== undefined) this.inBackground(this.apply({ type: 'answered', key: effect.key, output }));
          break;
        }
        case 'start-execution': {
          // The execution's trace hangs under its step's span (workers/services/workflow-spans.ts).
          const { runId, actor: launcher } = this.run!.meta;
          const traceparent = await stepTraceparent(runId, launcher.origin.traceparent ?? null, effect.key);
          const stepActor: Actor = { ...actor!, origin: { ...actor!.origin, traceparent } };
          const started = await this.attempt(effect.key, () => startStep(this.db, this.env, stepActor, effect.step, effect.input, runId));
          // Canceled (or failed) while the execution was starting, it is stopped before going on.
          if (started) await this.stopAll(stopsIn(this.apply({ type: 'execution-started', key: effect.key, executionId: started.executionId })));
          break;
        }
        case 'poll':
          await this.poll(effect.key, effect.executionId);
          break;
        case 'stop-executions':
          this.ctx.waitUntil(this.stopAll(effect.executionIds));
          break;
      }
    }
  }

  /** Effects of a change made in passing: only stopping executions can come of it, which goes on in the background. */
  private inBackground(effects: Effect[]) {
    const stops = stopsIn(effects);
    if (stops.length) this.ctx.waitUntil(this.stopAll(stops));
  }

  /** Runs `fn`; a StepError is the unit's refusal (retryable ones wait for capacity), and answers undefined. */
  private async attempt<T>(key: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof StepError)) throw error;
      this.inBackground(this.apply({ type: 'refused', key, message: error.message, retryable: error.retryable }));
      return undefined;
    }
  }

  private async poll(key: string, executionId: string) {
    const check = await checkExecution(this.db, this.env, this.run!.meta.workspaceId, executionId);
    this.inBackground(this.apply({ type: 'execution-checked', key, check }));
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
      if (!this.run) return;
      const { changed, effects } = this.changes({ type: 'run-pure' });
      this.inBackground(effects);
      if (!changed) return;
    }
  }

  private async stopAll(executionIds: string[]) {
    for (const id of executionIds) {
      try {
        await stopExecution(this.env, this.db, this.run!.meta.workspaceId, id);
      } catch (error) {
        console.error(JSON.stringify({ level: 'error', runId: this.run!.meta.runId, executionId: id, error: String(error) }));
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
    if (this.final) return;
    const { meta, state } = this.run!;
    const unsent = tasksIn(state, 'queued').filter((t) => !t.sent);
    if (unsent.length === 0) return;
    try {
      await this.env.WORKFLOW_STEPS.sendBatch(unsent.map((t) => ({ body: { runId: meta.runId, key: t.key, attempt: t.attempt } satisfies StepMessage })));
    } catch (error) {
      // The units stay unsent; the alarm tries again.
      console.error(JSON.stringify({ level: 'error', runId: meta.runId, error: `queue send failed: ${String(error)}` }));
      return;
    }
    this.apply({ type: 'sent', units: unsent.map((t) => ({ key: t.key, attempt: t.attempt })) });
  }

  /** Whether a change is not yet in D1 (a write failed or is under way). */
  private get unwritten(): boolean {
    const kv = this.ctx.storage.kv;
    return (kv.get<number>('rev') ?? 0) > (kv.get<number>('persisted') ?? 0);
  }

  private async rearm() {
    const t = now();
    // A D1 write that failed is tried again in a second, even for a finished run.
    const unwritten = this.unwritten ? [t + OUTBOX_RETRY_MS] : [];
    if (this.final) {
      if (unwritten.length) return this.ctx.storage.setAlarm(Date.now() + OUTBOX_RETRY_MS);
      return this.armExpiry();
    }
    const { state } = this.run!;
    const candidates = [
      ...unwritten,
      ...(state.status === 'queued' ? [t + QUEUED_RECHECK_MS] : []),
      ...tasksIn(state, 'waiting').map((task) => task.dueAt ?? t),
      ...tasksIn(state, 'queued').map((task) => (task.sent ? task.updatedAt + REDELIVER_MS : t + OUTBOX_RETRY_MS)),
      ...tasksIn(state, 'running').map((task) => task.updatedAt + LEASE_MS),
    ];
    if (candidates.length === 0) return this.ctx.storage.deleteAlarm();
    // Due times are on the service clock; alarms run on the real one.
    await this.ctx.storage.setAlarm(Date.now() + Math.max(0, Math.min(...candidates) - t));
  }

  // ---- expiry --------------------------------------------------------------------------------

  /** A finished run whose last write D1 holds: the alarm rings at the end of its retention window (the first time, from now). */
  private armExpiry() {
    const kv = this.ctx.storage.kv;
    const expiry = kv.get<Expiry>('expiry') ?? expiryFrom('workflowRuns');
    kv.put('expiry', expiry);
    return this.ctx.storage.setAlarm(expiryAlarmTime(expiry));
  }

  /**
   * Past the workspace's window: the run's row goes, then this storage; answers whether it did.
   * A window lengthened since (or a row that could not go yet) is recorded, for `rearm` to arm
   * the alarm from.
   */
  private async expireIfDue(): Promise<boolean> {
    const kv = this.ctx.storage.kv;
    const expiry = kv.get<Expiry>('expiry');
    if (!expiry) return false;
    const { meta } = this.run!;
    const decision = await expiryDecision(this.db, meta.actor.workspaceId, 'workflowRuns', expiry);
    if (decision !== 'expire') {
      kv.put('expiry', decision.wait);
      return false;
    }
    if (!(await deleteWorkflowRunRow(this.db, meta.runId))) {
      kv.put('expiry', postponed(expiry));
      return false;
    }
    await this.erase();
    return true;
  }

  /**
   * Erases this run's storage: its state, step results, change log, expiry and alarm. For
   * retention and a workspace's deletion (workspace-erasure.ts, after the run was canceled), once its row is gone (so no reader finds a row
   * whose object is empty) and the run is final. A D1 write under way lands first, so none is
   * made after; a call after it finds no run.
   */
  async erase(): Promise<void> {
    await this.persisting;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.hasSchema = false;
    this.run = undefined;
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
    const kv = this.ctx.storage.kv;
    const meta = kv.get<RunMeta>('run');
    if (!meta) return;
    const rev = kv.get<number>('rev') ?? 0;
    const persisted = kv.get<number>('persisted') ?? 0;
    if (rev <= persisted) return;
    const results = this.sql.exec<{ step_id: string; status: string; output: string | null; rev: number }>(`SELECT * FROM results ORDER BY rev`).toArray();
    const open = this.sql.exec<TaskRow>(`SELECT * FROM tasks WHERE status IN ('queued', 'running', 'waiting', 'suspended') ORDER BY node, item, key`).toArray();
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
    const announcements = kv.get<RunAnnouncement[]>('webhooks') ?? [];
    const { runId, workflowId, workspaceId } = meta;
    const events = await Promise.all(announcements.map((a) => webhookEvent(workspaceId, a.key, a.type, { runId, workflowId, status: a.status }, a.at)));
    const run = {
      runId: meta.runId,
      workspaceId: meta.workspaceId,
      workflowId: meta.workflowId,
      status: meta.status,
      resourceId: meta.actor.userId,
      snapshot: JSON.stringify(snapshot),
      version: rev,
      threadId: meta.threadId,
      rerunOf: meta.rerunOf?.runId ?? null,
      rerunFromStep: meta.rerunOf?.fromStep ?? null,
      concurrencyKey: meta.concurrencyKey ?? null,
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
      ...events.map((event) => outboxInsert(db, event)),
    ]);
    kv.put('persisted', Math.max(rev, kv.get<number>('persisted') ?? 0));
    this.notices.send(rev, FINAL.includes(meta.status));
    // Notices raised while this write was in flight stay for the next one.
    if (notices.length) kv.put('notices', (kv.get<string[]>('notices') ?? []).slice(notices.length));
    if (events.length) {
      kv.put('webhooks', (kv.get<RunAnnouncement[]>('webhooks') ?? []).slice(events.length));
      this.ctx.waitUntil(sendWebhookEvents(db, this.env, meta.actor.shard, events));
    }
  }

  /** What a suspended step asks: `options.metadata.prompt` of its input step. */
  private suspendedFrames(meta: RunMeta, open: TaskRow[]) {
    return Object.fromEntries(
      open
        .filter((t) => t.status === 'suspended')
        .map((t) => {
          const step = stepOf(meta.workflow, { node: t.node, stepId: t.step_id });
          return [t.step_id, { prompt: step.type === 'tool' ? (step.metadata.prompt ?? null) : null, metadata: step.type === 'tool' ? step.metadata : {} }];
        }),
    );
  }
}
