import { env, exports } from 'cloudflare:workers';
import { SignJWT } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { STREAM_TOKEN_TTL_MS } from '../../workers/services/execution-streams';
import { BASE, call, signUp, type TestUser } from '../helpers/api';
import { sseEvents } from '../helpers/sse';

/**
 * The service's signed URLs (docs/executions.md): the execution stream URL
 * of GET /executions/:id/stream-token and the control-plane URL of GET /events/subscribe-url.
 * These are the gaps left by test/durable-objects/execution-session.test.ts and
 * test/routes/control-plane.test.ts: a tampered payload on the stream URL, another workspace's
 * token, a token for the other purpose, a token under another key or none, and garbage beside
 * a valid token. Each is refused with 401 UNAUTHORIZED before any event (or upgrade).
 */

afterEach(() => resetClock());

interface Owner {
  user: TestUser;
  executionId: string;
}

async function owner(): Promise<Owner> {
  const user = await signUp();
  const skill = { name: 'Signed', description: 'Signed URL target.', category: 'productivity', prompt: '# Signed\nEcho.' };
  expect((await call('/api/v1/skills/signed-skill', { method: 'PUT', token: user.token, body: skill })).status).toBe(200);
  const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'signed-skill', input: 'hello' } });
  expect(created.status).toBe(201);
  return { user, executionId: created.body.id };
}

const streamUrl = async (o: Owner) => new URL((await call(`/api/v1/executions/${o.executionId}/stream-token`, { token: o.user.token })).body.sseUrl);
const controlUrl = async (o: Owner) => new URL((await call('/api/v1/events/subscribe-url', { token: o.user.token })).body.url);

/** Opens a signed path as its client would: the control channel as a WebSocket upgrade, a stream as a GET. */
const open = (path: string, token: string | null, extra = '') =>
  exports.default.fetch(`${BASE}${path}?${token === null ? '' : `token=${encodeURIComponent(token)}`}${extra}`, {
    headers: path.startsWith('/control/') ? { upgrade: 'websocket' } : {},
  });

/** A refusal as the spec wants it: 401 UNAUTHORIZED in the envelope, no stream, no socket. */
async function expectRefused(res: Response, what: string) {
  const text = await res.text();
  expect(res.status, `${what}: ${text}`).toBe(401);
  expect(res.webSocket, what).toBeNull();
  expect(res.headers.get('content-type'), what).not.toContain('text/event-stream');
  expect(JSON.parse(text).error.code, what).toBe('UNAUTHORIZED');
}

const b64url = (value: unknown) => btoa(JSON.stringify(value)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const partsOf = (token: string) => {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  return { header, payload: JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>, signature };
};

/** The token with its payload changed and its signature kept. */
const tamper = (token: string, change: Record<string, unknown>) => {
  const { header, payload, signature } = partsOf(token);
  return `${header}.${b64url({ ...payload, ...change })}.${signature}`;
};

/** A token with the very claims of `token` (changed by `change`), signed under `secret`. */
const resign = (token: string, secret: string, change: (claims: Record<string, unknown>) => Record<string, unknown> = (claims) => claims) =>
  new SignJWT(change(partsOf(token).payload)).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));

/** The claims of `token` with `alg: none` and no signature. */
const unsigned = (token: string) => `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(partsOf(token).payload)}.`;

let a: Owner;
let b: Owner;

beforeAll(async () => {
  a = await owner();
  b = await owner();
});

