import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ProviderError, type ProviderErrorKind } from '../provider';

/** A quoted error message is cut to this many characters (it may reach the execution's events). */
const MAX_ERROR_MESSAGE = 300;

/** What a hosted provider's adapter is built from. */
export interface HostedOptions {
  apiKey: string;
  /** Defaults to the provider's default model. */
  model?: string;
  /** Defaults to the provider's own API; anything serving the same API works. */
  baseUrl?: string;
}

/** Anthropic's and OpenAI's documented status codes; any other 5xx counts as `network`. */
export function kindOfStatus(status: number): ProviderErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 429) return 'rate_limited';
  if (status === 503 || status === 529) return 'overloaded';
  if (status >= 400 && status < 500) return 'bad_request';
  return 'network';
}

/** An error object inside a 200 stream: `overloaded_error` is transient, anything else is `stream`. */
export function streamError(label: string, error: unknown): ProviderError {
  const { type, message } = (error ?? {}) as { type?: unknown; message?: unknown };
  const kind = type === 'overloaded_error' ? 'overloaded' : 'stream';
  return new ProviderError(kind, `${label} failed mid-stream: ${clip(String(message ?? type ?? 'unknown error'))}`);
}

const clip = (text: string) => (text.length > MAX_ERROR_MESSAGE ? `${text.slice(0, MAX_ERROR_MESSAGE)}…` : text);

const parseObject = (json: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(json);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Not JSON: the callers report it.
  }
  return undefined;
};

/** The provider's own words from an error body: `{error:{message}}` (both APIs), else the text. */
async function errorDetail(response: Response): Promise<string> {
  const text = (await response.text().catch(() => '')).trim();
  const body = parseObject(text) as { error?: { message?: unknown } | string; message?: unknown } | undefined;
  const message = typeof body?.error === 'string' ? body.error : (body?.error?.message ?? body?.message);
  return clip(typeof message === 'string' && message ? message : text);
}

/** One SSE `data:` payload as a JSON object; anything else means the stream is corrupt. */
export function parseData(label: string, data: string): Record<string, unknown> {
  const value = parseObject(data);
  if (value) return value;
  throw new ProviderError('stream', `${label} sent an event that is not a JSON object`);
}

/** A tool call's accumulated arguments: JSON of an object, or nothing at all (`{}`). */
export function parseToolInput(label: string, name: string, json: string): Record<string, unknown> {
  const value = json.trim() ? parseObject(json) : {};
  if (value) return value;
  throw new ProviderError('stream', `${label} sent arguments for ${name} that are not a JSON object`);
}

/**
 * POSTs `body` as JSON and yields the answer's server-sent events, parsed by eventsource-parser.
 * A non-2xx answer throws `ProviderError` of the status's kind with the provider's message; a
 * connection that fails or breaks is `network`. Stopping the iteration early cancels the body,
 * which closes the connection.
 */
export async function* postEventStream(
  label: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal | undefined,
): AsyncGenerator<EventSourceMessage> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
      signal,
    });
  } catch {
    signal?.throwIfAborted();
    throw new ProviderError('network', `${label} could not be reached`);
  }
  if (!response.ok) {
    const detail = await errorDetail(response);
    throw new ProviderError(kindOfStatus(response.status), `${label} answered ${response.status}${detail ? `: ${detail}` : ''}`);
  }
  const contentType = response.headers.get('content-type') ?? '';
  if (!response.body || !contentType.includes('text/event-stream')) {
    await response.body?.cancel();
    throw new ProviderError('stream', `${label} answered ${contentType || 'no content type'}, not an event stream`);
  }
  // The events of one network read are parsed and yielded together, with nothing between them
  // that waits on the runtime, so the rows a run stores for them share one storage commit (a
  // transform-stream pipeline would hand them over one runtime turn at a time, a commit each).
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => parsed.push(message) });
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch {
        signal?.throwIfAborted();
        throw new ProviderError('network', `${label}: the connection broke mid-stream`);
      }
      if (next.done) return;
      parser.feed(decoder.decode(next.value, { stream: true }));
      yield* parsed.splice(0);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
