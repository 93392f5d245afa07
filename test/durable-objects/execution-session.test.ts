import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ExecutionSession } from '../../durable-objects/ExecutionSession';
import { executions } from '../../schema';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, expectError, signUp, type TestUser } from '../helpers/api';
import { shardDbFor } from '../helpers/shards';
import { jsonEvents, sseEvents, sseReader } from '../helpers/sse';

afterEach(() => resetClock());

/** An execution row of the user's workspace (the executions issue will create these through the API). */
async function seedExecution(user: TestUser) {
  const [row] = await (
    await shardDbFor(user.workspaceId)
  )
    .insert(executions)
    .values({ workspaceId: user.workspaceId, userId: user.user.id, skillSlug: 'code-reviewer', status: 'idle', startedAt: Date.now() })
    .returning({ id: executions.id });
  return `exec_${row!.id}`;
}

const session = (executionId: string) => env.EXECUTION_SESSION.getByName(executionId);

async function streamUrl(user: TestUser, executionId: string) {
  const res = await call(`/api/v1/executions/${executionId}/stream-token`, { token: user.token });
  expect(res.status).toBe(200);
  return new URL(res.body.sseUrl);
}

const open = (url: URL, headers?: Record<string, string>) => exports.default.fetch(`${BASE}${url.pathname}${url.search}`, { headers });

const running = { type: 'session.status_running' as const, payload: {} };
const message = (text: string) => ({ type: 'agent.message' as const, payload: { content: [{ type: 'text', text }] } });
const idle = { type: 'session.status_idle' as const, payload: { stop_reason: { type: 'end_turn' } } };

describe('ExecutionSession event log', () => {
  it('numbers events from 1 without gaps and replays from any point, across eviction', async () => {
    const stub = session(`exec_log_${crypto.randomUUID()}`);
    expect((await stub.append([running, message('a')])).map((e) => e.seq)).toEqual([1, 2]);
    expect((await stub.append([message('b')]))[0]!.seq).toBe(3);
    await evictDurableObject(stub);
    expect((await stub.events(1)).map((e) => e.seq)).toEqual([2, 3]);
    expect((await stub.events(0))[1]).toMatchObject({ type: 'agent.message', payload: { content: [{ type: 'text', text: 'a' }] } });
    expect(await stub.lastSeq()).toBe(3);
  });
});

