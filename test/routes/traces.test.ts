import { describe, expect, it } from 'vitest';
import { traceRunStarted } from '../../workers/services/traces';
import { call, createKey, expectError, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { shardD1, shardDbFor } from '../helpers/shards';
import { signUpWithSummarizer as setup } from '../helpers/skills';

const run = async (user: TestUser, input: string, headers: Record<string, string> = {}) => {
  const res = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input }, headers });
  expect(res.status).toBe(200);
  await waitForStatus(user, res.body.executionId, 'completed');
  return res.body.executionId as string;
};
const rerun = async (user: TestUser, id: string, input: string, path = 'rerun') => {
  const res = await call(`/api/v1/executions/${id}/${path}`, { token: user.token, body: { input } });
  expect(res.status).toBe(200);
  await waitForStatus(user, res.body.executionId, 'completed');
  return res.body.executionId as string;
};
const traces = (user: TestUser, query = '') => call(`/api/v1/traces${query}`, { token: user.token });
const turns = (user: TestUser, id: string, query = '') => call(`/api/v1/traces/${id}/events${query}`, { token: user.token });
const append = (user: TestUser, id: string, events: unknown[], headers: Record<string, string> = {}) =>
  call(`/api/v1/traces/${id}/events`, { token: user.token, body: { events }, headers });
async function costOf(user: TestUser, id: string) {
  const shard = await shardD1(user.workspaceId);
  const row = await shard
    .prepare('SELECT cost FROM executions WHERE id = ?')
    .bind(Number(id.slice(5)))
    .first<{ cost: number }>();
  return row!.cost / 100;
}

describe('the trace index', () => {
  it('collapses a rerun into its parent’s trace, gives a remix its own, and accumulates cost over the lineage', async () => {
    const user = await setup();
    const first = await run(user, 'We ship Friday.');
    const list1 = await traces(user);
    expect(list1.status).toBe(200);
    expect(list1.body.items).toHaveLength(1);
    const trace = list1.body.items[0];
    expect(trace).toEqual({
      id: expect.any(String),
      kind: 'execution',
      title: 'Meeting Summarizer: We ship Friday.',
      status: 'completed',
      actor: { userId: user.user.id, apiKeyId: null, agentSlug: null },
      target: { kind: 'execution', executionId: first },
      totalCost: await costOf(user, first),
      startedAt: expect.any(String),
      lastActivityAt: expect.any(String),
      traceKey: expect.any(String),
    });
    expect(trace.totalCost).toBeGreaterThan(0);

    const second = await rerun(user, first, 'Shorter.');
    const afterRerun = await traces(user);
    expect(afterRerun.body.items).toHaveLength(1);
    const collapsed = afterRerun.body.items[0];
    expect(collapsed).toMatchObject({ id: trace.id, status: 'completed', target: { executionId: second } });
    expect(collapsed.totalCost).toBeCloseTo((await costOf(user, first)) + (await costOf(user, second)), 2);
    expect(Date.parse(collapsed.lastActivityAt)).toBeGreaterThanOrEqual(Date.parse(trace.lastActivityAt));

    const remix = await rerun(user, first, 'As a haiku.', 'remix');
    const afterRemix = await traces(user);
    expect(afterRemix.body.items).toHaveLength(2);
    expect(afterRemix.body.items[0]).toMatchObject({ target: { executionId: remix }, totalCost: await costOf(user, remix) });
    expect(afterRemix.body.items[0].traceKey).not.toBe(trace.traceKey);
    expect((await call(`/api/v1/traces/${trace.id}`, { token: user.token })).body.totalCost).toBe(collapsed.totalCost);
  });

  it('lands POST /executions with sessionId on that trace, records API key and agent slug, and refuses unknown keys', async () => {
    const user = await setup();
    const key = await createKey(user, ['tool:execute', 'trace:read', 'library:read']);
    const first = await run(user, 'Kick-off notes.');
    const [trace] = (await traces(user)).body.items;
    const created = await call('/api/v1/executions', {
      apiKey: key.key,
      headers: { 'x-agent-slug': 'notes-bot' },
      body: { skill_slug: 'meeting-summarizer', input: 'Follow-up.', sessionId: trace.traceKey },
    });
    expect(created.status).toBe(201);
    const landed = (await call(`/api/v1/traces/${trace.id}`, { apiKey: key.key })).body;
    expect(landed).toMatchObject({ status: 'idle', target: { executionId: created.body.id }, actor: { apiKeyId: key.id, agentSlug: 'notes-bot' } });
    expect(landed.totalCost).toBe(await costOf(user, first));
    expect((await traces(user)).body.items).toHaveLength(1);

    const unknown = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: 'x', sessionId: 'no-such-trace' } });
    expect(expectError(unknown, 404, 'NOT_FOUND').details?.field).toBe('sessionId');
    const stranger = await setup();
    expectError(
      await call('/api/v1/executions', { token: stranger.token, body: { skill_slug: 'meeting-summarizer', input: 'x', sessionId: trace.traceKey } }),
      404,
      'NOT_FOUND',
    );

    expect((await traces(user, `?apiKey=${key.id}`)).body.items).toHaveLength(1);
    expect((await traces(user, '?agent=notes-bot')).body.items).toHaveLength(1);
    expect((await traces(user, '?agent=other-bot')).body.items).toHaveLength(0);
  });
});

