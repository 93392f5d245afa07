import { z } from 'zod';
import { invalidInput } from '../errors';

/**
 * A credential the service sends in a request header for its owner (a provider key, an access
 * token): one token of printable ASCII, which is all a header can carry; anything else is a
 * paste error, refused before it is stored.
 */
export const headerToken = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min)
    .max(max)
    .regex(/^[\x21-\x7e]+$/, 'a single token of printable ASCII characters');

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
export const OUTBOUND_TIMEOUT_MS = 15_000;

/** A URL the service may call: https, or plain http to loopback only (local development). */
export function outboundUrl(url: string, field: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidInput(field, 'url', `${field} is not a URL`);
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && LOOPBACK.has(parsed.hostname))) {
    throw invalidInput(field, 'https', `${field} must be an https URL`);
  }
  return parsed;
}

/** Reads at most `maxBytes` of a body as text and cancels the rest. */
export async function readTextPrefix(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  if (!body) return { text: '', truncated: false };
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let text = '';
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode(), truncated: false };
    const room = maxBytes - size;
    size += value.length;
    if (value.length > room) {
      await reader.cancel();
      return { text: text + decoder.decode(value.subarray(0, room)), truncated: true };
    }
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * Fetches a caller-supplied URL: https only (plain http just for loopback, i.e. local
 * development), a timeout, no credentials, and at most `maxBytes` read. Failures are the
 * caller's input errors on `field`.
 */
export async function fetchLimited(url: string, field: string, maxBytes: number, accept?: string): Promise<Uint8Array> {
  const parsed = outboundUrl(url, field);
  let response: Response;
  try {
    response = await fetch(parsed, {
      headers: accept ? { accept } : {},
      redirect: 'follow',
      signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS),
    });
  } catch {
    throw invalidInput(field, 'unreachable', `${parsed.origin} could not be reached`);
  }
  if (response.status === 404) throw invalidInput(field, 'not_found', `${parsed.href} answered 404`);
  if (!response.ok || !response.body) throw invalidInput(field, 'http_status', `${parsed.origin} answered ${response.status}`);
  const bytes = await readCapped(response, maxBytes);
  if (bytes === null) throw invalidInput(field, 'too_large', `The download exceeds ${maxBytes} bytes`);
  return bytes;
}

/**
 * A response body of at most `maxBytes`, or null when it is longer (declared or actual): the
 * read stops at the limit, so a large or endless body costs no more than that.
 */
export async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array | null> {
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) return null;
  if (!response.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(read.value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

export const fetchJson = async (url: string, field: string, maxBytes: number): Promise<unknown> => {
  const bytes = await fetchLimited(url, field, maxBytes, 'application/json');
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw invalidInput(field, 'json', `${new URL(url).origin} did not answer JSON`);
  }
};
