import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, freezeClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { runHousekeeping } from '../helpers/housekeeping';
import { shardD1 } from '../helpers/shards';
import { deliverGithub, deliverSigned } from '../helpers/triggers';
import { definition, install } from '../helpers/workflows';

/** Takes a title, and waits for input so its runs stay unfinished and cheap. */
const intake = definition('intake', [{ type: 'tool', id: 'wait', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } }], {
  inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
});
const reviewer = definition('review', [{ type: 'tool', id: 'wait', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } }], {
  metadata: { name: 'Review', triggers: [{ source: 'github', events: ['push', 'pull_request.opened'] }] },
});

const DAY = 86_400_000;

afterEach(() => resetClock());

interface Entry {
  id: string;
  deliveryId: string | null;
  event: string | null;
  outcome: string;
  status: number;
  runId: string | null;
  reason: string | null;
  createdAt: string;
}
interface Page {
  data: Entry[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

async function createTrigger(user: TestUser, slug: string, body: Record<string, unknown> = {}) {
  const res = await call(`/api/v1/workflows/${slug}/triggers`, { token: user.token, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; url: string; secret: string };
}

async function deliveries(as: { token?: string; apiKey?: string }, slug: string, triggerId: string, query = ''): Promise<Page> {
  const res = await call(`/api/v1/workflows/${slug}/triggers/${triggerId}/deliveries${query}`, as);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Page;
}

/** A delivery the trigger refuses (signed with another secret): recorded, and cheap, since no run starts and nothing counts it. */
const refusedDelivery = (trigger: { url: string; secret: string }, messageId: string) =>
  deliverSigned(trigger, { title: 'x' }, messageId, 'whsec_' + 'A'.repeat(32));

describe('a trigger’s delivery log', () => {
  it('records a started run, a duplicate delivery id, a bad signature and input the schema refuses, newest first, without bodies or headers', async () => {
    const user = await signUp();
    await install(user, 'intake', intake);
    const trigger = await createTrigger(user, 'intake');
    expect((await deliveries(user, 'intake', trigger.id)).data).toEqual([]);

    const started = await deliverSigned(trigger, { title: 'Deploy failed', token: 'body-secret-value' }, 'msg_first');
    expect(started.status).toBe(202);
    const replayed = await deliverSigned(trigger, { title: 'Deploy failed', token: 'body-secret-value' }, 'msg_first');
    expect(replayed.body.runId).toBe(started.body.runId);
    expectError(await refusedDelivery(trigger, 'msg_forged'), 401, 'UNAUTHORIZED');
    expectError(await deliverSigned(trigger, { title: 7 }, 'msg_misfit'), 400, 'INVALID_INPUT');

    const page = await deliveries(user, 'intake', trigger.id);
    expect(page.data).toEqual([
      {
        id: expect.stringMatching(/^tdl_\d+$/),
        deliveryId: 'msg_misfit',
        event: null,
        outcome: 'refused',
        status: 400,
        runId: null,
        reason: expect.stringContaining('inputs.title'),
        createdAt: expect.any(String),
      },
      expect.objectContaining({ deliveryId: 'msg_forged', outcome: 'refused', status: 401, runId: null, reason: expect.stringMatching(/signature/) }),
      expect.objectContaining({ deliveryId: 'msg_first', outcome: 'duplicate', status: 202, runId: started.body.runId, reason: null }),
      expect.objectContaining({ deliveryId: 'msg_first', outcome: 'started', status: 202, runId: started.body.runId, reason: null }),
    ]);
    expect(page).toMatchObject({ first_id: page.data[0]!.id, last_id: page.data[3]!.id, has_more: false });
    expect(JSON.stringify(page)).not.toMatch(/body-secret-value|Deploy failed|v1,|whsec_/);
  });

  it('records what GitHub sent: a ping and an event not asked for as ignored, a push as started, each with its event', async () => {
    const user = await signUp();
    await install(user, 'review', reviewer);
    const trigger = await createTrigger(user, 'review', { source: 'github' });
    expect((await deliverGithub(trigger, 'ping', { zen: 'Keep it logically awesome.' }, { delivery: 'gh-ping' })).body.status).toBe('pong');
    const closed = { action: 'closed', number: 7, pull_request: { number: 7 }, repository: { full_name: 'octo/hello' } };
    expect((await deliverGithub(trigger, 'pull_request', closed, { delivery: 'gh-closed' })).body.status).toBe('ignored');
    const push = { ref: 'refs/heads/main', after: 'b'.repeat(40), commits: [], repository: { full_name: 'octo/hello' }, sender: { login: 'ana' } };
    const started = await deliverGithub(trigger, 'push', push, { delivery: 'gh-push' });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect((await deliverGithub(trigger, 'push', push, { delivery: 'gh-forged', secret: 'not the secret' })).status).toBe(401);

    expect(
      (await deliveries(user, 'review', trigger.id)).data.map(({ deliveryId, event, outcome, status, runId }) => ({
        deliveryId,
        event,
        outcome,
        status,
        runId,
      })),
    ).toEqual([
      { deliveryId: 'gh-forged', event: 'push', outcome: 'refused', status: 401, runId: null },
      { deliveryId: 'gh-push', event: 'push', outcome: 'started', status: 202, runId: started.body.runId },
      { deliveryId: 'gh-closed', event: 'pull_request.closed', outcome: 'ignored', status: 200, runId: null },
      { deliveryId: 'gh-ping', event: 'ping', outcome: 'ignored', status: 200, runId: null },
    ]);
  });

  it('keeps the last 100 deliveries of a trigger, paged by cursor; other triggers keep their own', async () => {
    const user = await signUp();
    await install(user, 'intake', intake);
    const busy = await createTrigger(user, 'intake');
    const quiet = await createTrigger(user, 'intake');
    expect((await refusedDelivery(quiet, 'quiet-0')).status).toBe(401);
    for (let i = 0; i < 105; i++) expect((await refusedDelivery(busy, `busy-${i}`)).status).toBe(401);

    const pages: Page[] = [await deliveries(user, 'intake', busy.id, '?limit=40')];
    while (pages.at(-1)!.has_more) pages.push(await deliveries(user, 'intake', busy.id, `?limit=40&after_id=${pages.at(-1)!.last_id}`));
    expect(pages.map((p) => p.data.length)).toEqual([40, 40, 20]);
    const ids = pages.flatMap((p) => p.data.map((e) => e.deliveryId));
    expect(ids).toEqual(Array.from({ length: 100 }, (_, i) => `busy-${104 - i}`));
    // Back from the last page: the page before it.
    const back = await deliveries(user, 'intake', busy.id, `?limit=40&before_id=${pages[2]!.first_id}`);
    expect(back.data.map((e) => e.deliveryId)).toEqual(pages[1]!.data.map((e) => e.deliveryId));
    expect((await deliveries(user, 'intake', quiet.id)).data.map((e) => e.deliveryId)).toEqual(['quiet-0']);
  });

  it('answers 404 to another workspace, and under another workflow’s slug; reading asks library:read', async () => {
    const owner = await signUp();
    const other = await signUp();
    await install(owner, 'intake', intake);
    await install(owner, 'review', reviewer);
    await install(other, 'intake', intake);
    const trigger = await createTrigger(owner, 'intake');
    expect((await refusedDelivery(trigger, 'msg_owner')).status).toBe(401);
    expectError(await call(`/api/v1/workflows/intake/triggers/${trigger.id}/deliveries`, { token: other.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/workflows/review/triggers/${trigger.id}/deliveries`, { token: owner.token }), 404, 'NOT_FOUND');
    const reader = await createKey(owner, ['library:read']);
    expect((await deliveries({ apiKey: reader.key }, 'intake', trigger.id)).data).toHaveLength(1);
    const writer = await createKey(owner, ['workflow:run']);
    expectError(await call(`/api/v1/workflows/intake/triggers/${trigger.id}/deliveries`, { apiKey: writer.key }), 403, 'FORBIDDEN');
  });

  it('goes with the activity window, and with the trigger or its workflow', async () => {
    freezeClock();
    const user = await signUp();
    await install(user, 'intake', intake);
    // Keys, not the session, which would end in the months the clock moves.
    const reader = { apiKey: (await createKey(user, ['library:read'])).key };
    const owner = { apiKey: (await createKey(user, ['*'])).key };
    const trigger = await createTrigger(user, 'intake');
    expect((await refusedDelivery(trigger, 'old')).status).toBe(401);
    advanceClock(80 * DAY);
    expect((await refusedDelivery(trigger, 'recent')).status).toBe(401);
    advanceClock(10 * DAY + 1);
    await runHousekeeping();
    expect((await deliveries(reader, 'intake', trigger.id)).data.map((e) => e.deliveryId)).toEqual(['recent']);
    // A shorter activity window applies to the log too.
    const shortened = await call(`/api/v1/workspaces/${user.workspaceId}/retention`, { ...owner, method: 'PUT', body: { activity: 5 } });
    expect(shortened.status, JSON.stringify(shortened.body)).toBe(200);
    await runHousekeeping();
    expect((await deliveries(reader, 'intake', trigger.id)).data).toEqual([]);
    resetClock();

    const db = await shardD1(user.workspaceId);
    const rowsOf = async (id: string) =>
      (await db.prepare('SELECT count(*) AS n FROM trigger_deliveries WHERE trigger_id = ?').bind(id).first<{ n: number }>())!.n;
    const deleted = await createTrigger(user, 'intake');
    const uninstalled = await createTrigger(user, 'intake');
    for (const t of [deleted, uninstalled]) expect((await refusedDelivery(t, 'kept')).status).toBe(401);
    expect(await rowsOf(deleted.id)).toBe(1);
    expect((await call(`/api/v1/workflows/intake/triggers/${deleted.id}`, { method: 'DELETE', token: user.token })).status).toBe(200);
    expect(await rowsOf(deleted.id)).toBe(0);
    expect(await rowsOf(uninstalled.id)).toBe(1);
    expect((await call('/api/v1/workflows/intake', { method: 'DELETE', token: user.token })).status).toBe(200);
    expect(await rowsOf(uninstalled.id)).toBe(0);
  });
});
