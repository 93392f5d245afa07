import { evictDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, createKey, expectError, type TestUser, waitForStatus } from '../helpers/api';
import { signUpWithSummarizer as setup } from '../helpers/skills';
import { sseMessages } from '../helpers/sse';
import { definition, install, launch, waitForRun } from '../helpers/workflows';

const subscribeUrl = async (user: TestUser) => (await call('/api/v1/events/subscribe-url', { token: user.token })).body as { url: string; expiresInMs: number };

/** Opens the signed URL as the Worker sees it (the test client cannot dial ws:// itself). */
const upgrade = (url: string) => {
  const u = new URL(url);
  return exports.default.fetch(`${BASE}${u.pathname}${u.search}`, { headers: { upgrade: 'websocket' } });
};

async function connect(user: TestUser) {
  const res = await upgrade((await subscribeUrl(user)).url);
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  const messages: any[] = [];
  ws.addEventListener('message', (e) => {
    messages.push(typeof e.data === 'string' && e.data.startsWith('{') ? JSON.parse(e.data) : e.data);
  });
  return { ws, messages };
}

async function until<T>(check: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const runSkill = async (user: TestUser, input = 'We ship Friday. Ana writes the notes.') => {
  const res = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input } });
  expect(res.status).toBe(200);
  return res.body.executionId as string;
};

const executionMessages = (messages: any[], id: string) => messages.filter((m) => typeof m === 'object' && m.executionId === id);

describe('GET /api/v1/events/subscribe-url and the upgrade', () => {
  it('answers a signed WebSocket URL valid 5 minutes', async () => {
    const user = await setup();
    const res = await call('/api/v1/events/subscribe-url', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: expect.stringMatching(/^wss:\/\/service\.test\/control\/ws\?token=[\w.-]+$/), expiresInMs: 300000 });
    const reader = await createKey(user, ['channel:read']);
    expect((await call('/api/v1/events/subscribe-url', { apiKey: reader.key })).status).toBe(200);
    const other = await createKey(user, ['trace:read']);
    expect(expectError(await call('/api/v1/events/subscribe-url', { apiKey: other.key }), 403, 'FORBIDDEN').details?.scope).toBe('channel:read');
    expectError(await call('/api/v1/events/subscribe-url'), 401, 'UNAUTHORIZED');
  });

  it('refuses a tampered, expired or missing token with 401 before accepting, and plain GETs with 426', async () => {
    const user = await setup();
    const { url } = await subscribeUrl(user);
    const token = new URL(url).searchParams.get('token')!;
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const forged = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/')));
    forged.wid = crypto.randomUUID();
    const tamperedPayload = btoa(JSON.stringify(forged)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    for (const bad of [`${header}.${tamperedPayload}.${signature}`, `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`]) {
      const res = await upgrade(`wss://service.test/control/ws?token=${bad}`);
      expect(res.status).toBe(401);
      expect(res.webSocket).toBeNull();
      expect((await res.json<any>()).error.code).toBe('UNAUTHORIZED');
    }
    const missing = await upgrade('wss://service.test/control/ws');
    expect(missing.status).toBe(401);

    advanceClock(300_001);
    try {
      const expired = await upgrade(url);
      expect(expired.status).toBe(401);
      expect(expired.webSocket).toBeNull();
    } finally {
      resetClock();
    }
    const plain = await exports.default.fetch(`${BASE}${new URL(url).pathname}${new URL(url).search}`);
    expect(plain.status).toBe(426);
  });
});

