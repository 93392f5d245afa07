import { env } from 'cloudflare:workers';
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { consumeWebhookDeliveries } from '../../workers/queues/webhook-deliveries';
import worker from '../../workers/index';
import { CLAIM_LEASE_MS, DEAD_LETTERED, MAX_ATTEMPTS } from '../../workers/services/webhook-delivery';
import { emitWebhookEvent, OUTBOX_GRACE_MS, webhookEventId, type WebhookMessage } from '../../workers/services/webhook-events';
import { call, expectError, signUp, waitForStatus, type TestUser } from '../helpers/api';
import { runHousekeeping } from '../helpers/housekeeping';
import { shardD1, shardDbFor } from '../helpers/shards';
import { signUpWithSummarizer } from '../helpers/skills';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

afterEach(() => resetClock());

let inboxes = 0;
/** A fresh inbox of the fixture server (test/setup/fixture-server.ts); `fail<n>-` answers 500 to its first n requests. */
const inboxUrl = (prefix = '') => `${inject('fixtureOrigin')}/inbox/${prefix}wh-${Date.now().toString(36)}-${inboxes++}`;

interface Received {
  headers: Record<string, string>;
  body: string;
}

const received = async (url: string): Promise<Received[]> => (await fetch(`${url}/__read`)).json();

