import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../workers/env';
import { now } from '../workers/lib/clock';

/** Spec 6.1: the event types of an execution stream. */
export const EXECUTION_EVENT_TYPES = [
  'session.status_running',
  'session.status_idle',
  'agent.message',
  'agent.tool_use',
  'agent.thinking',
  'agent.info',
  'execution.result',
  'span.model_request_end',
  'user.message',
  'user.interrupt',
] as const;
export type ExecutionEventType = (typeof EXECUTION_EVENT_TYPES)[number];

/**
 * Event payloads are JSON objects. Values are typed one level deep on purpose: RPC's
 * serializability check rejects `unknown` and cannot expand a recursive JSON type.
 */
export type JsonObject = { [key: string]: string | number | boolean | null | object };

export interface NewExecutionEvent {
  type: ExecutionEventType;
  payload: JsonObject;
}

export interface ExecutionEvent extends NewExecutionEvent {
  seq: number;
  at: number;
}

/** Comment frames keep idle connections (and proxies) from timing out. */
const KEEP_ALIVE_MS = 15_000;
const SCHEMA_VERSION = 1;
const encoder = new TextEncoder();

const frame = (event: ExecutionEvent) =>
  encoder.encode(`id: ${event.seq}\ndata: ${JSON.stringify({ type: event.type, payload: event.payload })}\n\n`);

const isEnd = (event: ExecutionEvent | undefined) => event?.type === 'session.status_idle';

/**
 * One per execution, addressed by its id (`exec_<n>`). It owns the execution's event log.
 *
 * Storage (SQLite): `events(seq INTEGER PRIMARY KEY, type, payload JSON, at)` is append-only;
 * `meta(key, value)` holds `schema_version`. `seq` starts at 1 and has no gaps.
 *
 * Streaming: `fetch` answers Server-Sent Events: every event after `lastSeq` (query) or
 * `Last-Event-ID` (header), then live ones, ending after `session.status_idle`. If the log
 * already ends with `session.status_idle` the replay ends there, and with nothing newer the
 * answer is 204. Subscribers live in memory: an evicted object drops its connections and
 * clients resume with the last `id` they saw.
 */
export class ExecutionSession extends DurableObject<Env> {
  private readonly subscribers = new Set<WritableStreamDefaultWriter<Uint8Array>>();
  private keepAlive: ReturnType<typeof setInterval> | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
      ctx.storage.sql.exec(
        `CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL, at INTEGER NOT NULL)`,
      );
      ctx.storage.sql.exec(`INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)`, String(SCHEMA_VERSION));
    });
  }

  /** Appends events in order, returns them with their sequence numbers, and sends them to subscribers. */
  append(events: NewExecutionEvent[]): ExecutionEvent[] {
    const last = this.lastSeq();
    const at = now();
    const written = events.map((event, i) => ({ seq: last + i + 1, type: event.type, payload: event.payload, at }));
    for (const e of written) {
      this.ctx.storage.sql.exec(`INSERT INTO events (seq, type, payload, at) VALUES (?, ?, ?, ?)`, e.seq, e.type, JSON.stringify(e.payload), e.at);
    }
    for (const e of written) this.broadcast(e);
    return written;
  }

  /** Events after `afterSeq`, oldest first. */
  events(afterSeq = 0, limit = 10_000): ExecutionEvent[] {
    return this.ctx.storage.sql
      .exec<{ seq: number; type: ExecutionEventType; payload: string; at: number }>(
        `SELECT seq, type, payload, at FROM events WHERE seq > ? ORDER BY seq LIMIT ?`,
        afterSeq,
        limit,
      )
      .toArray()
      .map((row) => ({ ...row, payload: JSON.parse(row.payload) as JsonObject }));
  }

  private lastEvent(): ExecutionEvent | undefined {
    const seq = this.lastSeq();
    return seq === 0 ? undefined : this.events(seq - 1, 1)[0];
  }

  lastSeq(): number {
    return this.ctx.storage.sql.exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM events`).one().seq ?? 0;
  }

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const after = Number(url.searchParams.get('lastSeq') ?? request.headers.get('last-event-id') ?? 0);
    const replay = this.events(Number.isSafeInteger(after) && after > 0 ? after : 0);
    if (replay.length === 0 && isEnd(this.lastEvent())) return new Response(null, { status: 204 });

    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    for (const event of replay) void writer.write(frame(event));
    if (isEnd(replay.at(-1))) void writer.close();
    else this.subscribe(writer);
    return new Response(readable, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        // wrangler dev buffers SSE unless the response declares no content encoding.
        'content-encoding': 'identity',
      },
    });
  }

  private subscribe(writer: WritableStreamDefaultWriter<Uint8Array>) {
    this.subscribers.add(writer);
    writer.closed.catch(() => undefined).finally(() => this.unsubscribe(writer));
    this.keepAlive ??= setInterval(() => {
      for (const w of this.subscribers) w.write(encoder.encode(': keep-alive\n\n')).catch(() => this.unsubscribe(w));
    }, KEEP_ALIVE_MS);
  }

  private unsubscribe(writer: WritableStreamDefaultWriter<Uint8Array>) {
    this.subscribers.delete(writer);
    if (this.subscribers.size === 0 && this.keepAlive !== undefined) {
      clearInterval(this.keepAlive);
      this.keepAlive = undefined;
    }
  }

  private broadcast(event: ExecutionEvent) {
    for (const writer of this.subscribers) {
      writer.write(frame(event)).catch(() => this.unsubscribe(writer));
      if (isEnd(event)) {
        writer.close().catch(() => undefined);
        this.unsubscribe(writer);
      }
    }
  }
}
