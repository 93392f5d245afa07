import { DurableObject } from 'cloudflare:workers';
import { directoryRoutedShardDb } from '../workers/services/directory-routed';
import type { Env, ShardDb } from '../workers/env';
import type {
  ExecutionEvent,
  JsonObject,
  NewExecutionEvent,
  SealedTurnKeys,
  StartTurnAnswer,
  TurnEnding,
  TurnInput,
  TurnOutcome,
} from '../workers/services/execution-events';
import { now, sleep } from '../workers/lib/clock';
import { runAgentTurn, type TurnHooks, type TurnProgress } from '../workers/runtime/agent-turn';
import type { ModelMessage } from '../workers/runtime/provider';
import type { StoredArtifact } from '../workers/services/execution-runs';
import { announceRunStarted, settleTurn, type SettleHooks } from '../workers/services/execution-lifecycle';
import { deleteExecutionRow, expiryAlarmTime, expiryDecision, expiryFrom, postponed, type Expiry } from '../workers/services/object-expiry';
import { queueRunExport } from '../workers/services/telemetry-export';
import { HeldDeltas } from './held-deltas';
import { isEnd, LogStreams, type StoredEvent } from './log-streams';

/** A turn in progress, persisted so the heartbeat can resume it after an eviction. */
interface RunningTurn {
  input: TurnInput;
  startedAt: number;
}

/**
 * The turn's progress after its last completed model request (and tool calls). Once the agent
 * loop has ended, `ended` holds its outcome and `closing` marks that its closing batch may have
 * been sent, so a turn cut off while finishing is settled, not run again.
 */
interface Checkpoint extends TurnProgress {
  turnKey: string;
  /** The last event seq at this checkpoint: events after it belong to work a resume does again. */
  seq?: number;
  ended?: TurnEnding;
  /** Once the closing batch may have been sent: the output it carries (stored in R2 once), so a resume sends the same. */
  closing?: { output: StoredArtifact | null };
}

/** Whose execution this is, kept with its expiry: the alarm deletes the execution's row before this storage. */
interface ExecutionExpiry extends Expiry {
  executionId: number;
  workspaceId: string;
  shard: number;
}

/** How often the alarm checks that a turn is still running. */
const HEARTBEAT_MS = 30_000;
const SCHEMA_VERSION = 2;

/**
 * One per execution, addressed by its id (`exec_<n>`). It owns the execution's event log.
 *
 * Storage (SQLite): `events(seq INTEGER PRIMARY KEY, type, payload JSON, at)` is append-only;
 * `meta(key, value)` holds `schema_version`. `seq` starts at 1 and has no gaps.
 * `turns(turn_key PRIMARY KEY, state, seq, at)` records every turn key this object took
 * (`started`, with the seq of its `user.message`) or refused for good (`abandoned`, with the seq
 * of the `session.status_idle` that closed it, once it is settled): the run
 * lifecycle (workers/services/execution-lifecycle.ts) asks it whether a claimed turn ever started.
 *
 * Runs: `startTurn` records the user's message and `session.status_running`, then runs the
 * agent turn (workers/runtime/agent-turn.ts) in the background (`ctx.waitUntil`); `interrupt`
 * records the intent in storage (`interrupt` key), which the turn asks between model events. The
 * conversation is kept under the `messages` key for later turns; the turn in progress under
 * `turn`, which an alarm heartbeat uses to resume a run that an eviction or restart cut off,
 * from `checkpoint` (the turn's progress after each model request and its tool calls, then its
 * outcome and whether its closing batch may have been sent), so a resumed turn neither calls a
 * tool twice nor charges twice. An ended turn is settled by the run lifecycle (`settleTurn`:
 * output, charge, the execution's record and trace), which then closes the log here.
 *
 * Streaming: `fetch` answers Server-Sent Events (log-streams.ts): every event after `lastSeq`
 * (query) or `Last-Event-ID` (header), then live ones, ending after `session.status_idle`; with
 * nothing newer than a log that already ended, the answer is 204.
 *
 * Expiry (docs/operations.md, Retention): when a turn's log closes, `expiry` records whose
 * execution this is and when it ended, and the one alarm (the heartbeat's while a turn runs) is
 * armed for the end of the default window. When it rings it reads the workspace's window: not yet
 * past (lengthened), it is armed again; past, the execution's row is deleted, then this storage
 * (`erase`). The hourly sweep deletes rows whose window passed sooner (shortened) and erases
 * their objects the same way, row first.
 */