describe('the execution stream URL', () => {
  it('opens only the execution it was signed for, in the workspace it was signed in', async () => {
    const url = await streamUrl(a);
    const token = url.searchParams.get('token')!;
    const pathOf = (executionId: string) => `/streams/executions/${executionId}`;

    // The valid URL is the control: a live stream of a's execution.
    const valid = await open(url.pathname, token);
    expect(valid.status).toBe(200);
    expect(valid.headers.get('content-type')).toContain('text/event-stream');
    await valid.body!.cancel();

    await expectRefused(await open(pathOf(b.executionId), token), "a's token on b's execution (another workspace)");
    await expectRefused(await open(pathOf(b.executionId), tamper(token, { sub: b.executionId })), 'payload retargeted at b, signature kept');
    await expectRefused(await open(pathOf(a.executionId), tamper(token, { exp: Math.floor(now() / 1000) + 86_400 })), 'lifetime extended, signature kept');
    await expectRefused(await open(pathOf(a.executionId), await resign(token, 'someone-elses-secret-0123456789abcdef')), 'signed under another key');
    await expectRefused(await open(pathOf(a.executionId), unsigned(token)), 'alg none');
    const withoutExpiry = await resign(token, env.SIGNING_SECRET, ({ exp: _, ...claims }) => claims);
    await expectRefused(await open(pathOf(a.executionId), withoutExpiry), 'signed with the real key but without exp');
    await expectRefused(await open(pathOf(a.executionId), `${token}x`), 'trailing byte');
    await expectRefused(await open(pathOf(a.executionId), 'a'.repeat(10_000)), '10k garbage');
    await expectRefused(await open(pathOf(a.executionId), ''), 'empty token');
    // The raw numeric id names the same execution, but the URL is signed for the path it gave.
    await expectRefused(await open(pathOf(a.executionId.slice('exec_'.length)), token), 'another spelling of the id');
  });

  it('is refused at expiry and is never a control-plane URL', async () => {
    const streamToken = (await streamUrl(a)).searchParams.get('token')!;
    const controlToken = (await controlUrl(a)).searchParams.get('token')!;
    // The control token's subject is the workspace: used as a stream URL, on that path.
    await expectRefused(await open(`/streams/executions/${a.user.workspaceId}`, controlToken), 'control token on the stream route');
    await expectRefused(await open(`/streams/executions/${a.executionId}`, controlToken), 'control token on the execution');
    await expectRefused(await open('/control/ws', streamToken), 'stream token on the control channel');

    advanceClock(5 * 60_000 - 5_000);
    const stillValid = await open(`/streams/executions/${a.executionId}`, streamToken);
    expect(stillValid.status).toBe(200);
    await stillValid.body!.cancel();
    advanceClock(10_000);
    await expectRefused(await open(`/streams/executions/${a.executionId}`, streamToken), 'past its five minutes');
  });

  it('opened a moment before its expiry, streams the run to its end, past that expiry', async () => {
    const skill = { name: 'Late', description: 'Late stream target.', category: 'productivity', prompt: '# Late\nEcho.' };
    expect((await call('/api/v1/skills/late-skill', { method: 'PUT', token: a.user.token, body: skill })).status).toBe(200);
    const created = await call('/api/v1/executions', { token: a.user.token, body: { skill_slug: 'late-skill', input: 'hello' } });
    const url = new URL((await call(`/api/v1/executions/${created.body.id}/stream-token`, { token: a.user.token })).body.sseUrl);
    advanceClock(STREAM_TOKEN_TTL_MS - 2_000);
    const res = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`);
    expect(res.status).toBe(200);
    // The token expires while the stream is open; the turn starts only then.
    advanceClock(60_000);
    const message = { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Go on.' }] }] };
    expect((await call(`/api/v1/executions/${created.body.id}/events`, { token: a.user.token, body: message })).status).toBe(200);
    const types = sseEvents(await res.text()).map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(['user.message', 'session.status_running']);
    expect(types).toContain('agent.message');
    expect(types.at(-1)).toBe('session.status_idle');
  });

  it('answers garbage beside a valid token without a 5xx', async () => {
    const token = (await streamUrl(a)).searchParams.get('token')!;
    for (const extra of ['&lastSeq=abc', '&lastSeq=-1', '&lastSeq=1e99', '&lastSeq=%00', '&token=second']) {
      const res = await open(`/streams/executions/${a.executionId}`, token, extra);
      expect(res.status, extra).toBeLessThan(500);
      if (res.status >= 400) expect((await res.json<any>()).error.code, extra).toEqual(expect.any(String));
      else await res.body?.cancel();
    }
  });
});

describe('the control-plane URL', () => {
  it('opens only its own workspace’s channel, under the service’s key', async () => {
    const url = await controlUrl(a);
    const token = url.searchParams.get('token')!;

    const valid = await open('/control/ws', token);
    expect(valid.status).toBe(101);
    valid.webSocket!.accept();
    valid.webSocket!.close();

    await expectRefused(
      await open('/control/ws', tamper(token, { sub: b.user.workspaceId, wid: b.user.workspaceId })),
      "retargeted at b's workspace, signature kept",
    );
    await expectRefused(
      await open('/control/ws', await resign(tamper(token, { sub: b.user.workspaceId, wid: b.user.workspaceId }), 'someone-elses-secret-0123456789abcdef')),
      "b's workspace under another key",
    );
    await expectRefused(await open('/control/ws', unsigned(token)), 'alg none');
    await expectRefused(await open('/control/ws', 'a'.repeat(10_000)), '10k garbage');
    await expectRefused(await open('/control/ws', null), 'no token');
  });
});
