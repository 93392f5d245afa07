import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { BASE, call, expectError, signUp, type TestUser } from '../helpers/api';

const SKILL = { name: 'Meeting Summarizer', description: 'Summarises notes.', category: 'productivity', prompt: '# Meeting Summarizer\nYou summarise meeting notes.' };

async function setup() {
  const user = await signUp();
  await call('/api/v1/skills/meeting-summarizer', { method: 'PUT', token: user.token, body: SKILL });
  return user;
}

const create = (user: TestUser, input = 'We ship Friday. Ana writes the notes.') =>
  call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input } });
const message = (user: TestUser, id: string, text: string) =>
  call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } });

/** Reads the whole stream (it ends after session.status_idle) and parses its frames. */
async function readStream(user: TestUser, id: string) {
  const token = await call(`/api/v1/executions/${id}/stream-token`, { token: user.token });
  const url = new URL(token.body.sseUrl);
  const res = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`);
  return (await res.text())
    .split('\n\n')
    .filter((f) => f.includes('data:'))
    .map((f) => ({ seq: Number(/^id: (\d+)$/m.exec(f)![1]), ...JSON.parse(/^data: (.*)$/m.exec(f)![1]!) }));
}

async function waitForStatus(user: TestUser, id: string, wanted: string) {
  for (let i = 0; i < 100; i++) {
    const res = await call(`/api/v1/executions/${id}/status`, { token: user.token });
    if (res.body.status === wanted) return res.body;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`execution ${id} never reached ${wanted}`);
}

describe('the three-step flow on the local provider', () => {
  it('creates an idle execution, streams the run from the start, and completes it', async () => {
    const user = await setup();
    const created = await create(user);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.stringMatching(/^exec_\d+$/), skill_slug: 'meeting-summarizer', skill_name: 'Meeting Summarizer', status: 'idle' });
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

    const stored = await env.DB.prepare('SELECT name FROM artifacts WHERE execution_id = ? ORDER BY id').bind(Number(id.slice(5))).all();
    expect(stored.results.map((r) => r.name)).toEqual(['notes.md', 'output.md']);
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
    expectError(first.status === 409 ? first : second, 409, 'EXECUTION_RUNNING');
  });
});

describe('interrupt', () => {
  it('stops a run mid-stream with stop reason interrupt; the execution is idle and takes a new message', async () => {
    const user = await setup();
    const id = (await create(user)).body.id;
    await message(user, id, 'Plan the offsite. Book the venue. Invite the team. Order food.');

    const token = await call(`/api/v1/executions/${id}/stream-token`, { token: user.token });
    const url = new URL(token.body.sseUrl);
    const reader = (await exports.default.fetch(`${BASE}${url.pathname}${url.search}`)).body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"agent.message"')) text += decoder.decode((await reader.read()).value);

    const interrupted = await call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.interrupt' }] } });
    expect(interrupted.status).toBe(200);
    expect(interrupted.body.data.map((e: { type: string }) => e.type)).toEqual(['user.interrupt']);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);
    expect(text).toContain('"stop_reason":{"type":"interrupt"}');

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
    expect(expectError(await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: '  ' } }), 400, 'INVALID_INPUT').details?.field).toBe('input');
    expectError(await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'not-installed', input: 'x' } }), 404, 'NOT_FOUND');
    const id = (await create(user)).body.id;
    expect(expectError(await call(`/api/v1/executions/${id}/events`, { token: user.token, body: { events: [{ type: 'user.dance' }] } }), 400, 'INVALID_INPUT').details?.field).toBe('events.0.type');
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
