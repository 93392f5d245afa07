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
