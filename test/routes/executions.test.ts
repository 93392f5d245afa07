import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { globalDbOf } from '../../workers/lib/db';
import { BASE, call, expectError, sessionPrincipal, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { shardD1, shardDbFor } from '../helpers/shards';
import { turnOf } from '../helpers/turns';
import { runActor } from '../../workers/auth/actor';
import { settle } from '../../workers/services/credits';
import { jsonEvents, sseEvents, sseReader } from '../helpers/sse';
import { closeTurn, saveArtifact, storeArtifact } from '../../workers/services/execution-runs';
import { toolCallKey } from '../../workers/services/run-tool-calls';
import { SUMMARIZER as SKILL, signUpWithSummarizer as setup } from '../helpers/skills';

const create = (user: TestUser, input = 'We ship Friday. Ana writes the notes.') =>
  call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input } });
const message = (user: TestUser, id: string, text: string) =>
  call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } });

/** Reads the whole stream (it ends after session.status_idle) and parses its frames. */
async function readStream(user: TestUser, id: string) {
  const token = await call(`/api/v1/executions/${id}/stream-token`, { token: user.token });
  const url = new URL(token.body.sseUrl);
  const res = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`);
  return sseEvents(await res.text()).map(({ id, ...event }) => ({ seq: id, ...event }));
}

describe('the three-step flow on the local provider', () => {
  it('creates an idle execution, streams the run from the start, and completes it', async () => {
    const user = await setup();
    const created = await create(user);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^exec_\d+$/),
      skill_slug: 'meeting-summarizer',
      skill_name: 'Meeting Summarizer',
      status: 'idle',
    });
    const id = created.body.id;

    const posted = await message(user, id, 'We ship Friday. Ana writes the notes.');
    expect(posted.status).toBe(200);
    expect(posted.body.data.map((e: { type: string; sequence: number }) => [e.type, e.sequence])).toEqual([
      ['user.message', 1],
      ['session.status_running', 2],
    ]);

    const frames = await readStream(user, id);
    const types = frames.map((f) => f.type);
    expect(types.slice(0, 6)).toEqual(['user.message', 'session.status_running', 'agent.info', 'agent.thinking', 'span.model_request_end', 'agent.tool_use']);
    expect(types.slice(-3)).toEqual(['span.model_request_end', 'execution.result', 'session.status_idle']);
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
    expect(frames.at(-1)!.payload).toEqual({ stop_reason: { type: 'end_turn' } });
    const result = frames.at(-2)!.payload;
    expect(result).toMatchObject({ summary: expect.stringContaining('## Meeting Summarizer'), tokenUsage: { input_tokens: expect.any(Number) } });
    expect(result.cost).toBeGreaterThan(0);

    const status = await waitForStatus(user, id, 'completed');
    expect(status).toMatchObject({ executionId: id, skillSlug: 'meeting-summarizer', cost: result.cost });
    expect(status.outputBlocks).toEqual([{ type: 'text', text: expect.stringContaining('- We ship Friday.') }]);
    expect((await call(`/api/v1/executions/${id}/status?blocksAfter=1`, { token: user.token })).body.outputBlocks).toEqual([]);

    const shard = await shardD1(user.workspaceId);
    const stored = await shard
      .prepare('SELECT name FROM artifacts WHERE execution_id = ? ORDER BY id')
      .bind(Number(id.slice(5)))
      .all();
    expect(stored.results.map((r) => r.name)).toEqual(['notes.md', 'output.md']);
  });

  it("has the turn's bookkeeping in place when its stream ends: status, cost, output.md and the charge", async () => {
    const user = await setup();
    const id = (await create(user)).body.id;
    await message(user, id, 'We ship Friday. Ana writes the notes.');
    const { cost } = (await readStream(user, id)).find((f) => f.type === 'execution.result')!.payload;
    // Read at once, not polled.
    const status = await call(`/api/v1/executions/${id}/status`, { token: user.token });
    expect(status.body).toMatchObject({ status: 'completed', cost });
    const artifacts = await call(`/api/v1/artifacts?executionId=${id}`, { token: user.token });
    expect(artifacts.body.data.map((a: { name: string }) => a.name)).toContain('output.md');
    const ledger = await call('/api/v1/billing/transactions', { token: user.token });
    expect(ledger.body.transactions.filter((t: { executionId: string | null }) => t.executionId === id)).toEqual([
      expect.objectContaining({ type: 'usage', amount: -cost }),
    ]);
  });

  it('applies the state rules: a finished execution takes no new message', async () => {
    const user = await setup();
    const id = (await create(user)).body.id;
    await message(user, id, 'First.');
    await readStream(user, id);
    await waitForStatus(user, id, 'completed');
    expectError(await message(user, id, 'Again?'), 409, 'CONFLICT');
    expectError(await call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.interrupt' }] } }), 409, 'CONFLICT');
  });

  it('lets MAX_ACTIVE_EXECUTIONS (1) run at a time in a workspace', async () => {
    const user = await setup();
    const a = (await create(user)).body.id;
    const b = (await create(user)).body.id;
    const [first, second] = await Promise.all([message(user, a, 'One.'), message(user, b, 'Two.')]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual([200, 409]);
    const refused = first.status === 409 ? first : second;
    const error = expectError(refused, 409, 'EXECUTION_RUNNING');
    // The refusal names the execution that holds the slot and says when to try again.
    expect(error.details).toEqual({ executionId: first.status === 409 ? b : a, retryAfterSeconds: expect.any(Number) });
    expect(refused.headers.get('retry-after')).toBe(String(error.details!.retryAfterSeconds));
  });
});

describe('interrupt', () => {
  it('stops a run mid-stream with stop reason interrupt; the execution is idle and takes a new message', async () => {
    const user = await setup();
    const id = (await create(user)).body.id;
    await message(user, id, 'Plan the offsite. Book the venue. Invite the team. Order food.');

    const token = await call(`/api/v1/executions/${id}/stream-token`, { token: user.token });
    const url = new URL(token.body.sseUrl);
    const stream = sseReader((await exports.default.fetch(`${BASE}${url.pathname}${url.search}`)).body!);
    await stream.until((messages) => jsonEvents(messages).some((e) => e.type === 'agent.message'));

    const interrupted = await call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.interrupt' }] } });
    expect(interrupted.status).toBe(200);
    expect(interrupted.body.data.map((e: { type: string }) => e.type)).toEqual(['user.interrupt']);
    const frames = jsonEvents(await stream.toEnd());
    expect(frames.at(-1)).toMatchObject({ type: 'session.status_idle', payload: { stop_reason: { type: 'interrupt' } } });
    // Every frame in order with no gap, and none of the model's words once the interrupt is logged.
    expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => frames[0]!.id! + i));
    const types = frames.map((f) => f.type);
    expect(types.slice(types.indexOf('user.interrupt'))).not.toContain('agent.message');

    const status = await waitForStatus(user, id, 'idle');
    expect(status.outputBlocks).toHaveLength(1);
    expect((await message(user, id, 'Now just the venue.')).status).toBe(200);
    await waitForStatus(user, id, 'completed');
  });
});

describe('validation and tenancy', () => {
  it('rejects bad bodies and unknown skills, and hides other workspaces', async () => {
    const user = await setup();
    const stranger = await signUp();
    expect(
      expectError(await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: '  ' } }), 400, 'INVALID_INPUT')
        .details?.field,
    ).toBe('input');
    expectError(await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'not-installed', input: 'x' } }), 404, 'NOT_FOUND');
    const id = (await create(user)).body.id;
    expect(
      expectError(await call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.dance' }] } }), 400, 'INVALID_INPUT')
        .details?.field,
    ).toBe('events.0.type');
    expectError(await call(`/api/v1/executions/${id}/status`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await message(stranger, id, 'hi'), 404, 'NOT_FOUND');
  });
});

describe('artifacts of a run', () => {
  it('lists, shows, downloads and deletes what a run produced, only in its workspace', async () => {
    const user = await setup();
    const stranger = await signUp();
    const id = (await create(user)).body.id;
    await message(user, id, 'Ship on Friday. Ana writes notes.');
    await readStream(user, id);
    await waitForStatus(user, id, 'completed');

    const list = await call('/api/v1/artifacts', { token: user.token });
    expect(list.body.data.map((a: { name: string }) => a.name)).toEqual(['output.md', 'notes.md']);
    const output = list.body.data[0];
    expect(output).toEqual({
      id: expect.stringMatching(/^art_\d+$/),
      executionId: id,
      name: 'output.md',
      contentType: 'text/markdown; charset=utf-8',
      size: expect.any(Number),
      createdAt: expect.any(String),
    });
    expect((await call(`/api/v1/artifacts/${output.id}`, { token: user.token })).body).toEqual(output);

    const download = await exports.default.fetch(`${BASE}/api/v1/artifacts/${output.id}/download`, { headers: { 'x-auth-token': user.token } });
    expect(download.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="output.md"');
    const text = await download.text();
    expect(text).toContain('## Meeting Summarizer');
    expect(new TextEncoder().encode(text).length).toBe(output.size);

    expectError(await call(`/api/v1/artifacts/${output.id}`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/artifacts/${output.id}/download`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/artifacts/${output.id}`, { method: 'DELETE', token: stranger.token }), 404, 'NOT_FOUND');

    expect((await call(`/api/v1/artifacts/${output.id}`, { method: 'DELETE', token: user.token })).body).toEqual({ success: true });
    expectError(await call(`/api/v1/artifacts/${output.id}`, { token: user.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/artifacts', { token: user.token })).body.data).toHaveLength(1);
  });
});

describe('POST /api/v1/skills/:slug/run', () => {
  const run = (user: TestUser, body: unknown, headers?: Record<string, string>) =>
    call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body, headers });

  it('creates and starts a run, answering started with the stream path', async () => {
    const user = await setup();
    const res = await run(user, { input: 'Ship Friday.', interface: 'ci-bot' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      executionId: expect.stringMatching(/^exec_\d+$/),
      skillName: 'Meeting Summarizer',
      status: 'started',
      message: expect.any(String),
      sseUrl: `/streams/executions/${res.body.executionId}`,
    });
    const frames = await readStream(user, res.body.executionId);
    expect(frames.at(-1)!.type).toBe('session.status_idle');
    await waitForStatus(user, res.body.executionId, 'completed');
  });

  it('gives the model its attachments with the input: each as a section, its text or its address', async () => {
    const user = await setup();
    const res = await run(user, {
      input: 'Summarise the budget.',
      attachments: [
        { name: 'notes.md', content: 'The budget is 40k.' },
        { name: 'spec.pdf', url: 'https://example.com/spec.pdf' },
      ],
    });
    expect(res.status).toBe(200);
    const frames = await readStream(user, res.body.executionId);
    const asked = frames.find((f) => f.type === 'user.message')!.payload as { content: { text: string }[] };
    expect(asked.content[0]!.text).toBe(
      'Summarise the budget.\n\n## Input files\n\n### notes.md\n\nThe budget is 40k.\n\n### spec.pdf\n\nAt https://example.com/spec.pdf',
    );
    await waitForStatus(user, res.body.executionId, 'completed');
    for (const [attachments, field] of [
      [[{ name: 'empty.md' }], 'attachments.0'],
      [
        [
          { name: 'a', content: 'x'.repeat(60_000) },
          { name: 'b', content: 'y'.repeat(60_000) },
        ],
        'attachments',
      ],
    ] as const) {
      const refused = await run(user, { input: 'x', attachments });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ error: 'INVALID_INPUT', field });
    }
  });

  it('answers its own failures in the flat legacy shape with details.serviceCode, auth in the envelope', async () => {
    const user = await setup();
    const invalid = await run(user, { input: '' });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({
      error: 'INVALID_INPUT',
      message: expect.any(String),
      field: 'input',
      details: { serviceCode: 'INVALID_INPUT', field: 'input' },
    });
    const missing = await call('/api/v1/skills/not-installed/run', { token: user.token, body: { input: 'x' } });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: 'NOT_FOUND', details: { serviceCode: 'NOT_FOUND' } });
    expectError(await call('/api/v1/skills/meeting-summarizer/run', { body: { input: 'x' } }), 401, 'UNAUTHORIZED');

    const first = await run(user, { input: 'One.' });
    const busy = await run(user, { input: 'Two.' });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ error: 'EXECUTION_RUNNING', details: { serviceCode: 'EXECUTION_RUNNING' } });
    await waitForStatus(user, first.body.executionId, 'completed');
    const history = await call('/api/v1/executions', { token: user.token });
    expect(history.body.items).toHaveLength(1);
  });

  it('honours idempotency-key: the retry replays the same execution', async () => {
    const user = await setup();
    const headers = { 'idempotency-key': 'run-once' };
    const first = await run(user, { input: 'Once.' }, headers);
    const again = await run(user, { input: 'Once.' }, headers);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    await waitForStatus(user, first.body.executionId, 'completed');
  });
});

describe('cancel and history', () => {
  it('cancels a working run to idle, and is a no-op otherwise', async () => {
    const user = await setup();
    const started = await call('/api/v1/skills/meeting-summarizer/run', {
      token: user.token,
      body: { input: 'A long plan. With steps. And more steps. And even more.' },
    });
    const id = started.body.executionId;
    const cancelled = await call(`/api/v1/executions/${id}/cancel`, { method: 'POST', token: user.token });
    expect(cancelled.body).toEqual({ success: true, message: expect.any(String), processKilled: true, actualStatus: 'idle' });
    await waitForStatus(user, id, 'idle');
    const again = await call(`/api/v1/executions/${id}/cancel`, { method: 'POST', token: user.token });
    expect(again.body).toMatchObject({ processKilled: false, actualStatus: 'idle' });
  });

  it('lists history in the offset form with filters, and the cursor form with after_id', async () => {
    const user = await setup();
    const ids: string[] = [];
    for (const [source, iface] of [
      ['api', 'api'],
      ['mcp', 'mcp-cursor'],
      ['api', 'ci-bot'],
    ]) {
      const res = await call('/api/v1/executions', {
        token: user.token,
        body: { skill_slug: 'meeting-summarizer', input: `from ${iface}`, source, interface: iface },
      });
      ids.push(res.body.id);
    }
    const all = await call('/api/v1/executions', { token: user.token });
    expect(all.body).toMatchObject({ hasMore: false, offset: 0, limit: 10 });
    expect(all.body.items.map((i: { executionId: string }) => i.executionId)).toEqual([...ids].reverse());
    expect(all.body.items[0]).toMatchObject({
      id: Number(ids[2]!.slice(5)),
      skillSlug: 'meeting-summarizer',
      status: 'idle',
      source: 'api',
      interface: 'ci-bot',
      inputText: 'from ci-bot',
      completedAt: null,
    });

    const mcp = await call('/api/v1/executions?channels=mcp', { token: user.token });
    expect(mcp.body.items.map((i: { executionId: string }) => i.executionId)).toEqual([ids[1]]);
    const bots = await call('/api/v1/executions?interfaces=ci-bot,mcp-cursor', { token: user.token });
    expect(bots.body.items).toHaveLength(2);
    const paged = await call('/api/v1/executions?limit=1&offset=1', { token: user.token });
    expect(paged.body).toMatchObject({ hasMore: true, items: [{ executionId: ids[1] }] });

    const cursor = await call(`/api/v1/executions?limit=2&after_id=${ids[2]}`, { token: user.token });
    expect(cursor.body).toMatchObject({ first_id: ids[1], last_id: ids[0], has_more: false });
  });
});

describe('rerun and remix', () => {
  const lineageOf = async (user: TestUser, id: string) =>
    (await shardD1(user.workspaceId))
      .prepare('SELECT parent_execution_id AS parent, trace_key AS traceKey FROM executions WHERE id = ?')
      .bind(Number(id.slice(5)))
      .first<{ parent: number | null; traceKey: string }>();

  it('reruns in the same lineage and remixes into a new one', async () => {
    const user = await setup();
    const first = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'Original.' } });
    const parentId = first.body.executionId;
    await waitForStatus(user, parentId, 'completed');

    const rerun = await call(`/api/v1/executions/${parentId}/rerun`, { token: user.token, body: { input: 'Shorter, please.' } });
    expect(rerun.status).toBe(200);
    expect(rerun.body).toMatchObject({
      parentExecutionId: parentId,
      skillName: 'Meeting Summarizer',
      status: 'started',
      executionId: expect.stringMatching(/^exec_\d+$/),
    });
    await waitForStatus(user, rerun.body.executionId, 'completed');

    const remix = await call(`/api/v1/executions/${parentId}/remix`, { token: user.token, body: { input: 'As a haiku.' } });
    expect(remix.body.parentExecutionId).toBe(parentId);
    await waitForStatus(user, remix.body.executionId, 'completed');

    const parent = await lineageOf(user, parentId);
    expect(await lineageOf(user, rerun.body.executionId)).toEqual({ parent: Number(parentId.slice(5)), traceKey: parent!.traceKey });
    const remixed = await lineageOf(user, remix.body.executionId);
    expect(remixed!.parent).toBe(Number(parentId.slice(5)));
    expect(remixed!.traceKey).not.toBe(parent!.traceKey);
  });

  it("answers errors in the envelope with details.serviceCode (not the run route's flat shape), and 404 across workspaces", async () => {
    const user = await setup();
    const stranger = await signUp();
    const id = (await create(user)).body.id;
    const empty = await call(`/api/v1/executions/${id}/rerun`, { token: user.token, body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({
      error: { code: 'INVALID_INPUT', message: expect.any(String), details: expect.objectContaining({ field: 'input', serviceCode: 'INVALID_INPUT' }) },
    });
    const foreign = await call(`/api/v1/executions/${id}/remix`, { token: stranger.token, body: { input: 'x' } });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String), details: { serviceCode: 'NOT_FOUND' } } });
  });
});

describe('surviving eviction', () => {
  const stubOf = (id: string) => env.EXECUTION_SESSION.getByName(id);
  const idOf = (id: string) => Number(id.slice(5));
  const NOTES_CALL = { type: 'tool_use', id: 'call-1', name: 'write_artifact', input: { name: 'notes.md', content: '# Notes' } };
  /** A lost turn's conversation up to the model asking for `notes.md`: the user's message and that call. */
  const NOTES_ROUND = [
    { role: 'user', content: [{ type: 'text', text: 'A plan with several steps. Step one. Step two.' }] },
    { role: 'assistant', content: [NOTES_CALL] },
  ];

  /**
   * What an eviction leaves when it strikes a working turn: the turn recorded in storage (and,
   * past its first model request, a checkpoint), the execution `working` in D1, and no run in
   * memory. Built on a finished execution so that no real run races the test.
   */
  async function loseTurn(
    user: TestUser,
    checkpoint?: { messages: unknown[]; usage: { inputTokens: number; outputTokens: number }; round?: { results: unknown[] } },
  ) {
    const id = (await create(user)).body.id;
    await message(user, id, 'Warm up.');
    await waitForStatus(user, id, 'completed');
    const before = (await stubOf(id).events(0)).length;
    const turnKey = `${id}:lost`;
    const input = turnOf(user, {
      executionId: idOf(id),
      actor: runActor(sessionPrincipal(user), { kind: 'execution', id }),
      turnKey,
      budget: { amount: 20_000, limit: 'turn' },
      skillName: SKILL.name,
      skillSlug: 'meeting-summarizer',
      system: SKILL.prompt,
      text: 'A plan with several steps. Step one. Step two.',
    });
    await runInDurableObject(stubOf(id), (_, state) => {
      state.storage.kv.put('turn', { input, startedAt: now() });
      if (checkpoint) state.storage.kv.put('checkpoint', { turnKey, ...checkpoint });
    });
    const shard = await shardD1(user.workspaceId);
    await shard
      .prepare("UPDATE executions SET status = 'working', turn_key = ?, claimed_at = ?, completed_at = NULL WHERE id = ?")
      .bind(turnKey, now(), idOf(id))
      .run();
    await evictDurableObject(stubOf(id));
    return {
      id,
      turnKey,
      newEvents: async () => (await stubOf(id).events(0)).slice(before),
      outputs: () => shard.prepare('SELECT name FROM artifacts WHERE execution_id = ? ORDER BY id').bind(idOf(id)).all(),
    };
  }

  /** Records the loop's outcome in a lost turn's checkpoint, as a turn cut off after its model work ended has it (with `closing`, the state of its close). */
  const endModelWork = (id: string, closing: Record<string, unknown> = {}) =>
    runInDurableObject(stubOf(id), (_, state) => {
      const checkpoint = state.storage.kv.get<Record<string, unknown>>('checkpoint')!;
      state.storage.kv.put('checkpoint', { ...checkpoint, ended: { stopReason: 'end_turn', text: 'Done.', model: 'local-1', ownKey: false }, ...closing });
    });

  it('resumes a turn cut off by an eviction when the heartbeat fires, and completes it', async () => {
    const user = await setup();
    const lost = await loseTurn(user);
    expect(await runDurableObjectAlarm(stubOf(lost.id))).toBe(true);
    await waitForStatus(user, lost.id, 'completed');
    const events = await lost.newEvents();
    expect(events[0]).toMatchObject({ type: 'agent.info', payload: { message: 'The run was interrupted by a restart and resumes now.' } });
    // Run again from the start: the artifact tool, then the answer.
    expect(events.filter((e) => e.type === 'agent.tool_use')).toHaveLength(1);
    expect(events.map((e) => e.type).slice(-2)).toEqual(['execution.result', 'session.status_idle']);
    expect(events.at(-1)!.payload).toEqual({ stop_reason: { type: 'end_turn' } });
  });

  it('resumes a cut-off turn as soon as its stream is opened, without waiting for the heartbeat', async () => {
    const user = await setup();
    const lost = await loseTurn(user);
    const frames = await readStream(user, lost.id);
    expect(frames.some((f) => f.type === 'agent.info' && f.payload.message === 'The run was interrupted by a restart and resumes now.')).toBe(true);
    expect(frames.at(-1)).toMatchObject({ type: 'session.status_idle', payload: { stop_reason: { type: 'end_turn' } } });
    expect((await waitForStatus(user, lost.id, 'completed')).status).toBe('completed');
  });

  it('resumes a cut-off turn as soon as its status is read, without waiting for the heartbeat', async () => {
    const user = await setup();
    const lost = await loseTurn(user); // no alarm is set: only a reader can wake it
    expect((await waitForStatus(user, lost.id, 'completed')).status).toBe('completed');
    const events = await lost.newEvents();
    expect(events[0]).toMatchObject({ type: 'agent.info', payload: { message: 'The run was interrupted by a restart and resumes now.' } });
    expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', payload: { stop_reason: { type: 'end_turn' } } });
  });

  it('answers the resumed text once: what the cut-off request had streamed is superseded, not prepended', async () => {
    const user = await setup();
    const lost = await loseTurn(user);
    // What the turn had streamed when it was cut off: its opening events and half an answer.
    await stubOf(lost.id).append([
      { type: 'user.message', payload: { content: [{ type: 'text', text: 'A plan with several steps. Step one. Step two.' }] } },
      { type: 'session.status_running', payload: {} },
      { type: 'agent.message', payload: { content: [{ type: 'text', text: 'HALF AN ANSWER ' }] } },
    ]);
    expect(await runDurableObjectAlarm(stubOf(lost.id))).toBe(true);
    await waitForStatus(user, lost.id, 'completed');
    const notice = (await lost.newEvents()).find((e) => e.type === 'agent.info')!;
    expect(notice.payload).toEqual({ message: 'The run was interrupted by a restart and resumes now.', resumesAfter: notice.seq - 2 });
    const blocks = (await call(`/api/v1/executions/${lost.id}/status`, { token: user.token })).body.outputBlocks;
    expect(blocks.at(-1).text).toMatch(/^## /);
    expect(blocks.at(-1).text).not.toContain('HALF AN ANSWER');
  });

  it('goes on from the last checkpoint: a tool the cut-off turn already called is not called again', async () => {
    const user = await setup();
    const lost = await loseTurn(user, {
      messages: [...NOTES_ROUND, { role: 'user', content: [{ type: 'tool_result', toolUseId: 'call-1', content: 'Saved notes.md' }] }],
      usage: { inputTokens: 1000, outputTokens: 50 },
    });
    expect(await runDurableObjectAlarm(stubOf(lost.id))).toBe(true);
    await waitForStatus(user, lost.id, 'completed');
    const events = await lost.newEvents();
    expect(events.filter((e) => e.type === 'agent.tool_use')).toHaveLength(0);
    const spans = events.filter((e) => e.type === 'span.model_request_end');
    expect(spans).toHaveLength(1);
    // The result counts the request before the eviction and the one after it, once each.
    const usage = spans[0]!.payload.usage as { input_tokens: number; output_tokens: number };
    expect(events.find((e) => e.type === 'execution.result')!.payload.tokenUsage).toEqual({
      input_tokens: 1000 + usage.input_tokens,
      output_tokens: 50 + usage.output_tokens,
    });
    expect((await lost.outputs()).results.map((r) => r.name)).toEqual(['notes.md', 'output.md', 'output.md']);
  });

  it('makes again only the tool call that was under way when the turn was cut off, and indexes its file once', async () => {
    const user = await setup();
    const lost = await loseTurn(user, {
      messages: NOTES_ROUND,
      usage: { inputTokens: 1000, outputTokens: 50 },
      round: { results: [] },
    });
    // The call had written its file when the eviction struck, before the checkpoint that answers it.
    const turn = { actor: sessionPrincipal(user), executionId: idOf(lost.id) };
    const callKey = await toolCallKey(lost.turnKey, NOTES_CALL);
    expect(await saveArtifact(await shardDbFor(user.workspaceId), env.BUCKET, turn, 'notes.md', '# Notes', callKey)).toBe('notes.md');
    expect(await runDurableObjectAlarm(stubOf(lost.id))).toBe(true);
    await waitForStatus(user, lost.id, 'completed');
    const events = await lost.newEvents();
    // The call is made again (with the same id) and the model asked once, for the answer.
    expect(events.filter((e) => e.type === 'agent.tool_use').map((e) => e.payload.label)).toEqual(['notes.md']);
    expect(events.filter((e) => e.type === 'span.model_request_end')).toHaveLength(1);
    expect((await lost.outputs()).results.map((r) => r.name)).toEqual(['notes.md', 'output.md', 'notes.md', 'output.md']);
  });

  it('survives a real eviction at whatever moment it strikes: one end, one notes.md, one output.md, never stuck working', async () => {
    const user = await setup();
    const id = (await create(user)).body.id;
    await message(user, id, 'A plan with several steps. Step one. Step two. Step three.');
    await evictDurableObject(stubOf(id));
    await runDurableObjectAlarm(stubOf(id));
    await waitForStatus(user, id, 'completed');
    const types = (await stubOf(id).events(0)).map((e) => e.type);
    expect(types.filter((t) => t === 'session.status_idle')).toHaveLength(1);
    expect(types.filter((t) => t === 'execution.result')).toHaveLength(1);
    expect(types.at(-1)).toBe('session.status_idle');
    const shard = await shardD1(user.workspaceId);
    const files = await shard.prepare('SELECT name FROM artifacts WHERE execution_id = ? ORDER BY id').bind(idOf(id)).all<{ name: string }>();
    expect(files.results.map((f) => f.name)).toEqual(['notes.md', 'output.md']);
  });

  it('ends a lost turn with error once past the 65-minute cap', async () => {
    const user = await setup();
    const lost = await loseTurn(user);
    advanceClock(66 * 60_000);
    try {
      await runDurableObjectAlarm(stubOf(lost.id));
      await waitForStatus(user, lost.id, 'failed');
      expect((await lost.newEvents()).at(-1)).toMatchObject({ type: 'session.status_idle', payload: { stop_reason: { type: 'error' } } });
    } finally {
      resetClock();
    }
  });

  it('finishes, not fails, a turn whose model work had ended before it was cut off, even past the cap', async () => {
    const user = await setup();
    const lost = await loseTurn(user, { messages: [], usage: { inputTokens: 10, outputTokens: 5 } });
    // The loop's outcome was recorded; only output.md, settlement and the D1 record were left.
    await endModelWork(lost.id);
    advanceClock(66 * 60_000);
    try {
      await runDurableObjectAlarm(stubOf(lost.id));
      await waitForStatus(user, lost.id, 'completed');
      const events = await lost.newEvents();
      expect(events.map((e) => e.type)).toEqual(['agent.info', 'execution.result', 'session.status_idle']);
      expect(events[1]!.payload).toMatchObject({ summary: 'Done.', tokenUsage: { input_tokens: 10, output_tokens: 5 } });
      expect((await lost.outputs()).results.map((r) => r.name)).toEqual(['notes.md', 'output.md', 'output.md']);
    } finally {
      resetClock();
    }
  });
  it('does not close a turn twice: one cut off after its closing batch landed only ends its stream', async () => {
    const user = await setup();
    const lost = await loseTurn(user, { messages: [], usage: { inputTokens: 10, outputTokens: 5 } });
    const turnKey = `${lost.id}:lost`;
    const shard = await shardD1(user.workspaceId);
    const totals = async () =>
      (await shard
        .prepare('SELECT cost, input_tokens AS input, output_tokens AS output FROM executions WHERE id = ?')
        .bind(idOf(lost.id))
        .first<{ cost: number; input: number; output: number }>())!;
    const before = await totals();
    // The batch landed (output.md's row, the settlement, the record); the object was cut off before it noted that.
    const output = await storeArtifact(env.BUCKET, { executionId: idOf(lost.id), actor: sessionPrincipal(user) }, 'output.md', 'Done.');
    const settlement = { userId: user.user.id, turnKey, executionId: lost.id, cost: 37, description: 'closed before the cut' };
    const totalsOfTurn = { inputTokens: 10, outputTokens: 5, elapsedMs: 1 };
    expect(
      await closeTurn(await shardDbFor(user.workspaceId), globalDbOf(env), {
        executionId: idOf(lost.id),
        turnKey,
        reason: 'end_turn',
        settlement,
        totals: totalsOfTurn,
        output,
      }),
    ).toMatchObject({ charged: 37 });
    await endModelWork(lost.id, { closing: { output } });
    expect(await runDurableObjectAlarm(stubOf(lost.id))).toBe(true);
    await waitForStatus(user, lost.id, 'completed');
    const events = await lost.newEvents();
    expect(events.map((e) => e.type)).toEqual(['agent.info', 'execution.result', 'session.status_idle']);
    expect(events[1]!.payload).toMatchObject({ cost: 0.37 });
    expect(await totals()).toEqual({ cost: before.cost + 37, input: before.input + 10, output: before.output + 5 });
    expect((await lost.outputs()).results.map((r) => r.name)).toEqual(['notes.md', 'output.md', 'output.md']);
    const usage = await env.DB.prepare('SELECT amount FROM credit_transactions WHERE business_key = ?').bind(`usage:${turnKey}`).all();
    expect(usage.results).toEqual([{ amount: -37 }]);
  });

  it('shows what a turn was charged when its settlement had landed before it was cut off', async () => {
    const user = await setup();
    const lost = await loseTurn(user, { messages: [], usage: { inputTokens: 10, outputTokens: 5 } });
    await endModelWork(lost.id);
    // The settlement landed in D1; the object was cut off before it noted that.
    const settled = await settle(globalDbOf(env), {
      userId: user.user.id,
      turnKey: `${lost.id}:lost`,
      executionId: lost.id,
      cost: 37,
      description: 'settled before the cut',
    });
    expect(settled).toMatchObject({ settled: true, charged: 37 });
    const shard = await shardD1(user.workspaceId);
    const costOf = async () => (await shard.prepare('SELECT cost FROM executions WHERE id = ?').bind(idOf(lost.id)).first<{ cost: number }>())!.cost;
    const before = await costOf();
    expect(await runDurableObjectAlarm(stubOf(lost.id))).toBe(true);
    await waitForStatus(user, lost.id, 'completed');
    const result = (await lost.newEvents()).find((e) => e.type === 'execution.result')!;
    expect(result.payload).toMatchObject({ cost: 0.37 });
    expect((await costOf()) - before).toBe(37);
    const usage = await env.DB.prepare('SELECT amount FROM credit_transactions WHERE business_key = ?').bind(`usage:${lost.id}:lost`).all();
    expect(usage.results).toEqual([{ amount: -37 }]);
  });
});

describe('per-user execution rate limit', () => {
  it('answers the 21st run start in a minute 429 RATE_LIMITED (flat on the run route)', async () => {
    const user = await setup();
    const shard = await shardD1(user.workspaceId);
    advanceClock(60_000 - (Date.now() % 60_000) + 1);
    try {
      for (let i = 0; i < 20; i++) {
        const res = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: `Run ${i}.` } });
        expect(res.status).toBe(200);
        await call(`/api/v1/executions/${res.body.executionId}/cancel`, { method: 'POST', token: user.token });
        // Polled in D1, not through the API: 20 runs must stay under the API's own 100/minute limit.
        const row = shard.prepare('SELECT status FROM executions WHERE id = ?').bind(Number(res.body.executionId.slice(5)));
        while ((await row.first<{ status: string }>())!.status !== 'idle') await new Promise((r) => setTimeout(r, 10));
      }
      const limited = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'One too many.' } });
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ error: 'RATE_LIMITED', details: { serviceCode: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) } });
    } finally {
      resetClock();
    }
  });

  it('answers a user.message past the limit 429 and leaves the execution idle, to run once the window has passed', async () => {
    const user = await setup();
    advanceClock(60_000 - (Date.now() % 60_000) + 1);
    try {
      const id = (await create(user)).body.id;
      // The user's other 20 starts this minute, counted where every run start is counted.
      const runs = env.RATE_LIMITER.getByName(`runs:user:${user.user.id}`);
      for (let i = 0; i < 20; i++) await runs.hit(20, 60_000);
      expectError(await message(user, id, 'One too many.'), 429, 'RATE_LIMITED');
      const status = await call(`/api/v1/executions/${id}/status`, { token: user.token });
      expect(status.body).toMatchObject({ status: 'idle' });
      // Nothing is held for the refused start.
      expect((await call('/api/v1/billing/balance', { token: user.token })).body).toMatchObject({ balance: 100, canExecute: true });

      advanceClock(60_000);
      expect((await message(user, id, 'Now it runs.')).status).toBe(200);
      await waitForStatus(user, id, 'completed');
    } finally {
      resetClock();
    }
  });

  it('does not count a user.message that starts nothing, and holds nothing for it', async () => {
    const user = await setup();
    advanceClock(60_000 - (Date.now() % 60_000) + 1);
    try {
      const runs = env.RATE_LIMITER.getByName(`runs:user:${user.user.id}`);
      for (let i = 0; i < 19; i++) await runs.hit(20, 60_000);
      const busy = (await create(user)).body.id;
      const other = (await create(user)).body.id;
      const shard = await shardD1(user.workspaceId);
      // `busy` holds the workspace's one slot, as a start under way does.
      const slot = (status: string, turnKey: string | null) =>
        shard
          .prepare('UPDATE executions SET status = ?, turn_key = ?, claimed_at = ? WHERE id = ?')
          .bind(status, turnKey, now(), Number(busy.slice(5)))
          .run();
      await slot('working', 'exec_test:under-way');
      expectError(await message(user, busy, 'Again.'), 409, 'EXECUTION_RUNNING');
      expectError(await message(user, other, 'Me too.'), 409, 'EXECUTION_RUNNING');
      expectError(await message(user, 'exec_999999', 'Nobody.'), 404, 'NOT_FOUND');
      const holds = await env.DB.prepare('SELECT COUNT(*) AS n FROM credit_reservations WHERE user_id = ?').bind(user.user.id).first<{ n: number }>();
      expect(holds!.n).toBe(0);

      await slot('idle', null);
      // The 20th start of this minute: none of the refused ones above was counted.
      expect((await message(user, other, 'Now.')).status).toBe(200);
      await waitForStatus(user, other, 'completed');
      // The 21st is refused, and what its claim took is given back.
      expectError(await message(user, busy, 'One too many.'), 429, 'RATE_LIMITED');
      expect((await call(`/api/v1/executions/${busy}/status`, { token: user.token })).body).toMatchObject({ status: 'idle' });
      const open = await env.DB.prepare('SELECT COUNT(*) AS n FROM credit_reservations WHERE user_id = ? AND settled_at IS NULL')
        .bind(user.user.id)
        .first<{ n: number }>();
      expect(open!.n).toBe(0);
    } finally {
      resetClock();
    }
  });
});

describe('secrets bound to the skill', () => {
  it('never appear in the stream, the status or the artifacts, even when the input quotes one', async () => {
    const user = await setup();
    const value = 'zebra-0123456789-secret';
    const secret = await call('/api/v1/secrets', { token: user.token, body: { name: 'CRM_TOKEN', value } });
    expect(
      (await call('/api/v1/skills/meeting-summarizer/secrets', { token: user.token, body: { secretId: secret.body.id, envVar: 'CRM_TOKEN' } })).status,
    ).toBe(201);

    const created = await create(user);
    await message(user, created.body.id, `Log in with ${value} today. Then file the notes.`);
    const frames = await readStream(user, created.body.id);
    expect(frames.at(-1)!.payload).toEqual({ stop_reason: { type: 'end_turn' } });
    // The user's own message is echoed as sent; everything the run produced is masked.
    const produced = frames.filter((f) => f.type !== 'user.message');
    expect(JSON.stringify(produced)).not.toContain('zebra');
    expect(JSON.stringify(produced)).toContain('[secret CRM_TOKEN]');

    const status = await waitForStatus(user, created.body.id, 'completed');
    expect(JSON.stringify(status)).not.toContain('zebra');
    const listed = await call('/api/v1/artifacts', { token: user.token });
    for (const artifact of listed.body.data) {
      const text = (await call(`/api/v1/artifacts/${artifact.id}/download`, { token: user.token })).body;
      expect(text).not.toContain('zebra');
    }
    expect(listed.body.data.map((a: { name: string }) => a.name).sort()).toEqual(['notes.md', 'output.md']);
  });
});

describe('the audit trail of runs', () => {
  it('records creating, starting and interrupting a run, with activity lines', async () => {
    const user = await setup();
    const created = await create(user);
    await message(user, created.body.id, 'We ship Friday. Ana writes the notes.');
    const cancelled = await call(`/api/v1/executions/${created.body.id}/cancel`, { token: user.token, body: {} });
    const audit = (await call('/api/v1/audit-logs?resource_type=execution', { token: user.token })).body.data;
    const actions = audit.filter((e: { resourceId: string }) => e.resourceId === created.body.id).map((e: { action: string }) => e.action);
    // Newest first; the interrupt is recorded only if the run was still working when cancelled.
    expect(actions).toEqual([...(cancelled.body.processKilled ? ['execution.interrupted'] : []), 'execution.started', 'execution.created']);
    const activity = (await call('/api/v1/activity', { token: user.token })).body.data.map((e: { summary: string }) => e.summary);
    expect(activity).toContain('A run of Meeting Summarizer started');
  });
});
