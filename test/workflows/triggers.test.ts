import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, freezeClock, now, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { heldBy } from '../helpers/deletion';
import { deliverSigned } from '../helpers/triggers';
import { definition, inputOf, install, runsOf } from '../helpers/workflows';

/** A run that waits for input, so its input can be read while it is unfinished. */
const waiting = definition('intake', [{ type: 'tool', id: 'wait', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } }], {
  inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
});

afterEach(() => resetClock());

async function setUp() {
  const user = await signUp();
  await install(user, 'intake', waiting);
  return user;
}

const triggers = (user: TestUser, path = '', init: { method?: string; body?: unknown; apiKey?: string } = {}) =>
  call(`/api/v1/workflows/intake/triggers${path}`, { token: init.apiKey ? undefined : user.token, ...init });

async function createTrigger(user: TestUser, body: Record<string, unknown> = {}, apiKey?: string) {
  const res = await triggers(user, '', { body, apiKey });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; url: string; secret: string; auth: string };
}

const deliver = deliverSigned;

const runs = (user: TestUser) => runsOf(user, 'intake');

describe('workflow triggers: signed deliveries', () => {
  it('creates a trigger answering its URL and secret once; a signed POST launches a run with the body as input', async () => {
    const user = await setUp();
    const trigger = await createTrigger(user, { name: 'CI' });
    expect(trigger.id).toMatch(/^trg_/);
    expect(trigger.url).toBe(`https://service.test/hooks/workflows/${trigger.id}`);
    expect(trigger.secret).toMatch(/^whsec_/);
    expect(trigger).toMatchObject({ auth: 'signature', name: 'CI', state: 'active' });
    const listed = (await triggers(user)).body.triggers;
    expect(listed.map((t: { id: string }) => t.id)).toEqual([trigger.id]);
    expect(listed[0].secret).toBeUndefined();
    expect((await triggers(user, `/${trigger.id}`)).body.secret).toBeUndefined();

    const res = await deliver(trigger, { title: 'Deploy failed' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ workflowId: 'intake', status: 'started' });
    expect(await inputOf(user, res.body.runId)).toEqual({ title: 'Deploy failed' });
    expect((await runs(user)).map((r) => r.runId)).toEqual([res.body.runId]);
  });

  it('answers a replayed webhook-id with the same run and starts nothing new', async () => {
    const user = await setUp();
    const trigger = await createTrigger(user);
    const first = await deliver(trigger, { title: 'Once' }, 'msg_replayed');
    const again = await deliver(trigger, { title: 'Once' }, 'msg_replayed');
    expect(again.status).toBe(202);
    expect(again.body.runId).toBe(first.body.runId);
    const other = await deliver(trigger, { title: 'Twice' }, 'msg_other');
    expect(other.body.runId).not.toBe(first.body.runId);
    expect(await runs(user)).toHaveLength(2);
  });

  it('refuses a bad signature with 401 and starts nothing; an unknown trigger is 404', async () => {
    const user = await setUp();
    const trigger = await createTrigger(user);
    const stranger = await createTrigger(user);
    expectError(await deliver(trigger, { title: 'x' }, 'msg_bad', stranger.secret), 401, 'UNAUTHORIZED');
    expectError(await call(new URL(trigger.url).pathname, { method: 'POST', body: { title: 'x' } }), 401, 'UNAUTHORIZED');
    expect(await runs(user)).toEqual([]);
    const unknown = `${trigger.id.slice(0, -4)}0000`;
    expectError(await deliver({ url: `https://service.test/hooks/workflows/${unknown}`, secret: trigger.secret }, { title: 'x' }), 404, 'NOT_FOUND');
    expectError(await deliver({ url: 'https://service.test/hooks/workflows/trg_nothing', secret: trigger.secret }, { title: 'x' }), 404, 'NOT_FOUND');
  });

  it('refuses input the inputSchema refuses with 400 naming the field', async () => {
    const user = await setUp();
    const trigger = await createTrigger(user);
    const refused = expectError(await deliver(trigger, { title: 7 }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ field: 'inputs.title', rule: 'input_schema' });
    expect(expectError(await deliver(trigger, {}), 400, 'INVALID_INPUT').details?.field).toBe('inputs');
    expect(await runs(user)).toEqual([]);
  });
});

