/** The headers of every Server-Sent Events answer: execution, workflow run and control-plane streams. */
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // wrangler dev buffers SSE unless the response declares no content encoding.
  'content-encoding': 'identity',
} as const;

export type SseWriter = WritableStreamDefaultWriter<ArrayBuffer | ArrayBufferView>;

/** An SSE answer written by this Worker itself, and when its writing has ended (the writer closed). */
export interface OwnStream {
  response: Response;
  ended: Promise<unknown>;
}

/**
 * An SSE answer and the writer that feeds it. The body is workerd's own byte stream
 * (IdentityTransformStream), not a JavaScript TransformStream: what is written goes out to the
 * client without passing through JavaScript again chunk by chunk, which was most of a stream's
 * cost once an execution has hundreds of subscribers.
 */
export function sseStream(headers: Record<string, string> = {}): { writer: SseWriter; response: Response } {
  const { readable, writable } = new IdentityTransformStream();
  return { writer: writable.getWriter(), response: new Response(readable, { headers: { ...SSE_HEADERS, ...headers } }) };
}

/** Comment frames keep idle connections (and proxies) from timing out. */
const KEEP_ALIVE_MS = 15_000;
const KEEP_ALIVE = new TextEncoder().encode(': keep-alive\n\n');

/**
 * The open SSE streams of one object, held in memory (an eviction drops them; clients reconnect
 * with what they last saw). A stream leaves when its client goes or a write to it fails; while
 * any is open, each gets a comment frame every 15 s.
 */
export class SseSubscribers<S extends { writer: SseWriter }> implements Iterable<S> {
  private readonly open = new Set<S>();
  private keepAlive: ReturnType<typeof setInterval> | undefined;

  get size(): number {
    return this.open.size;
  }

  [Symbol.iterator](): Iterator<S> {
    return this.open.values();
  }

  /** `signal`: the request the stream answers; a reader that goes is let go at once, not at the next write that fails (a keep-alive, up to 15 s later). */
  add(subscriber: S, signal?: AbortSignal): void {
    this.open.add(subscriber);
    subscriber.writer.closed.catch(() => undefined).finally(() => this.delete(subscriber));
    signal?.addEventListener(
      'abort',
      () => {
        this.delete(subscriber);
        subscriber.writer.abort().catch(() => undefined);
      },
      { once: true },
    );
    this.keepAlive ??= setInterval(() => {
      for (const s of this.open) this.write(s, KEEP_ALIVE);
    }, KEEP_ALIVE_MS);
  }

  /** Writes `bytes` to every stream; `last`: the streams then close and leave. */
  writeAll(bytes: Uint8Array, last = false): void {
    for (const subscriber of this.open) {
      this.write(subscriber, bytes);
      if (last) {
        subscriber.writer.close().catch(() => undefined);
        this.delete(subscriber);
      }
    }
  }

  /** Writes to one stream; a failed write ends its subscription. */
  write(subscriber: S, bytes: Uint8Array): void {
    subscriber.writer.write(bytes).catch(() => this.delete(subscriber));
  }

  delete(subscriber: S): void {
    this.open.delete(subscriber);
    if (this.open.size === 0 && this.keepAlive !== undefined) {
      clearInterval(this.keepAlive);
      this.keepAlive = undefined;
    }
  }
}