describe('runs that cannot start', () => {
  it('leave the trace as it was: a refused rerun keeps the lineage’s status, a refused new run leaves no trace', async () => {
    const user = await setup();
    const first = await run(user, 'Notes.');
    const [before] = (await traces(user)).body.items;
    const busy = await call('/api/v1/skills/meeting-summarizer/run', {
      token: user.token,
      body: { input: 'A long plan. With steps. And more steps. And even more.' },
    });
    const refused = await call(`/api/v1/executions/${first}/rerun`, { token: user.token, body: { input: 'Again.' } });
    expect(refused.body.error.code).toBe('EXECUTION_RUNNING');
    const refusedNew = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'Another.' } });
    expect(refusedNew.body.error).toBe('EXECUTION_RUNNING');
    await waitForStatus(user, busy.body.executionId, 'completed');
    const after = (await traces(user)).body.items;
    expect(after).toHaveLength(2);
    expect(after.find((t: { id: string }) => t.id === before.id)).toMatchObject({
      status: 'completed',
      target: { executionId: first },
      totalCost: before.totalCost,
    });
  });
});

describe('a run that ends before its start is recorded', () => {
  it('keeps the status its end wrote: a late "started" does not make a finished trace running again', async () => {
    const user = await setup();
    const id = await run(user, 'Ship on Friday.');
    const before = (await traces(user)).body.items.find((t: { target: { executionId: string } }) => t.target.executionId === id);
    expect(before.status).toBe('completed');
    await traceRunStarted(await shardDbFor(user.workspaceId), Number(id.slice(5)));
    const after = (await traces(user)).body.items.find((t: { target: { executionId: string } }) => t.target.executionId === id);
    expect(after.status).toBe('completed');
  });
});

