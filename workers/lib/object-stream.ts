import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { sleep } from './clock';

/** A stream that ends while its subject goes on (its object was evicted) is opened again this often, after this long. */
const REOPENS = 3;
const REOPEN_AFTER_MS = 2_000;

/** A message of an object's stream: its SSE id, and its data as sent. */
export interface StreamMessage {
  id: number;
  data: string;
}

export interface ObjectStreamFollower {
  /** Opens the object's stream of what came after `afterId` (its `fetch`, given `signal`: an abort lets the object go at once). */
  open: (afterId: number, signal: AbortSignal) => Promise<Response>;
  /** Messages after this id come first; a stream opened again goes on after the last one read. */
  afterId: number;
  signal: AbortSignal;
  /** Each message as it arrives, oldest first; the next one is read once this has settled. */
  onMessage?: (message: StreamMessage) => void | Promise<void>;
  /**
   * Asked each time the stream ends: whether its subject has ended (the stream is then not
   * opened again). `finished`: the object answered 204, nothing after `afterId` and nothing to follow.
   */
  ended: (finished: boolean) => Promise<boolean>;
}

/**
 * Follows a Durable Object's Server-Sent Events stream (an execution's log, a workflow run's
 * change notices) until `ended` says its subject has ended. The stream ends when the object
 * closes it, at once if it answers 204, or when the object drops it (an eviction); one that
 * cannot be opened ends as a dropped one does. Either way `ended` is asked, and while the subject
 * goes on the stream is opened again, up to REOPENS times. Answers whether `ended` said so
 * (false: given up, or `signal` aborted, which also cancels the stream the object is writing).
 */
export async function followObjectStream(follower: ObjectStreamFollower): Promise<boolean> {
  const { signal, onMessage } = follower;
  let after = follower.afterId;
  for (let opened = 0; opened <= REOPENS && !signal.aborted; opened++) {
    if (opened > 0) await sleep(REOPEN_AFTER_MS, signal);
    let finished = false;
    try {
      const answer = await follower.open(after, signal);
      finished = answer.status === 204;
      // Read chunk by chunk rather than piped through a parser stream: aborting the fetch errors the
      // body, which a pipe would report as an unhandled rejection; here the read throws it.
      const reader = answer.body?.getReader();
      const messages: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (message) => messages.push(message) });
      const decoder = new TextDecoder();
      while (reader) {
        const chunk = await reader.read();
        if (chunk.done) break;
        parser.feed(decoder.decode(chunk.value, { stream: true }));
        for (const message of messages.splice(0)) {
          after = Number(message.id);
          await onMessage?.({ id: after, data: message.data });
        }
      }
    } catch {
      // A stream that failed or was aborted ends as a dropped one does: the subject is asked about again.
    }
    if (signal.aborted) return false;
    if (await follower.ended(finished)) return true;
  }
  return false;
}