export class ExecutionSession extends DurableObject<Env> {
  /** Whether a turn is running in this instance (memory: false again after an eviction). */
  private running = false;
  /** The turn running in this instance, settled when it ends (so an interrupt can wait for it). */
  private current: Promise<void> | undefined;
  private readonly streams = new LogStreams();
  /** The last event's seq, read from storage once per instance: every event is appended here. */
  private seq: number | undefined;
  private readonly deltas = new HeldDeltas((events) => this.write(events));
  /** The `interrupt` key as this instance last wrote or read it: the loop asks between model events, and a storage read each time was a third of an event's cost. */
  private interrupted = false;

  /** Whether this instance's storage has its tables: not after `erase`, until a call needs them again. */
  private hasSchema = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => this.createSchema());
  }

  private createSchema() {
    const sql = this.ctx.storage.sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL, at INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS turns (turn_key TEXT PRIMARY KEY, state TEXT NOT NULL, seq INTEGER, at INTEGER NOT NULL)`);
    sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)`, String(SCHEMA_VERSION));
    this.hasSchema = true;
  }

  /** The object's SQL storage, its tables made again first if `erase` dropped them. */
  private get sql(): SqlStorage {
    if (!this.hasSchema) this.createSchema();
    return this.ctx.storage.sql;
  }

  /** Appends events in order (after any held text deltas), returns them with their sequence numbers, and sends them to subscribers. */
  append(events: NewExecutionEvent[]): ExecutionEvent[] {
    const held = this.deltas.take();
    return this.write([...held, ...events]).slice(held.length);
  }

  /** The agent turn's events: text deltas that come fast are held to share a commit, anything else is appended at once. */
  private emit(events: NewExecutionEvent[]) {
    if (events.every((event) => event.type === 'agent.message')) this.deltas.hold(events);
    else this.append(events);
  }

  private write(events: NewExecutionEvent[]): ExecutionEvent[] {
    const last = this.lastSeq();
    const at = now();
    const written = events.map((event, i) => ({ seq: last + i + 1, type: event.type, payload: event.payload, at }));
    const stored = written.map((e) => ({ ...e, payload: JSON.stringify(e.payload) }));
    for (const e of stored) this.sql.exec(`INSERT INTO events (seq, type, payload, at) VALUES (?, ?, ?, ?)`, e.seq, e.type, e.payload, e.at);
    this.seq = last + written.length;
    this.streams.send(stored);
    return written;
  }

  /**
   * Starts a turn: answers the accepted event and the status event; the run goes on in the
   * background with the turn's keys as the route read them (`sealed`, opened here and never stored;
   * read here when not given). A turn key this object has seen before (started, or abandoned by the lifecycle's
   * compensation or reconciler) is refused, as is any turn while another one runs: whichever of
   * a late start and an abandon arrives first decides, once.
   */
  startTurn(input: TurnInput, sealed?: SealedTurnKeys): StartTurnAnswer {
    const kv = this.ctx.storage.kv;
    if (this.turn(input.turnKey) !== undefined || kv.get('turn') !== undefined) return { accepted: false };
    this.setInterrupted(false);
    kv.put('turn', { input, startedAt: now() } satisfies RunningTurn);
    const accepted = this.append([
      { type: 'user.message', payload: { content: [{ type: 'text', text: input.text }] } },
      { type: 'session.status_running', payload: {} },
    ]);
    this.sql.exec(`INSERT INTO turns (turn_key, state, seq, at) VALUES (?, 'started', ?, ?)`, input.turnKey, accepted[0]!.seq, now());
    void this.ctx.storage.setAlarm(Date.now() + HEARTBEAT_MS);
    this.ctx.waitUntil(this.runTurn(input, now(), { runningSeq: accepted[1]!.seq, sealed }));
    return { accepted: true, events: accepted };
  }

  /**
   * The heartbeat. While a turn runs here it re-arms itself; a turn recorded in storage with no
   * run in this instance was lost to an eviction or restart, and is resumed from the last
   * checkpointed conversation (or ended with `error` once past the 65-minute cap), so an
   * execution never hangs in `working`. With no turn held, the expiry of the ended log.
   */
  override async alarm(): Promise<void> {
    const turn = this.ctx.storage.kv.get<RunningTurn>('turn');
    if (!turn) return this.expireIfDue();
    await this.ctx.storage.setAlarm(Date.now() + HEARTBEAT_MS);
    if (this.running) return;
    await this.resume(turn);
  }

  /** Records when the log ended and arms the alarm for the end of its window (replacing a heartbeat). */
  private armExpiry(expiry: ExecutionExpiry) {
    this.ctx.storage.kv.put('expiry', expiry);
    void this.ctx.storage.setAlarm(expiryAlarmTime(expiry));
  }

  /** The alarm of an ended log: past the workspace's window, the execution's row goes, then this storage; else the alarm is armed again. */
  private async expireIfDue(): Promise<void> {
    const expiry = this.ctx.storage.kv.get<ExecutionExpiry>('expiry');
    if (!expiry) return;
    const db = directoryRoutedShardDb(this.env, expiry.workspaceId, expiry.shard);
    const decision = await expiryDecision(db, expiry.workspaceId, 'executions', expiry);
    if (decision !== 'expire') return this.armExpiry(decision.wait);
    const gone = await deleteExecutionRow(db, expiry.executionId);
    // A turn claimed meanwhile keeps the row, and so this log: its heartbeat holds the alarm, and its end arms expiry again.
    if (this.ctx.storage.kv.get('turn') !== undefined) return;
    if (gone) await this.erase();
    else this.armExpiry(postponed(expiry));
  }

  /**
   * Erases this execution's storage: its log, conversation, turn records, expiry and alarm. For
   * retention and a workspace's deletion (workspace-erasure.ts, after the turn was cancelled), once its row is gone (so no reader finds
   * a row whose log is empty) and no turn runs here. A call after it finds an empty log.
   */
  async erase(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.hasSchema = false;
    this.seq = undefined;
    this.interrupted = false;
  }

  /** Goes on with a turn recorded in storage but not running here; the run's notice comes first, synchronously, so nothing starts it twice. */
  private resume(turn: RunningTurn): Promise<void> {
    // The turn goes on from its checkpoint (or its start): what was streamed after that is streamed again.
    const saved = this.ctx.storage.kv.get<Checkpoint>('checkpoint');
    const resumesAfter =
      (saved?.turnKey === turn.input.turnKey ? saved.seq : undefined) ??
      this.sql.exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM events WHERE type = 'session.status_running'`).one().seq ??
      0;
    this.append([{ type: 'agent.info', payload: { message: 'The run was interrupted by a restart and resumes now.', resumesAfter } }]);
    return this.runTurn(turn.input, turn.startedAt);
  }

  /** A turn recorded here but not running in this instance (an eviction or restart cut it off) resumes now instead of at the next heartbeat. */
  private resumeIfLost(turn: RunningTurn) {
    if (!this.running) this.ctx.waitUntil(this.resume(turn));
  }

  private setInterrupted(value: boolean) {
    this.ctx.storage.kv.put('interrupt', value);
    this.interrupted = value;
  }

  /**
   * The user's interrupt. A turn held here records it and stops at its next event (a cut-off
   * one resumes to do so at once); with `waitMs` the answer waits that long for the turn to end.
   * With no turn here, `turnKey` (the one the executions index claimed) never started: it is
   * abandoned with `user.interrupt` and `session.status_idle` (interrupt), so streams end.
   */
  async interrupt(turnKey: string, waitMs = 0): Promise<TurnOutcome> {
    const turn = this.ctx.storage.kv.get<RunningTurn>('turn');
    if (!turn) {
      return this.abandon(turnKey, [
        { type: 'user.interrupt', payload: {} },
        { type: 'session.status_idle', payload: { stop_reason: { type: 'interrupt' } } },
      ]);
    }
    this.setInterrupted(true);
    const events = this.append([{ type: 'user.interrupt', payload: {} }]);
    this.resumeIfLost(turn);
    if (waitMs > 0 && this.current) await Promise.race([this.current.catch(() => undefined), sleep(waitMs)]);
    return { state: 'live', events };
  }

  /**
   * The reconciler's question for a turn the executions index has had `working` too long: a
   * turn held here is live (and resumes now if it was cut off); a turn key never seen here
   * never started and is abandoned with `notice` and `session.status_idle` (error), which ends
   * every open stream of it.
   */
  reconcile(turnKey: string, notice: string): TurnOutcome {
    const turn = this.ctx.storage.kv.get<RunningTurn>('turn');
    if (turn) {
      this.resumeIfLost(turn);
      return { state: 'live', events: [] };
    }
    return this.abandon(turnKey, [
      { type: 'agent.info', payload: { message: notice } },
      { type: 'session.status_idle', payload: { stop_reason: { type: 'error' } } },
    ]);
  }

  /**
   * The compensation of a start that failed or went unanswered: the turn is live if this object
   * took it after all (its opening events are answered), otherwise it is fenced off so a late
   * `startTurn` with its key is refused. Nothing is appended: the caller answers an error.
   */
  withdraw(turnKey: string): TurnOutcome {
    const started = this.turn(turnKey);
    if (started?.state === 'started') return { state: 'live', events: this.events(started.seq! - 1, 2) };
    return this.abandon(turnKey, []);
  }

  /** A turn's events: its `user.message` through the `session.status_idle` that ended it (none for a turn not started here). */
  turnEvents(turnKey: string): ExecutionEvent[] {
    const first = this.turn(turnKey)?.seq;
    if (first == null) return [];
    const events = this.events(first - 1);
    const end = events.findIndex((e) => e.type === 'session.status_idle');
    return end === -1 ? events : events.slice(0, end + 1);
  }

  /** What this object recorded of a turn key: started (with its `user.message` seq) or abandoned. */
  private turn(turnKey: string): { state: 'started' | 'abandoned'; seq: number | null } | undefined {
    return this.sql.exec<{ state: 'started' | 'abandoned'; seq: number | null }>(`SELECT state, seq FROM turns WHERE turn_key = ?`, turnKey).toArray()[0];
  }

  /**
   * Fences off a turn that is not held here: a started key (whose turn has ended) is finished;
   * any other is recorded as abandoned, so it can never start, and `closing` is appended once
   * per key (a turn withdrawn silently still gets its closing events when it is settled).
   */
  private abandon(turnKey: string, closing: NewExecutionEvent[]): TurnOutcome {
    const known = this.turn(turnKey);
    if (known?.state === 'started') return { state: 'finished' };
    const closed = known !== undefined && known.seq !== null;
    const events = closing.length > 0 && !closed ? this.append(closing) : [];
    // A log that ran turns before ends again now (an object that never ran one expires with its row, by the sweep).
    const expiry = this.ctx.storage.kv.get<ExecutionExpiry>('expiry');
    if (events.length > 0 && expiry) this.armExpiry({ ...expiry, ...expiryFrom('executions') });
    this.sql.exec(
      `INSERT OR REPLACE INTO turns (turn_key, state, seq, at) VALUES (?, 'abandoned', ?, ?)`,
      turnKey,
      events.at(-1)?.seq ?? known?.seq ?? null,
      now(),
    );
    return { state: 'abandoned', events };
  }

  /** Runs (or resumes) a turn; a new one (`runningSeq`: its `session.status_running`) announces its start once its first model request is under way. */
  private runTurn(input: TurnInput, startedAt: number, start?: { runningSeq: number; sealed?: SealedTurnKeys }): Promise<void> {
    this.running = true;
    this.current = this.runLoop(input, startedAt, start?.runningSeq, start?.sealed).finally(() => {
      this.running = false;
      this.current = undefined;
    });
    return this.current;
  }

  /** Runs the agent on the turn (or resumes it from its checkpoint), then settles it; a turn cut off after its loop ended is only settled. */
  private async runLoop(input: TurnInput, startedAt: number, runningSeq?: number, sealed?: SealedTurnKeys): Promise<void> {
    const kv = this.ctx.storage.kv;
    // The workspace may move while the turn runs: each statement goes where the directory says then.
    const db = directoryRoutedShardDb(this.env, input.actor.workspaceId, input.actor.shard);
    // A turn cut off by an eviction goes on from its last checkpoint: tools already answered are not called again.
    const saved = kv.get<Checkpoint>('checkpoint');
    const resumed = saved?.turnKey === input.turnKey ? saved : undefined;
    // A resumed turn may have been interrupted in the instance it was cut off from.
    this.interrupted = kv.get<boolean>('interrupt') ?? false;
    if (resumed?.ended) return this.settle(db, input, startedAt, { ...resumed, ended: resumed.ended });
    const hooks: TurnHooks = {
      append: (events) => void this.append(events),
      emit: (events) => this.emit(events),
      checkpoint: (progress) => {
        // Held deltas are written first, so the checkpoint's seq covers every event before it.
        this.deltas.flush();
        kv.put('checkpoint', { turnKey: input.turnKey, seq: this.lastSeq(), ...progress } satisfies Checkpoint);
      },
      interrupted: () => this.interrupted,
      // The start's bookkeeping follows the first model request of a new turn (`runningSeq`: its `session.status_running`).
      underway: () => runningSeq !== undefined && this.ctx.waitUntil(announceRunStarted(db, this.env, input, runningSeq)),
    };
    const result = await runAgentTurn(db, this.env, { input, startedAt, history: kv.get<ModelMessage[]>('messages') ?? [], sealed, resumed }, hooks);
    if (result.completed) kv.put('messages', result.messages);
    const checkpoint = { turnKey: input.turnKey, seq: this.lastSeq(), messages: result.messages, usage: result.usage, ended: result.ended };
    kv.put('checkpoint', checkpoint satisfies Checkpoint);
    await this.settle(db, input, startedAt, checkpoint);
  }

  /** Asks the run lifecycle to settle an ended turn; once it has, the turn is over here and its log closed. */
  private async settle(db: ShardDb, input: TurnInput, startedAt: number, checkpoint: Checkpoint & { ended: TurnEnding }): Promise<void> {
    const kv = this.ctx.storage.kv;
    const hooks: SettleHooks = {
      closing: (output) => kv.put('checkpoint', { ...checkpoint, closing: { output } } satisfies Checkpoint),
      close: (events) => {
        kv.delete('turn');
        kv.delete('checkpoint');
        this.append(events);
        this.armExpiry({ executionId: input.executionId, workspaceId: input.actor.workspaceId, shard: input.actor.shard, ...expiryFrom('executions') });
      },
      waitUntil: (work) => this.ctx.waitUntil(work),
    };
    await settleTurn(db, this.env, input, { ...checkpoint, startedAt }, hooks);
    this.ctx.waitUntil(queueRunExport(db, this.env, input, checkpoint.ended));
  }

  /** The log as a reader (a status read, a workflow's poll) sees it: a turn cut off by a restart resumes now, not at the next heartbeat. */
  read(afterSeq = 0): ExecutionEvent[] {
    this.resumeCutOffTurn();
    return this.events(afterSeq);
  }

  private resumeCutOffTurn() {
    const turn = this.ctx.storage.kv.get<RunningTurn>('turn');
    if (turn) this.resumeIfLost(turn);
  }

  /** Events after `afterSeq`, oldest first. */
  events(afterSeq = 0, limit = 10_000): ExecutionEvent[] {
    return this.stored(afterSeq, limit).map((row) => ({ ...row, payload: JSON.parse(row.payload) as JsonObject }));
  }

  private stored(afterSeq: number, limit = 10_000): StoredEvent[] {
    return this.sql.exec<StoredEvent>(`SELECT seq, type, payload, at FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit).toArray();
  }

  private lastEvent(): StoredEvent | undefined {
    const seq = this.lastSeq();
    return seq === 0 ? undefined : this.stored(seq - 1, 1)[0];
  }

  lastSeq(): number {
    this.seq ??= this.sql.exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM events`).one().seq ?? 0;
    return this.seq;
  }

  override async fetch(request: Request): Promise<Response> {
    // A reader of a turn cut off by a restart should not wait for the heartbeat to see it go on.
    this.resumeCutOffTurn();
    const url = new URL(request.url);
    const after = Number(url.searchParams.get('lastSeq') ?? request.headers.get('last-event-id') ?? 0);
    const replay = this.stored(Number.isSafeInteger(after) && after > 0 ? after : 0);
    if (replay.length === 0 && isEnd(this.lastEvent())) return new Response(null, { status: 204 });
    return this.streams.open(replay, request.signal);
  }
}