describe('the execution stream', () => {
  it('lets a reader go as soon as it closes its stream, not at the next keep-alive', async () => {
    const user = await signUp();
    const id = await seedExecution(user);
    await session(id).append([running, message('first')]);
    const readers = () => runInDurableObject(session(id), (object: ExecutionSession) => object['streams'].size);
    const res = await open(await streamUrl(user, id));
    const stream = sseReader(res.body!);
    await stream.until((messages) => messages.length === 2);
    expect(await readers()).toBe(1);
    await stream.cancel();
    await vi.waitFor(async () => expect(await readers()).toBe(0), { timeout: 3_000 });
  });

  it('replays, then streams live, and ends after session.status_idle', async () => {
    const user = await signUp();
    const id = await seedExecution(user);
    await session(id).append([running, message('first')]);
    const res = await open(await streamUrl(user, id));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('content-encoding')).toBe('identity');

    const stream = sseReader(res.body!);
    expect(jsonEvents(await stream.until((messages) => messages.length === 2)).map((f) => f.id)).toEqual([1, 2]);

    await session(id).append([message('live'), idle]);
    expect(jsonEvents(await stream.toEnd())).toEqual([
      { id: 1, type: 'session.status_running', payload: {} },
      { id: 2, type: 'agent.message', payload: { content: [{ type: 'text', text: 'first' }] } },
      { id: 3, type: 'agent.message', payload: { content: [{ type: 'text', text: 'live' }] } },
      { id: 4, type: 'session.status_idle', payload: { stop_reason: { type: 'end_turn' } } },
    ]);
  });

  it('sends each live event, whole, to every stream open on the execution', async () => {
    const user = await signUp();
    const id = await seedExecution(user);
    await session(id).append([running]);
    const url = await streamUrl(user, id);
    const fromStart = await open(url);
    url.searchParams.set('lastSeq', '1');
    const streams = [fromStart, await open(url), await open(url)];
    expect(streams.map((res) => res.status)).toEqual([200, 200, 200]);

    const quoted = 'naïve "quotes", a \\ backslash, </script> and 🙂\nnext line';
    await session(id).append([message(quoted), message('second'), idle]);
    const texts = await Promise.all(streams.map((res) => res.text()));
    const live = [
      { id: 2, type: 'agent.message', payload: { content: [{ type: 'text', text: quoted }] } },
      { id: 3, type: 'agent.message', payload: { content: [{ type: 'text', text: 'second' }] } },
      { id: 4, type: 'session.status_idle', payload: { stop_reason: { type: 'end_turn' } } },
    ];
    expect(sseEvents(texts[0]!)).toEqual([{ id: 1, type: 'session.status_running', payload: {} }, ...live]);
    expect(sseEvents(texts[1]!)).toEqual(live);
    expect(texts[2]).toBe(texts[1]);
  });

  it('resumes after lastSeq or Last-Event-ID, and answers 204 when a finished run has nothing newer', async () => {
    const user = await signUp();
    const id = await seedExecution(user);
    await session(id).append([running, message('x'), idle]);
    const url = await streamUrl(user, id);

    url.searchParams.set('lastSeq', '1');
    expect(sseEvents(await (await open(url)).text()).map((f) => f.id)).toEqual([2, 3]);
    url.searchParams.delete('lastSeq');
    expect(sseEvents(await (await open(url, { 'last-event-id': '2' })).text()).map((f) => f.id)).toEqual([3]);
    url.searchParams.set('lastSeq', '3');
    expect((await open(url)).status).toBe(204);
  });

  it('replays a long log whole and in order, then ends', async () => {
    const user = await signUp();
    const id = await seedExecution(user);
    await session(id).append([running, ...Array.from({ length: 599 }, (_, i) => message(`w${i}`))]);
    await session(id).append([idle]);
    const replayed = sseEvents(await (await open(await streamUrl(user, id))).text());
    expect(replayed.map((f) => f.id)).toEqual(Array.from({ length: 601 }, (_, i) => i + 1));
    expect(replayed[300]).toEqual({ id: 301, ...message('w299') });
    expect(replayed.at(-1)).toEqual({ id: 601, ...idle });
  });

  it('refuses a tampered, foreign or expired URL with 401 before any event', async () => {
    const user = await signUp();
    const id = await seedExecution(user);
    const other = await seedExecution(user);
    await session(id).append([running]);
    const url = await streamUrl(user, id);

    const tampered = new URL(url);
    tampered.searchParams.set('token', `${url.searchParams.get('token')!.slice(0, -2)}xx`);
    expectError(await call(`${tampered.pathname}${tampered.search}`), 401, 'UNAUTHORIZED');

    const elsewhere = new URL(url);
    elsewhere.pathname = elsewhere.pathname.replace(id, other);
    expectError(await call(`${elsewhere.pathname}${elsewhere.search}`), 401, 'UNAUTHORIZED');

    expectError(await call(url.pathname), 401, 'UNAUTHORIZED');
    advanceClock(5 * 60_000 + 1000);
    expectError(await call(`${url.pathname}${url.search}`), 401, 'UNAUTHORIZED');
  });

  it('signs URLs only for executions of the caller’s workspace', async () => {
    const user = await signUp();
    const stranger = await signUp();
    const id = await seedExecution(user);
    expectError(await call(`/api/v1/executions/${id}/stream-token`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/executions/exec_abc/stream-token', { token: user.token }), 404, 'NOT_FOUND');
    expect((await call(`/api/v1/executions/${id.slice(5)}/stream-token`, { token: user.token })).status).toBe(200);
  });
});
