import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { Env } from '../env';
import { sleep } from '../lib/clock';
import type { ExecutionEvent } from './execution-events';

/** An event as the execution's stream carries it: its frame has no time. */
export type StreamedEvent = Omit<ExecutionEvent, 'at'>;

/** Only events after this are streamed: the log's end is all that is waited for, not its replay. */
export const NO_REPLAY = Number.MAX_SAFE_INTEGER;
/** A stream that ends while the run still works (its object was evicted) is opened again this often, after this long. */
const REOPENS = 3;
const REOPEN_AFTER_MS = 2_000;

export interface StreamFollower {
  /** Events after this seq come first (0: the whole log; NO_REPLAY: none), then live ones. */
  afterSeq: number;
  signal: AbortSignal;
  /** Each event as it arrives, oldest first; a stream opened again goes on after the last one. */
  onEvent?: (event: StreamedEvent) => void;
  /** Asked each time the stream ends: whether the run has ended (it is then not opened again). */
  ended: () => Promise<boolean>;
}

/**
 * Follows an execution's own event stream (its ExecutionSession's SSE) until `ended` says the
 * run has ended. The stream ends after the run goes idle, at once if it already is (204), or
 * when the object drops it; one that cannot be opened ends as a dropped one does. Either way
 * `ended` is asked, and while the run goes on the stream is opened again, up to REOPENS times.
 * Answers whether `ended` said so (false: given up, or `signal` aborted).
 */
export async function followExecutionStream(env: Env, executionId: string, follower: StreamFollower): Promise<boolean> {
  const { signal, onEvent } = follower;
  let after = follower.afterSeq;
  for (let opened = 0; opened <= REOPENS && !signal.aborted; opened++) {
    if (opened > 0) await sleep(REOPEN_AFTER_MS, signal);
    try {
      const stream = await env.EXECUTION_SESSION.getByName(executionId).fetch(`https://session/stream?lastSeq=${after}`, { signal });
      const events = stream.body?.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      await events?.pipeTo(
        new WritableStream({
          write(message) {
            after = Number(message.id);
            onEvent?.({ seq: after, ...(JSON.parse(message.data) as Pick<ExecutionEvent, 'type' | 'payload'>) });
          },
        }),
        { signal },
      );
    } catch {
      // A stream that failed or was aborted ends as a dropped one does: the run is asked about again.
    }
    if (signal.aborted) return false;
    if (await follower.ended()) return true;
  }
  return false;
}
