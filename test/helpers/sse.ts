import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { EventSourceParserStream } from 'eventsource-parser/stream';

// Server-Sent Events read as a standard client reads them (eventsource-parser, which the service
// uses for model streams): tests assert what an EventSource sees, not how the bytes are split.
// Plain functions, so the Workers pool and the end-to-end tests in Node share them.

export type SseMessage = EventSourceMessage;

/** The messages of a whole SSE body; comments (`: connected`) are not messages. */
export function sseMessages(text: string): SseMessage[] {
  const messages: SseMessage[] = [];
  createParser({ onEvent: (message) => messages.push(message) }).feed(text);
  return messages;
}

/** The service's events in SSE messages: each one's JSON data, with its SSE `id` as a number (null without one). */
export const jsonEvents = <T = any>(messages: readonly SseMessage[]): ({ id: number | null } & T)[] =>
  messages.map((message) => ({ id: message.id === undefined ? null : Number(message.id), ...(JSON.parse(message.data) as T) }));

/** `jsonEvents` of a whole SSE body. */
export const sseEvents = <T = any>(text: string) => jsonEvents<T>(sseMessages(text));

/** Reads an open SSE stream's messages as they arrive; `until` and `toEnd` answer all read so far. */
export function sseReader(body: ReadableStream<Uint8Array>) {
  const reader = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  const messages: SseMessage[] = [];
  const next = async () => {
    const read = await reader.read();
    if (!read.done) messages.push(read.value);
    return !read.done;
  };
  return {
    /** Reads until `enough` holds of the messages so far; throws if the stream ends first. */
    async until(enough: (messages: readonly SseMessage[]) => boolean) {
      while (!enough(messages)) {
        if (!(await next())) throw new Error(`the stream ended first, after: ${messages.map((m) => m.data).join(' | ')}`);
      }
      return messages;
    },
    /** Reads to the stream's end. */
    async toEnd() {
      while (await next());
      return messages;
    },
    cancel: () => reader.cancel(),
  };
}
