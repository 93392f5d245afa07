import { now } from '../workers/lib/clock';
import type { NewExecutionEvent } from '../workers/services/execution-events';

/**
 * A fast model's words share storage commits: a text delta that comes within this long of the
 * last one sent waits (at most this long after it) to be written and sent with those that follow.
 * Every event is stored before its frame leaves, so each write is a commit the frame waits for;
 * one per delta bounds a stream at the storage's commit rate. Words that come slower than this
 * go out one by one as they come, and so does the first of a run's words.
 */
const HOLD_DELTAS_MS = 10;
/** Held deltas are written once this many wait, whatever the time. */
const MAX_HELD_DELTAS = 64;

/**
 * Text deltas (`agent.message`) not yet written: they have no seq yet and nobody has seen them.
 * `write` stores and sends them; whatever is appended to the log takes them first, so the log
 * keeps the order events came in.
 */
export class HeldDeltas {
  private held: NewExecutionEvent[] = [];
  private until: ReturnType<typeof setTimeout> | undefined;
  /** When deltas were last written. */
  private sentAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly write: (events: NewExecutionEvent[]) => void) {}

  /** Holds text deltas that come fast (HOLD_DELTAS_MS), or writes them with those held. */
  hold(deltas: NewExecutionEvent[]) {
    this.held.push(...deltas);
    const wait = this.sentAt + HOLD_DELTAS_MS - now();
    if (wait <= 0 || this.held.length >= MAX_HELD_DELTAS) this.flush();
    else this.until ??= setTimeout(() => this.flush(), wait);
  }

  /** Writes (and sends) the held deltas now. */
  flush() {
    this.write(this.take());
  }

  /** The held deltas, taken to be written now. */
  take(): NewExecutionEvent[] {
    clearTimeout(this.until);
    this.until = undefined;
    if (this.held.length > 0) this.sentAt = now();
    return this.held.splice(0);
  }
}