/** Waits until the inbox at `url` holds at least `count` requests. */
async function receivedAtLeast(url: string, count: number, timeoutMs = 15_000): Promise<Received[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = await received(url);
    if (got.length >= count) return got;
    if (Date.now() > until) throw new Error(`${url} received ${got.length} of ${count}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const createEndpoint = (user: TestUser, body: Record<string, unknown>) => call('/api/v1/webhooks', { token: user.token, body });

async function endpointFor(user: TestUser, url: string, events: string[]) {
  const res = await createEndpoint(user, { url, events });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string };
}

/** Hands `messages` to the consumer as one batch, with the queue's sends captured instead of delivered. */
async function consume(messages: WebhookMessage[]) {
  const sent: { body: WebhookMessage; delaySeconds?: number }[] = [];
  const queue = { send: async (body: WebhookMessage, options?: { delaySeconds?: number }) => void sent.push({ body, delaySeconds: options?.delaySeconds }) };
  const batch = createMessageBatch(
    'webhook-deliveries',
    messages.map((body, i) => ({ id: `m-${i}-${Math.random()}`, timestamp: new Date(), attempts: 1, body })),
  );
  await consumeWebhookDeliveries(batch, { ...env, WEBHOOK_DELIVERIES: queue as unknown as Queue });
  const result = await getQueueResult(batch, createExecutionContext());
  return { sent, result };
}

const eventMessage = async (user: TestUser, key: string): Promise<WebhookMessage> => ({
  kind: 'event',
  workspaceId: user.workspaceId,
  shard: user.shard,
  event: {
    id: await webhookEventId(key),
    type: 'execution.completed',
    timestamp: new Date().toISOString(),
    data: { executionId: 'exec_1', status: 'completed' },
  },
});

describe('/api/v1/webhooks', () => {
  it('creates an endpoint answering its whsec_ secret once, lists, reads, changes and deletes it', async () => {
    const user = await signUp();
    const created = await createEndpoint(user, { url: 'https://hooks.example.com/in', events: ['execution.completed', 'credits.low'], description: 'CI' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^whk_\d+$/),
      url: 'https://hooks.example.com/in',
      events: ['execution.completed', 'credits.low'],
      description: 'CI',
      enabled: true,
      disabledReason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const id = created.body.id as string;
    const read = await call(`/api/v1/webhooks/${id}`, { token: user.token });
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('secret');
    expect(JSON.stringify(read.body)).not.toContain('whsec_');
    const second = await createEndpoint(user, { url: 'https://hooks.example.com/two', events: ['workflow_run.failed'] });
    const page = await call('/api/v1/webhooks?limit=1', { token: user.token });
    expect(page.body).toMatchObject({ data: [{ id: second.body.id }], has_more: true });
    expect(JSON.stringify(page.body)).not.toContain('whsec_');
    const next = await call(`/api/v1/webhooks?limit=1&after_id=${page.body.last_id}`, { token: user.token });
    expect(next.body).toMatchObject({ data: [{ id }], has_more: false });
    const patched = await call(`/api/v1/webhooks/${id}`, { token: user.token, method: 'PATCH', body: { events: ['execution.failed'], enabled: false } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ events: ['execution.failed'], enabled: false });
    expect((await call(`/api/v1/webhooks/${id}`, { token: user.token, method: 'DELETE' })).body).toEqual({ success: true });
    expectError(await call(`/api/v1/webhooks/${id}`, { token: user.token }), 404, 'NOT_FOUND');
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['webhook.created', 'webhook.updated', 'webhook.deleted']));
  });

  it('refuses unknown event types and URLs the service may not call, naming the field', async () => {
    const user = await signUp();
    const unknown = expectError(
      await createEndpoint(user, { url: 'https://hooks.example.com/in', events: ['execution.completed', 'run.exploded'] }),
      400,
      'INVALID_INPUT',
    );
    expect(unknown.details).toMatchObject({ field: 'events' });
    expect(expectError(await createEndpoint(user, { url: 'https://hooks.example.com/in', events: [] }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'events',
    });
    expect(
      expectError(await createEndpoint(user, { url: 'http://hooks.example.com/in', events: ['credits.low'] }), 400, 'INVALID_INPUT').details,
    ).toMatchObject({
      field: 'url',
      rule: 'https',
    });
    expect(expectError(await createEndpoint(user, { url: 'not a url', events: ['credits.low'] }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'url',
    });
    const { id } = await endpointFor(user, 'https://hooks.example.com/in', ['credits.low']);
    const patch = await call(`/api/v1/webhooks/${id}`, { token: user.token, method: 'PATCH', body: { events: ['nope'] } });
    expect(expectError(patch, 400, 'INVALID_INPUT').details).toMatchObject({ field: 'events' });
  });

  it("answers 404 for another workspace's endpoint and its deliveries, and 403 to a member", async () => {
    const owner = await signUp();
    const stranger = await signUp();
    const { id } = await endpointFor(owner, 'https://hooks.example.com/in', ['credits.low']);
    expectError(await call(`/api/v1/webhooks/${id}`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/webhooks/${id}`, { token: stranger.token, method: 'PATCH', body: { enabled: false } }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/webhooks/${id}/deliveries`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/webhooks/${id}/rotate-secret`, { token: stranger.token, method: 'POST' }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/webhooks/${id}`, { token: stranger.token, method: 'DELETE' }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/webhooks', { token: stranger.token })).body.data).toEqual([]);

    const invited = await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, { token: owner.token, body: { email: stranger.email, role: 'member' } });
    expect((await call('/api/v1/invitations/accept', { token: stranger.token, body: { token: invited.body.token } })).status).toBe(200);
    expect((await call('/api/v1/workspaces/current', { token: stranger.token, method: 'PUT', body: { workspace: owner.workspaceId } })).status).toBe(200);
    expectError(await call('/api/v1/webhooks', { token: stranger.token }), 403, 'FORBIDDEN');
    expectError(await createEndpoint(stranger, { url: 'https://hooks.example.com/in', events: ['credits.low'] }), 403, 'FORBIDDEN');
  });
});

describe('deliveries', () => {
  it('signs execution.completed so the Standard Webhooks verifier accepts it, and logs the attempt', async () => {
    const user = await signUpWithSummarizer();
    const url = inboxUrl();
    const { id, secret } = await endpointFor(user, url, ['execution.completed']);
    const run = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'Notes.' } });
    expect(run.status).toBe(200);
    await waitForStatus(user, run.body.executionId, 'completed');
    const [delivery] = await receivedAtLeast(url, 1);
    const payload = new Webhook(secret).verify(delivery!.body, delivery!.headers) as { type: string; timestamp: string; data: Record<string, unknown> };
    expect(payload).toEqual({
      type: 'execution.completed',
      timestamp: expect.any(String),
      data: { executionId: run.body.executionId, status: 'completed', stopReason: 'end_turn', cost: expect.any(Number), workflowRunId: null },
    });
    expect(delivery!.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(() => new Webhook(`whsec_${btoa('another secret of enough bytes!!')}`).verify(delivery!.body, delivery!.headers)).toThrow();
    const log = await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token });
    expect(log.body.data).toEqual([
      expect.objectContaining({
        eventId: delivery!.headers['webhook-id'],
        eventType: 'execution.completed',
        status: 'succeeded',
        attempts: [{ attempt: 1, statusCode: 200, latencyMs: expect.any(Number), error: null, at: expect.any(String) }],
      }),
    ]);
    // Queued, the event left the outbox.
    const outbox = await (await shardD1(user.workspaceId)).prepare('SELECT event_id FROM webhook_outbox WHERE workspace_id = ?').bind(user.workspaceId).all();
    expect(outbox.results).toEqual([]);
  });

  it('delivers workflow_run.succeeded when a run ends', async () => {
    const user = await signUp();
    const url = inboxUrl();
    const { secret } = await endpointFor(user, url, ['workflow_run.succeeded']);
    await install(user, 'echo', definition('echo', [mapping('echo', { name: { initData: true, path: 'name' } })]));
    const runId = await launch(user, 'echo', { name: 'a' });
    await waitForRun(user, runId, ['success']);
    const [delivery] = await receivedAtLeast(url, 1);
    expect(new Webhook(secret).verify(delivery!.body, delivery!.headers)).toMatchObject({
      type: 'workflow_run.succeeded',
      data: { runId, workflowId: 'echo', status: 'success' },
    });
  });

  it('delivers credits.limit_reached once when a spend limit refuses runs', async () => {
    const user = await signUpWithSummarizer();
    const url = inboxUrl();
    const { secret } = await endpointFor(user, url, ['credits.limit_reached']);
    // The local model counts four characters a token: this run costs about 0.63 Ds, past the limit set after it.
    const first = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'Summarise this. '.repeat(6_250) } });
    await waitForStatus(user, first.body.executionId, 'completed');
    expect((await call(`/api/v1/workspaces/${user.workspaceId}/limits`, { token: user.token, method: 'PUT', body: { daily: 0.5 } })).status).toBe(200);
    for (let i = 0; i < 2; i++)
      expect((await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'Again.' } })).status).toBe(402);
    const [delivery] = await receivedAtLeast(url, 1);
    expect(new Webhook(secret).verify(delivery!.body, delivery!.headers)).toMatchObject({
      type: 'credits.limit_reached',
      data: { limit: 'daily', limitAmount: 0.5 },
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await received(url)).toHaveLength(1);
  });

  it('signs with the old and the new secret during a rotation overlap, and with the new one after it', async () => {
    const user = await signUp();
    const url = inboxUrl();
    const { id, secret: old } = await endpointFor(user, url, ['execution.completed']);
    const rotated = await call(`/api/v1/webhooks/${id}/rotate-secret`, { token: user.token, method: 'POST' });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(old);
    expect(rotated.body.previousSecretExpiresAt).toEqual(expect.any(String));
    await consume([await eventMessage(user, 'rotation-1')]);
    const [during] = await received(url);
    expect(during!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(old).verify(during!.body, during!.headers)).toMatchObject({ type: 'execution.completed' });
    expect(new Webhook(fresh).verify(during!.body, during!.headers)).toMatchObject({ type: 'execution.completed' });

    advanceClock(24 * 60 * 60 * 1000 + 1000);
    await consume([await eventMessage(user, 'rotation-2')]);
    const after = (await received(url))[1]!;
    // Signed at the moved clock, so only the signatures are compared (the verifier checks the timestamp against the real one).
    const signature = after.headers['webhook-signature']!;
    expect(signature.split(' ')).toHaveLength(1);
    const at = new Date(Number(after.headers['webhook-timestamp']) * 1000);
    expect(signature).toBe(new Webhook(fresh).sign(after.headers['webhook-id']!, at, after.body));
    expect((await call(`/api/v1/webhooks/${id}`, { token: user.token })).body.previousSecretExpiresAt).toBeNull();
  });

  it('retries a failing receiver on the backoff schedule until it recovers, once per attempt', async () => {
    const user = await signUp();
    const url = inboxUrl('fail3-');
    const { id, secret } = await endpointFor(user, url, ['execution.completed']);
    let { sent } = await consume([await eventMessage(user, 'recovering')]);
    const delays: (number | undefined)[] = [];
    while (sent.length > 0) {
      expect(sent).toHaveLength(1);
      delays.push(sent[0]!.delaySeconds);
      const next = sent[0]!.body;
      ({ sent } = await consume([next]));
      // The same message again (the queue delivers at least once) makes no second attempt.
      expect((await consume([next])).sent).toEqual([]);
    }
    expect(delays).toEqual([5, 20, 80]);
    const got = await received(url);
    expect(got).toHaveLength(4);
    expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([got[0]!.headers['webhook-id']]));
    expect(new Webhook(secret).verify(got[3]!.body, got[3]!.headers)).toMatchObject({ type: 'execution.completed' });
    const [delivery] = (await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token })).body.data;
    expect(delivery).toMatchObject({ status: 'succeeded', nextAttemptAt: null });
    expect(delivery.attempts.map((a: { attempt: number; statusCode: number; error: string | null }) => [a.attempt, a.statusCode, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 500, 'HTTP 500'],
      [3, 500, 'HTTP 500'],
      [4, 200, null],
    ]);
    expect((await call(`/api/v1/webhooks/${id}`, { token: user.token })).body.enabled).toBe(true);
  });

  it('disables an endpoint that failed every attempt over more than a day, and says so in the activity log', async () => {
    const user = await signUp();
    const url = inboxUrl('fail99-');
    const { id } = await endpointFor(user, url, ['execution.completed']);
    let { sent } = await consume([await eventMessage(user, 'failing')]);
    const delays: number[] = [];
    while (sent.length > 0) {
      delays.push(sent[0]!.delaySeconds!);
      ({ sent } = await consume([sent[0]!.body]));
    }
    expect(delays).toHaveLength(MAX_ATTEMPTS - 1);
    expect(delays.reduce((a, b) => a + b, 0)).toBeGreaterThan(24 * 60 * 60);
    expect(await received(url)).toHaveLength(MAX_ATTEMPTS);
    const endpoint = (await call(`/api/v1/webhooks/${id}`, { token: user.token })).body;
    expect(endpoint).toMatchObject({ enabled: false, disabledReason: expect.stringContaining('failed') });
    const [delivery] = (await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token })).body.data;
    expect(delivery).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(delivery.attempts).toHaveLength(MAX_ATTEMPTS);
    const activity = await call('/api/v1/activity', { token: user.token });
    expect(activity.body.data[0]).toMatchObject({ type: 'webhook.disabled' });
    // Disabled, it gets nothing more; a manual redelivery is refused until it is enabled again.
    await consume([await eventMessage(user, 'after-disable')]);
    expect(await received(url)).toHaveLength(MAX_ATTEMPTS);
    expectError(await call(`/api/v1/webhooks/${id}/deliveries/${delivery.id}/redeliver`, { token: user.token, method: 'POST' }), 409, 'CONFLICT');
  });

  it('redelivers on request: one attempt, logged after the others', async () => {
    const user = await signUp();
    const url = inboxUrl();
    const { id } = await endpointFor(user, url, ['execution.completed']);
    await consume([await eventMessage(user, 'redeliver')]);
    const [delivery] = (await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token })).body.data;
    const again = await call(`/api/v1/webhooks/${id}/deliveries/${delivery.id}/redeliver`, { token: user.token, method: 'POST' });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ id: delivery.id, status: 'pending' });
    const got = await receivedAtLeast(url, 2);
    expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
    const until = Date.now() + 5000;
    let attempts: unknown[] = [];
    while (Date.now() < until && attempts.length < 2) {
      attempts = (await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token })).body.data[0].attempts;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(attempts).toMatchObject([
      { attempt: 1, statusCode: 200 },
      { attempt: 2, statusCode: 200 },
    ]);
    expectError(await call(`/api/v1/webhooks/${id}/deliveries/dlv_1/redeliver`, { token: user.token, method: 'POST' }), 404, 'NOT_FOUND');
  });

  it('keeps an event the queue refused in the outbox and sends it from the hourly sweep', async () => {
    const user = await signUp();
    const url = inboxUrl();
    const { secret } = await endpointFor(user, url, ['credits.low']);
    const refusing = {
      send: async () => Promise.reject(new Error('queue unavailable')),
      sendBatch: async () => Promise.reject(new Error('queue unavailable')),
    } as unknown as Queue;
    const data = { userId: 'usr_1', availableBalance: 70, threshold: 75, executionId: 'exec_1' };
    await emitWebhookEvent(await shardDbFor(user.workspaceId), { ...env, WEBHOOK_DELIVERIES: refusing }, user, 'outbox-refused', 'credits.low', data);
    // Within the emitter's grace the sweep leaves it alone; after it, the sweep sends it.
    await runHousekeeping();
    expect(await received(url)).toEqual([]);
    advanceClock(OUTBOX_GRACE_MS + 1000);
    await runHousekeeping();
    const [delivery] = await receivedAtLeast(url, 1);
    expect(delivery!.headers['webhook-id']).toBe(await webhookEventId('outbox-refused'));
    // Signed at the moved clock, so the signature is checked without the verifier's timestamp window.
    const at = new Date(Number(delivery!.headers['webhook-timestamp']) * 1000);
    expect(delivery!.headers['webhook-signature']).toBe(new Webhook(secret).sign(delivery!.headers['webhook-id']!, at, delivery!.body));
    expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'credits.low', data });
    const outbox = await (await shardD1(user.workspaceId)).prepare('SELECT event_id FROM webhook_outbox WHERE workspace_id = ?').bind(user.workspaceId).all();
    expect(outbox.results).toEqual([]);
  });

  it('sends an attempt once when its message is delivered twice at once, and takes over a claim whose consumer died', async () => {
    const user = await signUp();
    const url = inboxUrl('fail1-');
    const { id } = await endpointFor(user, url, ['execution.completed']);
    const { sent } = await consume([await eventMessage(user, 'twice')]);
    const second = sent[0]!.body;
    // The queue hands the same attempt to two consumers at once: one claims and sends it; the other finds it claimed or made.
    await consume([second, second]);
    expect(await received(url)).toHaveLength(2);
    expect((await consume([second])).result.retryMessages).toEqual([]);
    expect(await received(url)).toHaveLength(2);
    const [delivery] = (await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token })).body.data;
    expect(delivery).toMatchObject({ status: 'succeeded' });
    expect(delivery.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2]);

    // A consumer claimed attempt 3 and died before sending it: its message comes back, and once the claim has lapsed it is sent.
    const deliveryId = Number(String(delivery.id).replace('dlv_', ''));
    await (
      await shardD1(user.workspaceId)
    )
      .prepare(`UPDATE webhook_deliveries SET attempts = 3, claimed_at = ?, status = 'pending' WHERE id = ?`)
      .bind(Date.now(), deliveryId)
      .run();
    const third: WebhookMessage = { kind: 'attempt', workspaceId: user.workspaceId, shard: user.shard, deliveryId, attempt: 3 };
    expect((await consume([third])).result.retryMessages).toHaveLength(1);
    expect(await received(url)).toHaveLength(2);
    advanceClock(CLAIM_LEASE_MS + 1000);
    expect((await consume([third])).result.retryMessages).toEqual([]);
    expect(await received(url)).toHaveLength(3);
  });

  it('ends a delivery failed, saying why, when the queue dead-letters its attempt', async () => {
    const user = await signUp();
    const url = inboxUrl('fail1-');
    const { id } = await endpointFor(user, url, ['execution.completed']);
    const { sent } = await consume([await eventMessage(user, 'dead-lettered')]);
    const batch = createMessageBatch('webhook-deliveries-dlq', [{ id: `m-${Math.random()}`, timestamp: new Date(), attempts: 1, body: sent[0]!.body }]);
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks).toHaveLength(1);
    const [delivery] = (await call(`/api/v1/webhooks/${id}/deliveries`, { token: user.token })).body.data;
    expect(delivery).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(delivery.attempts.map((a: { attempt: number; statusCode: number | null; error: string }) => [a.attempt, a.statusCode, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, null, DEAD_LETTERED],
    ]);
    expect(await received(url)).toHaveLength(1);
    // Redelivering it is still possible, and makes the next attempt.
    expect((await call(`/api/v1/webhooks/${id}/deliveries/${delivery.id}/redeliver`, { token: user.token, method: 'POST' })).status).toBe(202);
    await receivedAtLeast(url, 2);
  });
});
