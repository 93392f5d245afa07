import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../workers/app';
import { MAX_BODY_DEPTH } from '../../workers/middleware/body';
import { BASE, call, expectError, signUp, type TestUser } from '../helpers/api';
import { definition, install, mapping } from '../helpers/workflows';

/**
 * Hostile input cannot stall the isolate: one request that makes the Worker compute for seconds
 * holds up every other request on the same isolate, and one that fails half-way must not answer
 * 500. Each case here answers a clear 4xx (or the right answer) at once, where it used to take
 * seconds, minutes or a 500.
 */

const step = mapping('m', { ok: { value: true } });

describe('request bodies arrive whole and in time', () => {
  /** The app called in this isolate, so the body stream reaches it as the test made it (a real connection would buffer or cut it). */
  async function send(user: TestUser, body: ReadableStream<Uint8Array>, overrides: Record<string, string> = {}, headers: Record<string, string> = {}) {
    const request = new Request(`${BASE}/api/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': user.token, ...headers },
      body,
      duplex: 'half',
    } as RequestInit);
    const response = await createApp().fetch(request, { ...env, ...overrides });
    return { status: response.status, headers: response.headers, body: (await response.json()) as any };
  }
  const encoder = new TextEncoder();
  const keysOf = async (user: TestUser) => (await call('/api/v1/api-keys', { token: user.token })).body.data.length;

  it(`answers 400 for a JSON body nested more than ${MAX_BODY_DEPTH} levels deep, before any route reads it`, async () => {
    const user = await signUp();
    await install(user, 'open', definition('open', [step]));
    const launchRaw = (rawBody: string) => call('/api/v1/workflows/open/launch', { token: user.token, rawBody });
    const deep = `{"inputs":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    expect(expectError(await launchRaw(deep), 400, 'INVALID_INPUT').details).toMatchObject({ field: 'body', rule: 'max_depth', limit: MAX_BODY_DEPTH });
    // Brackets inside strings are text, not nesting.
    expect((await launchRaw(JSON.stringify({ inputs: { text: '\\"['.repeat(1_000) } }))).status).toBe(201);
  });

  it('answers 400 for a body that breaks off, and creates nothing', async () => {
    const user = await signUp();
    const before = await keysOf(user);
    const broken = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"name":"half'));
        controller.error(new Error('connection reset'));
      },
    });
    const error = expectError(await send(user, broken), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'incomplete' });
    expect(await keysOf(user)).toBe(before);
  });

  it('answers 408 for a body that stops arriving, and creates nothing', async () => {
    const user = await signUp();
    const before = await keysOf(user);
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"name":"slow'));
      },
    });
    const error = expectError(await send(user, stalled, { BODY_TIMEOUT_MS: '200' }), 408, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'timeout', limit: 200 });
    expect(await keysOf(user)).toBe(before);
  });

  it('still takes a body that arrives in pieces within the time', async () => {
    const user = await signUp();
    const pieces = ['{"name":', '"in pieces"', '}'];
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const piece = pieces.shift();
        if (piece === undefined) controller.close();
        else controller.enqueue(encoder.encode(piece));
      },
    });
    const answer = await send(user, trickle);
    expect(answer.status).toBe(201);
    expect(answer.body.name).toBe('in pieces');
  });

  it('counts the bytes that arrive, not the ones content-length announces', async () => {
    const user = await signUp();
    const max = Number(env.MAX_BODY_BYTES);
    const oversized = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(`{"name":"${'x'.repeat(max)}"}`));
        controller.close();
      },
    });
    const error = expectError(await send(user, oversized, {}, { 'content-length': '16' }), 413, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'max_size' });
  });
});