describe('turns', () => {
  it('resolves the turns of every run in the lineage with one monotonic seq, and pages them', async () => {
    const user = await setup();
    const first = await run(user, 'We ship Friday. Ana writes the notes.');
    await rerun(user, first, 'Only the decisions.');
    const [trace] = (await traces(user)).body.items;
    const all = (await turns(user, trace.id)).body.items as { seq: number; type: string; payload: any; origin: string }[];
    const types = all.map((t) => t.type);
    expect(types.filter((t) => t === 'user.message')).toHaveLength(2);
    expect(all[0]).toMatchObject({
      type: 'user.message',
      origin: 'producer',
      payload: { content: [{ type: 'text', text: 'We ship Friday. Ana writes the notes.' }] },
    });
    expect(all.find((t) => t.type === 'tool.call')!.payload).toMatchObject({ tool: 'write_artifact' });
    const texts = all.filter((t) => t.type === 'agent.text');
    expect(texts.length).toBeGreaterThanOrEqual(2);
    expect(texts[0]!.payload.text).toContain('Meeting Summarizer');
    const secondUser = all.findLastIndex((t) => t.type === 'user.message');
    expect(all[secondUser]!.payload.content[0].text).toBe('Only the decisions.');
    for (let i = 1; i < all.length; i++) expect(all[i]!.seq).toBeGreaterThan(all[i - 1]!.seq);
    expect(new Set(all.map((t) => t.type))).toEqual(new Set(['user.message', 'agent.thinking', 'tool.call', 'agent.text']));

    // Reads are stable, and afterSeq + limit walk the same sequence.
    expect((await turns(user, trace.id)).body.items).toEqual(all);
    const walked: typeof all = [];
    for (let after = 0; ;) {
      const page = (await turns(user, trace.id, `?afterSeq=${after}&limit=2`)).body.items as typeof all;
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(2);
      walked.push(...page);
      after = page.at(-1)!.seq;
    }
    expect(walked).toEqual(all);
  });

  it('appends with allocated and explicit seqs, refuses a re-post with 409, and never overwrites', async () => {
    const user = await setup();
    await run(user, 'Notes.');
    const [trace] = (await traces(user)).body.items;
    const produced = (await turns(user, trace.id)).body.items as { seq: number }[];
    const high = produced.at(-1)!.seq;

    const first = await append(user, trace.id, [{ type: 'agent.text', payload: { text: 'Picked up by the reviewer.' } }], { 'x-agent-slug': 'reviewer' });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ appended: 1, lastSeq: expect.any(Number) });
    expect(first.body.lastSeq).toBeGreaterThan(high);

    const explicit = first.body.lastSeq + 5;
    const second = await append(user, trace.id, [{ type: 'tool.result', payload: { ok: true }, seq: explicit }]);
    expect(second.body).toEqual({ appended: 1, lastSeq: explicit });
    expectError(await append(user, trace.id, [{ type: 'tool.result', payload: { ok: false }, seq: explicit }]), 409, 'CONFLICT');
    // A seq inside the producer's range collides too.
    expectError(await append(user, trace.id, [{ type: 'error', payload: {}, seq: produced[0]!.seq }]), 409, 'CONFLICT');
    // All or nothing: one colliding seq writes none of the request.
    expectError(
      await append(user, trace.id, [
        { type: 'agent.text', payload: { text: 'new' } },
        { type: 'tool.result', payload: {}, seq: explicit },
      ]),
      409,
      'CONFLICT',
    );

    const after = (await turns(user, trace.id, `?afterSeq=${high}`)).body.items;
    expect(after).toEqual([
      {
        seq: first.body.lastSeq,
        type: 'agent.text',
        payload: { text: 'Picked up by the reviewer.' },
        actorAgentSlug: 'reviewer',
        at: expect.any(String),
        origin: 'appended',
        executionId: null,
        tokens: null,
        cost: null,
      },
      {
        seq: explicit,
        type: 'tool.result',
        payload: { ok: true },
        actorAgentSlug: null,
        at: expect.any(String),
        origin: 'appended',
        executionId: null,
        tokens: null,
        cost: null,
      },
    ]);
    // The next omitted seq goes above everything, explicit ones included.
    expect((await append(user, trace.id, [{ type: 'agent.thinking', payload: {} }])).body.lastSeq).toBe(explicit + 1);
  });

  it('allocates distinct seqs to concurrent appenders', async () => {
    const user = await setup();
    await run(user, 'Notes.');
    const [trace] = (await traces(user)).body.items;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        append(user, trace.id, [
          { type: 'agent.text', payload: { n: i } },
          { type: 'tool.result', payload: { n: i } },
        ]),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    const appended = ((await turns(user, trace.id, '?limit=500')).body.items as { seq: number; origin: string; payload: { n: number } }[]).filter(
      (t) => t.origin === 'appended',
    );
    expect(appended).toHaveLength(16);
    expect(new Set(appended.map((t) => t.seq)).size).toBe(16);
    // Each request's pair is contiguous.
    for (const r of results)
      expect(appended.find((t) => t.seq === r.body.lastSeq - 1)!.payload.n).toBe(appended.find((t) => t.seq === r.body.lastSeq)!.payload.n);

    // Racing re-posts of one explicit seq: exactly one lands.
    const seq = Math.max(...appended.map((t) => t.seq)) + 10;
    const racing = await Promise.all(Array.from({ length: 4 }, () => append(user, trace.id, [{ type: 'error', payload: {}, seq }])));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
  });

  it('validates appends', async () => {
    const user = await setup();
    await run(user, 'Notes.');
    const [trace] = (await traces(user)).body.items;
    expect(expectError(await append(user, trace.id, []), 400, 'INVALID_INPUT').details?.field).toBe('events');
    expect(expectError(await append(user, trace.id, [{ type: 'agent.dance', payload: {} }]), 400, 'INVALID_INPUT').details?.field).toBe('events.0.type');
    expect(expectError(await append(user, trace.id, [{ type: 'error', payload: {}, seq: 0 }]), 400, 'INVALID_INPUT').details?.field).toBe('events.0.seq');
    expectError(await call(`/api/v1/traces/${trace.id}/events`, { token: user.token, body: {} }), 400, 'INVALID_INPUT');
  });
});

