import type { Principal } from '../auth/principal';
import type { Env } from '../env';
import { AppError } from '../errors';
import type { OwnStream } from './sse';

/** Event streams (SSE) and WebSockets a credential may hold open at once, each, unless `MAX_OPEN_STREAMS` says otherwise. */
export const DEFAULT_MAX_OPEN_STREAMS = 20;
/** A slot whose holder stops renewing (a crashed isolate, an evicted object) is free again after this long. */
export const SLOT_LEASE_MS = 3 * 60_000;
/** Holders renew this often, well inside a lease. */
export const SLOT_RENEW_MS = 60_000;

export type StreamKind = 'sse' | 'websocket';

/** How the Worker hands a WebSocket's slot to the object that accepts the socket (and holds the slot). */
export const STREAM_SLOT_HEADER = 'x-stream-slot';

/** A slot taken: whose, of which kind, and the lease that holds it. */
export interface StreamSlot {
  kind: StreamKind;
  holder: string;
  lease: string;
}

/**
 * Who a stream counts toward, as the rate limit counts: an API key, or a user (their sessions and
 * access tokens together). A signed URL carries the holder of the credential that asked for it.
 */
export const streamHolderOf = (principal: Principal): string =>
  principal.credential.type === 'api_key' ? `key:${principal.credential.apiKeyId}` : `user:${principal.userId}`;

const slotsOf = (env: Env, kind: StreamKind, holder: string) => env.RATE_LIMITER.getByName(`streams:${kind}:${holder}`);

export const maxOpenStreams = (env: Env): number => Number(env.MAX_OPEN_STREAMS) || DEFAULT_MAX_OPEN_STREAMS;

/** Takes one of the holder's slots of `kind`; all taken is 429 RATE_LIMITED until one closes. */
export async function takeStreamSlot(env: Env, kind: StreamKind, holder: string): Promise<StreamSlot> {
  const cap = maxOpenStreams(env);
  const lease = await slotsOf(env, kind, holder).takeSlot(cap, SLOT_LEASE_MS);
  if (lease === null) {
    const what = kind === 'sse' ? 'event streams' : 'WebSockets';
    throw new AppError('RATE_LIMITED', 429, `This credential already holds ${cap} open ${what}, the most it may at once: close one to open another`, {
      limit: cap,
      kind,
    });
  }
  return { kind, holder, lease };
}

/** False once the lease has expired: the stream no longer counts, and should end. */
export const renewStreamSlot = (env: Env, slot: StreamSlot): Promise<boolean> => slotsOf(env, slot.kind, slot.holder).renewSlot(slot.lease, SLOT_LEASE_MS);

export const releaseStreamSlot = (env: Env, slot: StreamSlot): Promise<void> => slotsOf(env, slot.kind, slot.holder).releaseSlot(slot.lease);

/** What `heldStream` needs of a request's context (a Hono context has it). */
export interface StreamRequest {
  env: Env;
  executionCtx: Pick<ExecutionContext, 'waitUntil'>;
  req: { raw: Request };
}

/**
 * An SSE answer that holds one of the holder's slots while it streams: taken before `open` runs
 * (a refusal opens nothing), renewed while the stream lasts, released when it ends, whether the
 * server ends it or the client goes away (the request's signal, `enable_request_signal`).
 * `open` gets a signal that aborts when the client has gone, the slot was lost or the stream ended, and answers
 * either a stream it writes itself (held until it has ended) or another's answer (an object's),
 * piped natively (no JavaScript per chunk) to see its end. An answer that is not a stream (an
 * error, a 204) gives the slot back at once. The answer's headers are the caller's to add to.
 */
export async function heldStream(c: StreamRequest, holder: string, open: (signal: AbortSignal) => Promise<Response | OwnStream>): Promise<Response> {
  const { env, executionCtx: ctx } = c;
  const slot = await takeStreamSlot(env, 'sse', holder);
  const stop = new AbortController();
  const gone = () => stop.abort();
  c.req.raw.signal.addEventListener('abort', gone, { once: true });
  const renewal = setInterval(() => {
    renewStreamSlot(env, slot).then(
      (held) => held || stop.abort(),
      () => undefined, // the next renewal tries again
    );
  }, SLOT_RENEW_MS);
  const finish = () => {
    // Whatever still works for the stream (a followed call's tool) stops with it.
    stop.abort();
    clearInterval(renewal);
    c.req.raw.signal.removeEventListener('abort', gone);
    return releaseStreamSlot(env, slot).catch(() => undefined);
  };
  let opened: Response | OwnStream;
  try {
    opened = await open(stop.signal);
  } catch (error) {
    ctx.waitUntil(finish());
    throw error;
  }
  if (!(opened instanceof Response)) {
    ctx.waitUntil(opened.ended.catch(() => undefined).finally(finish));
    return opened.response;
  }
  if (opened.status !== 200 || !opened.body) {
    ctx.waitUntil(finish());
    return new Response(opened.body, opened);
  }
  // Piping a stream this Worker writes itself this way would hang the request: those are OwnStreams.
  const { readable, writable } = new IdentityTransformStream();
  ctx.waitUntil(
    opened.body
      .pipeTo(writable, { signal: stop.signal })
      .catch(() => undefined)
      .finally(finish),
  );
  return new Response(readable, opened);
}