describe('workflow triggers: bearer deliveries, access and limits', () => {
  it('bearer mode takes the secret as Authorization and is idempotent on Idempotency-Key', async () => {
    const user = await setUp();
    const trigger = await createTrigger(user, { auth: 'bearer' });
    const path = new URL(trigger.url).pathname;
    const post = (secret: string, key?: string) =>
      call(path, { method: 'POST', body: { title: 'Bearer' }, headers: { authorization: `Bearer ${secret}`, ...(key ? { 'idempotency-key': key } : {}) } });
    expectError(await post('whsec_wrong'), 401, 'UNAUTHORIZED');
    // A signature does not open a bearer trigger.
    expectError(await deliver(trigger, { title: 'Signed' }), 401, 'UNAUTHORIZED');
    const first = await post(trigger.secret, 'delivery-1');
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect((await post(trigger.secret, 'delivery-1')).body.runId).toBe(first.body.runId);
    expect(await inputOf(user, first.body.runId)).toEqual({ title: 'Bearer' });
    expect(await runs(user)).toHaveLength(1);
  });

  it('another workspace cannot read, rotate or delete a trigger: 404', async () => {
    const owner = await setUp();
    const other = await setUp();
    const trigger = await createTrigger(owner);
    for (const [method, path] of [
      ['GET', `/${trigger.id}`],
      ['POST', `/${trigger.id}/rotate-secret`],
      ['DELETE', `/${trigger.id}`],
    ] as const) {
      expectError(await triggers(other, path, { method }), 404, 'NOT_FOUND');
    }
    expect((await triggers(other)).body.triggers).toEqual([]);
    expect((await deliver(trigger, { title: 'Still here' })).status).toBe(202);
  });

  it('asks workflow:run to create a trigger; rotating retires the old secret; deleting and uninstalling make the URL 404', async () => {
    const user = await setUp();
    const reader = await createKey(user, ['library:read']);
    expectError(await triggers(user, '', { body: {}, apiKey: reader.key }), 403, 'FORBIDDEN');
    expect((await triggers(user, '', { apiKey: reader.key })).status).toBe(200);
    const trigger = await createTrigger(user);
    const rotated = await triggers(user, `/${trigger.id}/rotate-secret`, { method: 'POST' });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(trigger.secret);
    expectError(await deliver(trigger, { title: 'old' }), 401, 'UNAUTHORIZED');
    expect((await deliver({ ...trigger, secret: rotated.body.secret }, { title: 'new' })).status).toBe(202);
    expect((await triggers(user, `/${trigger.id}`, { method: 'DELETE' })).body).toEqual({ success: true });
    expectError(await deliver({ ...trigger, secret: rotated.body.secret }, { title: 'gone' }), 404, 'NOT_FOUND');
    const kept = await createTrigger(user);
    expect((await call('/api/v1/workflows/intake', { method: 'DELETE', token: user.token })).status).toBe(200);
    expectError(await deliver(kept, { title: 'uninstalled' }), 404, 'NOT_FOUND');
  });

  it('a revoked creator key stops the trigger: 403 with the reason, recorded, no run', async () => {
    const user = await setUp();
    const key = await createKey(user, ['workflow:run', 'library:read']);
    const trigger = await createTrigger(user, {}, key.key);
    expect((await deliver(trigger, { title: 'before' })).status).toBe(202);
    expect((await call(`/api/v1/api-keys/${key.id}/revoke`, { method: 'POST', token: user.token })).status).toBe(200);
    const refused = expectError(await deliver(trigger, { title: 'after' }), 403, 'FORBIDDEN');
    expect(refused.details?.reason).toMatch(/revoked/);
    expect(await runs(user)).toHaveLength(1);
    expect((await triggers(user, `/${trigger.id}`)).body).toMatchObject({ state: 'stopped', stoppedReason: refused.details?.reason });
  });

  it('takes at most 60 deliveries a minute per trigger, then 429 with Retry-After', async () => {
    const user = await setUp();
    const trigger = await createTrigger(user);
    const spare = await createTrigger(user);
    // Windows are minutes of the service clock: start just inside one and hold it there.
    advanceClock(60_000 - (now() % 60_000) + 1);
    freezeClock();
    // Input the schema refuses: counted, yet no run to start.
    for (let i = 0; i < 60; i++) expect((await deliver(trigger, { title: i })).status).toBe(400);
    const limited = await deliver(trigger, { title: 'one more' });
    expectError(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Per trigger: another one of the same workflow still takes deliveries.
    expect((await deliver(spare, { title: 'spare' })).status).toBe(202);
  });

  it('deleting a trigger, or uninstalling its workflow, erases the object that counted its deliveries', async () => {
    const user = await setUp();
    const deleted = await createTrigger(user);
    const uninstalled = await createTrigger(user);
    const counts = (trigger: { id: string }) => env.RATE_LIMITER.getByName(`trigger:${trigger.id}`);
    for (const trigger of [deleted, uninstalled]) {
      expect((await deliver(trigger, { title: 'counted' })).status).toBe(202);
      expect((await heldBy(counts(trigger))).rows).not.toEqual([]);
    }
    expect((await triggers(user, `/${deleted.id}`, { method: 'DELETE' })).body).toEqual({ success: true });
    expect(await heldBy(counts(deleted))).toEqual({ rows: [], alarm: null });
    expect((await heldBy(counts(uninstalled))).rows).not.toEqual([]);
    expect((await call('/api/v1/workflows/intake', { method: 'DELETE', token: user.token })).status).toBe(200);
    expect(await heldBy(counts(uninstalled))).toEqual({ rows: [], alarm: null });
  });
});