describe('continue, scopes and tenancy', () => {
  it('answers continuation_required with the continue-with call', async () => {
    const user = await setup();
    await run(user, 'Notes.');
    const [trace] = (await traces(user)).body.items;
    const res = await call(`/api/v1/traces/${trace.id}/continue`, { method: 'POST', token: user.token });
    expect(res.body).toEqual({
      status: 'continuation_required',
      traceId: trace.id,
      kind: 'execution',
      traceKey: trace.traceKey,
      continueWith: { method: 'POST', path: '/api/v1/executions', body: { sessionId: trace.traceKey } },
      appendEventsTo: `/api/v1/traces/${trace.id}/events`,
    });
    expect((await traces(user)).body.items).toHaveLength(1);
  });

  it('answers 404 to another workspace, and checks trace:read and trace:write', async () => {
    const user = await setup();
    await run(user, 'Notes.');
    const [trace] = (await traces(user)).body.items;
    const stranger = await signUp();
    expect((await traces(stranger)).body.items).toEqual([]);
    expectError(await call(`/api/v1/traces/${trace.id}`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await turns(stranger, trace.id), 404, 'NOT_FOUND');
    expectError(await append(stranger, trace.id, [{ type: 'error', payload: {} }]), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/traces/${trace.id}/continue`, { method: 'POST', token: stranger.token }), 404, 'NOT_FOUND');

    const reader = await createKey(user, ['trace:read']);
    expect((await call(`/api/v1/traces/${trace.id}/events`, { apiKey: reader.key })).status).toBe(200);
    const denied = await call(`/api/v1/traces/${trace.id}/events`, { apiKey: reader.key, body: { events: [{ type: 'error', payload: {} }] } });
    expect(expectError(denied, 403, 'FORBIDDEN').details?.scope).toBe('trace:write');
    const writer = await createKey(user, ['trace:write']);
    expect((await call(`/api/v1/traces/${trace.id}/events`, { apiKey: writer.key, body: { events: [{ type: 'error', payload: {} }] } })).status).toBe(201);
    expect(expectError(await call('/api/v1/traces', { apiKey: writer.key }), 403, 'FORBIDDEN').details?.scope).toBe('trace:read');
  });
});

describe('the list', () => {
  it('pages with an opaque cursor without gaps or repeats, even while traces change', async () => {
    const user = await setup();
    for (let i = 0; i < 7; i++) {
      const res = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: `Item ${i}.` } });
      expect(res.status).toBe(201);
    }
    const all = (await traces(user)).body.items as { id: string; title: string }[];
    expect(all.map((t) => t.title)).toEqual([6, 5, 4, 3, 2, 1, 0].map((i) => `Meeting Summarizer: Item ${i}.`));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: { items: { id: string }[]; nextCursor: string | null } } = await traces(
        user,
        `?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((t) => t.id));
      cursor = page.body.nextCursor;
      // Activity on a trace already seen does not move it into a later page.
      if (pages++ === 0) await append(user, all[0]!.id, [{ type: 'agent.text', payload: { text: 'touch' } }]);
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(all.map((t) => t.id));

    expect((await traces(user, '?limit=0')).body.items).toHaveLength(1);
    expect((await traces(user, '?limit=1000')).body.items).toHaveLength(7);
    expect(expectError(await traces(user, '?cursor=not-a-cursor'), 400, 'INVALID_INPUT').details?.field).toBe('cursor');
  });

  it('filters by kind, status and lastActivityAt', async () => {
    const user = await setup();
    await run(user, 'Done.');
    await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: 'Waiting.' } });
    expect((await traces(user, '?status=completed')).body.items).toHaveLength(1);
    expect((await traces(user, '?status=idle')).body.items).toHaveLength(1);
    expect((await traces(user, '?kind=execution')).body.items).toHaveLength(2);
    expect((await traces(user, '?kind=chat')).body.items).toHaveLength(0);
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect((await traces(user, `?since=${today}`)).body.items).toHaveLength(2);
    expect((await traces(user, `?until=${today}`)).body.items).toHaveLength(0);
    expect((await traces(user, `?since=${today}&until=${tomorrow}`)).body.items).toHaveLength(2);
    expect((await traces(user, `?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.items).toHaveLength(0);
    expect(expectError(await traces(user, '?since=yesterday'), 400, 'INVALID_INPUT').details?.field).toBe('since');
    expect(expectError(await traces(user, '?kind=email'), 400, 'INVALID_INPUT').details?.field).toBe('kind');
  });
});
