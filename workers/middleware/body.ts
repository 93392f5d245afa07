import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError, invalidInput } from '../errors';
import { jsonTextDeeperThan } from '../lib/json-depth';
import { JSON_MEDIA_TYPE } from './validate';

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_BODY_TIMEOUT_MS = 30_000;
/**
 * Objects and arrays inside one another in a JSON body: far above any request's shape (a
 * workflow definition's schemas stop at 64), far below what recursive code can walk.
 */
export const MAX_BODY_DEPTH = 256;

type Received = { bytes: Uint8Array } | { refused: 'max_size' | 'timeout' | 'incomplete' };

/** Reads the whole body, counting bytes as they come, until the deadline. */
async function receive(body: ReadableStream<Uint8Array>, max: number, timeoutMs: number): Promise<Received> {
  const reader = body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), deadline]);
      if (next === 'timeout') return { refused: 'timeout' };
      if (next.done) break;
      size += next.value.byteLength;
      if (size > max) return { refused: 'max_size' };
      chunks.push(next.value);
    }
  } catch {
    // The client went away, or sent fewer bytes than its content-length promised.
    return { refused: 'incomplete' };
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { bytes };
}

/**
 * Every request body is read here, whole, before any route sees it: at most `MAX_BODY_BYTES`
 * (413, counted as the bytes arrive, whatever content-length says), within `BODY_TIMEOUT_MS`
 * (408 for a body that trickles in), complete (400 when the stream breaks off), and, when it is
 * JSON, at most MAX_BODY_DEPTH levels deep (400). Routes then read from memory, so a failing
 * client can no longer make a body read throw in the middle of a handler.
 */
export const readBody = createMiddleware<AppEnv>(async (c, next) => {
  const body = c.req.raw.body;
  if (!body) return next();
  const max = Number(c.env.MAX_BODY_BYTES) || DEFAULT_MAX_BODY_BYTES;
  const tooLarge = () => new AppError('INVALID_INPUT', 413, `The request body exceeds ${max} bytes`, { field: 'body', rule: 'max_size', limit: max });
  if (Number(c.req.header('content-length')) > max) throw tooLarge();
  const timeoutMs = Number(c.env.BODY_TIMEOUT_MS) || DEFAULT_BODY_TIMEOUT_MS;
  const received = await receive(body, max, timeoutMs);
  if ('refused' in received) {
    if (received.refused === 'max_size') throw tooLarge();
    if (received.refused === 'timeout') {
      throw new AppError('INVALID_INPUT', 408, `The request body did not arrive within ${timeoutMs / 1000} seconds`, {
        field: 'body',
        rule: 'timeout',
        limit: timeoutMs,
      });
    }
    throw invalidInput('body', 'incomplete', 'The request body ended before it was complete');
  }
  const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
  if (JSON_MEDIA_TYPE.test(mediaType) && jsonTextDeeperThan(received.bytes, MAX_BODY_DEPTH)) {
    throw invalidInput('body', 'max_depth', `The request body nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep`, { limit: MAX_BODY_DEPTH });
  }
  c.req.raw = new Request(c.req.raw, { body: received.bytes });
  return next();
});
