import { SseSubscribers, sseStream } from '../workers/lib/sse';
import type { ExecutionEvent, ExecutionEventType } from '../workers/services/execution-events';

/** An event as stored: its payload is the JSON text written to the log. */
export type StoredEvent = Omit<ExecutionEvent, 'payload'> & { payload: string };

/** A replay goes out in chunks of this many frames, so a long log is never one string in memory at once. */
const REPLAY_CHUNK_EVENTS = 256;
const encoder = new TextEncoder();

/** `session.status_idle`: a stream of the log ends after it. */
export const isEnd = (event: { type: ExecutionEventType } | undefined) => event?.type === 'session.status_idle';

/**
 * The SSE frames of stored events, `data` being `{"type":…,"payload":…}`: built from each payload's
 * stored JSON rather than serialising it again, and encoded once, as one chunk, for every
 * subscriber (a chunk per frame made each frame its own trip to the client).
 */
const frames = (events: StoredEvent[]) =>
  encoder.encode(events.map((event) => `id: ${event.seq}\ndata: {"type":${JSON.stringify(event.type)},"payload":${event.payload}}\n\n`).join(''));

/**
 * The SSE streams open on an execution's event log, held in memory (an evicted object drops
 * them; clients resume with the last `id` they saw): each gets a replay of stored events, then
 * live ones, and ends after `session.status_idle`.
 */
export class LogStreams {
  private readonly subscribers = new SseSubscribers();

  /** How many streams are open. */
  get size(): number {
    return this.subscribers.size;
  }

  /** A stream of `replay`, then of the events sent after it, unless the replay already ends; `signal`: the reader's request. */
  open(replay: StoredEvent[], signal: AbortSignal): Response {
    const { writer, response } = sseStream();
    for (let i = 0; i < replay.length; i += REPLAY_CHUNK_EVENTS) void writer.write(frames(replay.slice(i, i + REPLAY_CHUNK_EVENTS)));
    if (isEnd(replay.at(-1))) void writer.close();
    else this.subscribers.add({ writer }, signal);
    return response;
  }

  /** Sends events to every open stream in one write; a stream ends with its `session.status_idle`. */
  send(events: StoredEvent[]) {
    if (this.subscribers.size === 0 || events.length === 0) return;
    const end = events.findIndex(isEnd);
    this.subscribers.writeAll(frames(end === -1 ? events : events.slice(0, end + 1)), end !== -1);
  }
}
