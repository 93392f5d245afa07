import type { Env } from '../env';
import { followObjectStream } from '../lib/object-stream';
import type { ExecutionEvent } from './execution-events';

/** An event as the execution's stream carries it: its frame has no time. */
export type StreamedEvent = Omit<ExecutionEvent, 'at'>;

/** Only events after this are streamed: the log's end is all that is waited for, not its replay. */
export const NO_REPLAY = Number.MAX_SAFE_INTEGER;

export interface StreamFollower {
  /** Events after this seq come first (0: the whole log; NO_REPLAY: none), then live ones. */
  afterSeq: number;
  signal: AbortSignal;
  /** Each event as it arrives, oldest first; a stream opened again goes on after the last one. */
  onEvent?: (event: StreamedEvent) => void;
  /**
   * Asked each time the stream ends: whether the run has ended (it is then not opened again).
   * `finished`: the log had ended with nothing after the seq asked for (the object answered 204).
   */
  ended: (finished: boolean) => Promise<boolean>;
}

/**
 * Follows an execution's own event stream (its ExecutionSession's SSE, ../lib/object-stream.ts)
 * until `ended` says the run has ended. The stream ends after the run goes idle, at once if it
 * already is (204), or when the object drops it; while the run goes on it is opened again.
 * Answers whether `ended` said so (false: given up, or `signal` aborted).
 */
export function followExecutionStream(env: Env, executionId: string, follower: StreamFollower): Promise<boolean> {
  const { onEvent } = follower;
  return followObjectStream({
    open: (after, signal) => env.EXECUTION_SESSION.getByName(executionId).fetch(`https://session/stream?lastSeq=${after}`, { signal }),
    afterId: follower.afterSeq,
    signal: follower.signal,
    onMessage: onEvent && (({ id, data }) => onEvent({ seq: id, ...(JSON.parse(data) as Pick<ExecutionEvent, 'type' | 'payload'>) })),
    ended: follower.ended,
  });
}