describe('the control-plane WebSocket', () => {
  it('carries one run as execution-started, progress with the output block, execution-completed; cache-invalidate on changes', async () => {
    const user = await setup();
    const { ws, messages } = await connect(user);
    const id = await runSkill(user);
    const done = await until(() => executionMessages(messages, id).find((m) => m.type === 'execution-completed'), 'execution-completed');
    const mine = executionMessages(messages, id);
    expect(mine[0]).toEqual({ type: 'execution-started', executionId: id, source: 'api', seq: 2 });
    expect(mine.at(-1)).toBe(done);
    expect(done).toMatchObject({ stopReason: 'end_turn', cost: expect.any(Number), source: 'api' });
    expect(done.cost).toBeGreaterThan(0);
    const progress = mine.slice(1, -1);
    expect(progress.every((m) => m.type === 'execution-progress')).toBe(true);
    // execution.result is folded into the completion (its cost).
    expect(progress.map((m) => m.event)).toEqual(
      expect.arrayContaining(['agent.info', 'agent.thinking', 'agent.tool_use', 'agent.message', 'span.model_request_end']),
    );
    const block = progress.find((m) => m.event === 'agent.message' && m.outputBlock.text.includes('- We ship Friday.'));
    expect(block.outputBlock.type).toBe('text');
    const seqs = mine.map((m) => m.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(messages.filter((m) => m.type === 'cache-invalidate')).toContainEqual({
      type: 'cache-invalidate',
      resource: 'skills',
      method: 'POST',
      path: '/api/v1/skills/meeting-summarizer/run',
    });

    await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'Notes' } });
    await until(() => messages.find((m) => m.type === 'cache-invalidate' && m.resource === 'memory'), 'cache-invalidate');
    ws.close();
  });

  it('announces workflow installs, launches, resumes and cancels as cache-invalidate, each audited', async () => {
    const user = await setup();
    const { ws, messages } = await connect(user);
    const approve = { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Go?' } } };
    await install(user, 'flow', definition('flow', [approve, { ...approve, id: 'again' }]));
    const first = await launch(user, 'flow');
    await waitForRun(user, first, ['suspended']);
    expect((await call(`/api/v1/workflows/runs/${first}/resume`, { token: user.token, body: { resumeData: {} } })).status).toBe(200);
    await waitForRun(user, first, ['suspended']);
    expect((await call(`/api/v1/workflows/runs/${first}/cancel`, { token: user.token, body: {} })).status).toBe(200);
    const paths = [
      '/api/v1/workflows/flow/install',
      '/api/v1/workflows/flow/launch',
      `/api/v1/workflows/runs/${first}/resume`,
      `/api/v1/workflows/runs/${first}/cancel`,
    ];
    const announced = await until(() => {
      const seen = messages.filter((m) => m.type === 'cache-invalidate' && m.resource === 'workflows').map((m) => m.path);
      return paths.every((p) => seen.includes(p)) && seen;
    }, 'the workflow announcements');
    expect(announced).toEqual(paths);
    const audit = await call('/api/v1/audit-logs?limit=50', { token: user.token });
    expect(
      audit.body.data
        .map((e: { action: string }) => e.action)
        .filter((a: string) => a.startsWith('workflow.'))
        .sort(),
    ).toEqual(['workflow.canceled', 'workflow.installed', 'workflow.launched', 'workflow.resumed']);
    ws.close();
  });

  it('answers ping with pong, stays in the credential’s workspace, and reports failures', async () => {
    const user = await setup();
    const other = await setup();
    const mine = await connect(user);
    const theirs = await connect(other);
    mine.ws.send('ping');
    await until(() => mine.messages.includes('pong'), 'pong');

    const id = await runSkill(user);
    await until(() => executionMessages(mine.messages, id).find((m) => m.type === 'execution-completed'), 'completion');
    await waitForStatus(user, id, 'completed');
    expect(theirs.messages.filter((m) => typeof m === 'object' && m.executionId)).toEqual([]);

    // A run that ends in error is execution-failed.
    const failed = (await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: 'x' } })).body.id;
    expect(
      (
        await call(`/api/v1/executions/${failed}/events`, {
          token: user.token,
          body: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'A plan. Step one. Step two. Step three.' }] }] },
        })
      ).status,
    ).toBe(200);
    // Past the 65-minute cap the loop stops with error.
    advanceClock(66 * 60_000);
    try {
      const failure = await until(
        () => executionMessages(mine.messages, failed).find((m) => m.type === 'execution-failed' || m.type === 'execution-completed'),
        'failure',
      );
      expect(failure).toMatchObject({ type: 'execution-failed', stopReason: 'error', source: 'api' });
    } finally {
      resetClock();
    }
    mine.ws.close();
    theirs.ws.close();
  });

  it('keeps delivering after the channel object is evicted (hibernation)', async () => {
    const user = await setup();
    const { ws, messages } = await connect(user);
    const channel = env.WORKSPACE_CHANNEL.getByName(user.workspaceId);
    await evictDurableObject(channel);
    // A fresh instance finds the socket again through the hibernation API.
    expect(await channel.publish([{ type: 'cache-invalidate', resource: 'test', method: 'POST', path: '/test' }])).toBe(1);
    await until(() => messages.find((m) => m.resource === 'test'), 'message after eviction');
    ws.send('ping');
    await until(() => messages.includes('pong'), 'pong after eviction');
    const id = await runSkill(user);
    await until(() => executionMessages(messages, id).find((m) => m.type === 'execution-completed'), 'completion after eviction');
    ws.close();
  });
});

describe('GET /api/events', () => {
  const open = async (query: string, headers: Record<string, string> = {}) => {
    const res = await exports.default.fetch(`${BASE}/api/events${query}`, { headers });
    return res;
  };

  async function collect(res: Response) {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const state = { text: '', done: false };
    void (async () => {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) state.text += decoder.decode(chunk.value);
      state.done = true;
    })().catch(() => undefined);
    const frames = () =>
      sseMessages(state.text)
        .filter((m) => m.event === 'execution-state')
        .map((m) => JSON.parse(m.data));
    return { state, frames, cancel: () => reader.cancel() };
  }

  it('streams execution-state for one run (API key in the query), filtered by sources', async () => {
    const user = await setup();
    const key = await createKey(user, ['channel:read']);
    const res = await open(`?apiKey=${key.key}&sources=api`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('content-encoding')).toBe('identity');
    const api = await collect(res);
    const mcp = await collect(await open('?sources=mcp', { 'x-api-key': key.key }));
    await until(() => api.state.text.startsWith(': connected') && mcp.state.text.startsWith(': connected'), 'subscriptions');

    const id = await runSkill(user);
    await until(() => api.frames().find((f) => f.executionId === id && f.status === 'completed'), 'completed state');
    const frames = api.frames().filter((f) => f.executionId === id);
    expect(frames[0]).toEqual({ type: 'execution-state', change: 'started', status: 'working', executionId: id, source: 'api', seq: 2 });
    expect(frames.at(-1)).toMatchObject({
      type: 'execution-state',
      change: 'completed',
      status: 'completed',
      stopReason: 'end_turn',
      cost: expect.any(Number),
    });
    expect(frames.some((f) => f.outputBlock?.text.includes('- We ship Friday.'))).toBe(true);
    expect(frames.slice(1, -1).every((f) => f.status === 'working' && f.change === 'progress')).toBe(true);
    expect(mcp.frames()).toEqual([]);
    await api.cancel();
    await mcp.cancel();
  });

  it('needs a usable credential with channel:read', async () => {
    const user = await setup();
    expect((await open('')).status).toBe(401);
    expect((await open('?apiKey=sk_live_nope')).status).toBe(401);
    const key = await createKey(user, ['trace:read']);
    const denied = await open(`?apiKey=${key.key}`);
    expect(denied.status).toBe(403);
    expect((await denied.json<any>()).error.details.scope).toBe('channel:read');
  });
});
