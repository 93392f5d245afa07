import { SseSubscribers, sseStream, type SseWriter } from '../workers/lib/sse';

const encoder = new TextEncoder();

/** A notice: the run record's version D1 now holds, as the SSE id and in the data. */
const notice = (version: number) => encoder.encode(`id: ${version}\ndata: {"version":${version}}\n\n`);

/**
 * The streams of a workflow run's change notices, held in memory (an eviction drops them;
 * followers read the record and open again after the version they last had). A notice goes out
 * once D1 holds a new version of the run's record, so a follower reads the record once per
 * change instead of on a timer; the streams end after the run's last version.
 */
export class RunNotices {
  private readonly subscribers = new SseSubscribers<{ writer: SseWriter }>();

  /** How many streams are open. */
  get size(): number {
    return this.subscribers.size;
  }

  /**
   * A stream of the versions after `after`: `current` (the one D1 holds) at once if newer, then
   * one notice per version written. `ended` (the run is final and D1 holds its last version): the
   * stream closes after that, and with nothing newer the answer is 204.
   */
  open(after: number, current: number, ended: boolean, signal: AbortSignal): Response {
    if (ended && current <= after) return new Response(null, { status: 204 });
    const { writer, response } = sseStream();
    if (current > after) writer.write(notice(current)).catch(() => undefined);
    if (ended) {
      void writer.close();
      return response;
    }
    this.subscribers.add({ writer }, signal);
    return response;
  }

  /** Tells every stream that D1 holds `version`; `ended`: the run's last, after which the streams close. */
  send(version: number, ended: boolean): void {
    this.subscribers.writeAll(notice(version), ended);
  }
}
