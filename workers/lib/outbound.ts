import { z } from 'zod';
import type { Env } from '../env';
import { invalidInput } from '../errors';
import { isLoopbackHost, isPrivateHost } from './addresses';
import { isLocalDevelopment } from './local-development';

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

export const OUTBOUND_TIMEOUT_MS = 15_000;
/** Redirects a download follows, each hop checked like the first URL. */
export const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** What decides whether the service may call a URL a user, client or model supplied. */
export type OutboundSetting = Pick<Env, 'LOCAL_DEVELOPMENT'>;

/**
 * Why the service may not call `url` for a user, client or model, or null. Outside local
 * development: https to a public host only. In local development also loopback and private
 * hosts, over http too (the test suite's fixture server, a developer's own services).
 */
export function outboundProblem(url: URL, localDevelopment: boolean): 'https' | 'private_address' | null {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'https';
  const isPrivate = isPrivateHost(url.hostname);
  if (isPrivate && !localDevelopment) return 'private_address';
  return url.protocol === 'http:' && !isPrivate ? 'https' : null;
}

type OutboundProblem = NonNullable<ReturnType<typeof outboundProblem>>;

const refused = (field: string, problem: OutboundProblem) =>
  problem === 'https'
    ? invalidInput(field, problem, `${field} must be an https URL`)
    : invalidInput(field, problem, `${field} points to a loopback or private address`);

const redirectRefused = (field: string, problem: OutboundProblem) =>
  problem === 'https'
    ? invalidInput(field, problem, `${field} redirects to a URL that is not https`)
    : invalidInput(field, problem, `${field} redirects to a loopback or private address`);

/** A URL a user, client or model supplied, if the service may call it (`outboundProblem`). */
export function outboundUrl(url: string, field: string, env: OutboundSetting): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidInput(field, 'url', `${field} is not a URL`);
  }
  const problem = outboundProblem(parsed, isLocalDevelopment(env));
  if (problem) throw refused(field, problem);
  return parsed;
}

/**
 * An operator's setting naming an API to call (trusted configuration, not user input): https,
 * or plain http to loopback for development and tests. Null when it is neither.
 */
export function configuredUrl(raw: string): URL | null {
  if (!URL.canParse(raw)) return null;
  const url = new URL(raw);
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname)) ? url : null;
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
 * Fetches a caller-supplied URL: allowed by `outboundUrl`, every redirect hop checked again
 * (at most MAX_REDIRECTS), one timeout for all of it, no credentials, and at most `maxBytes`
 * read. Failures are the caller's input errors on `field`. A host that cannot be reached and
 * one that answers an error status get the same answer, so the service tells nobody which
 * hosts and ports answer; no message quotes what was served.
 */
export async function fetchLimited(url: string, field: string, maxBytes: number, env: OutboundSetting, accept?: string): Promise<Uint8Array> {
  const first = outboundUrl(url, field, env);
  const unreachable = () => invalidInput(field, 'unreachable', `${first.origin} could not be fetched`);
  const signal = AbortSignal.timeout(OUTBOUND_TIMEOUT_MS);
  let target = first;
  for (let hops = 0; ; hops++) {
    let response: Response;
    try {
      response = await fetch(target, { headers: accept ? { accept } : {}, redirect: 'manual', signal });
    } catch {
      throw unreachable();
    }
    const location = response.headers.get('location');
    if (REDIRECT_STATUSES.has(response.status) && location !== null && hops < MAX_REDIRECTS && URL.canParse(location, target)) {
      await response.body?.cancel();
      const next = new URL(location, target);
      const problem = outboundProblem(next, isLocalDevelopment(env));
      if (problem) throw redirectRefused(field, problem);
      target = next;
      continue;
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw unreachable();
    }
    let bytes: Uint8Array | null;
    try {
      bytes = await readCapped(response, maxBytes);
    } catch {
      throw unreachable();
    }
    if (bytes === null) throw invalidInput(field, 'too_large', `The download exceeds ${maxBytes} bytes`);
    return bytes;
  }
}

/**
 * A response body of at most `maxBytes`, or null when it is longer (declared or actual): the
 * read stops at the limit, so a large or endless body costs no more than that.
 */
export async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array | null> {
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel();
    return null;
  }
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

export const fetchJson = async (url: string, field: string, maxBytes: number, env: OutboundSetting): Promise<unknown> => {
  const bytes = await fetchLimited(url, field, maxBytes, env, 'application/json');
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw invalidInput(field, 'json', `${new URL(url).origin} did not answer JSON`);
  }
};
