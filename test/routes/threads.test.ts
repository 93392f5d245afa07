import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, type TestUser } from '../helpers/api';
import { signUpWithSummarizer as setup } from '../helpers/skills';

const newThread = (user: TestUser, body: unknown = { skill_slug: 'meeting-summarizer', title: 'Planning' }) =>
  call('/api/v1/threads', { token: user.token, body });
const say = (user: TestUser, id: string, content: string, extra: Record<string, unknown> = {}) =>
  call(`/api/v1/threads/${id}/messages`, { token: user.token, body: { content, ...extra } });

describe('chat threads', () => {
  it('creates a thread with its chat trace, runs one agent turn per message and stores the exchange', async () => {
    const user = await setup();
    const created = await newThread(user);
    expect(created.status).toBe(201);
    const thread = created.body;
    expect(thread).toEqual({
      id: expect.any(String),
      title: 'Planning',
      skillSlug: 'meeting-summarizer',
      traceId: expect.any(String),
      traceKey: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const trace = (await call(`/api/v1/traces/${thread.traceId}`, { token: user.token })).body;
    expect(trace).toMatchObject({
      kind: 'chat',
      title: 'Planning',
      status: 'idle',
      target: { kind: 'chat', threadId: thread.id },
      totalCost: 0,
      traceKey: thread.traceKey,
    });

    const first = await say(user, thread.id, 'We ship Friday. Ana writes the notes.');
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      message: {
        id: expect.any(Number),
        threadId: thread.id,
        role: 'user',
        content: 'We ship Friday. Ana writes the notes.',
        executionId: first.body.executionId,
      },
      reply: { threadId: thread.id, role: 'assistant', content: expect.stringContaining('- We ship Friday.'), executionId: first.body.executionId },
      status: 'completed',
    });
    const second = await say(user, thread.id, 'And the demo is Monday.', { sessionId: thread.traceKey });
    expect(second.body.status).toBe('completed');

    const messages = await call(`/api/v1/threads/${thread.id}/messages`, { token: user.token });
    expect(messages.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(messages.body.data[2].content).toBe('And the demo is Monday.');
    const paged = await call(`/api/v1/threads/${thread.id}/messages?limit=1&after_id=${messages.body.data[0].id}`, { token: user.token });
    expect(paged.body).toMatchObject({ data: [{ id: messages.body.data[1].id }], has_more: true });

    // Both runs land on the chat trace: one trace, its cost, and turns from both runs.
    const chats = (await call('/api/v1/traces?kind=chat', { token: user.token })).body.items;
    expect(chats).toHaveLength(1);
    expect(chats[0]).toMatchObject({ id: thread.traceId, status: 'completed' });
    expect(chats[0].totalCost).toBeGreaterThan(0);
    expect((await call('/api/v1/traces?kind=execution', { token: user.token })).body.items).toHaveLength(0);
    const turns = (await call(`/api/v1/traces/${thread.traceId}/events`, { token: user.token })).body.items as { type: string; payload: any }[];
    const said = turns.filter((t) => t.type === 'user.message').map((t) => t.payload.content[0].text);
    expect(said).toHaveLength(2);
    expect(said[1]).toContain('And the demo is Monday.');
    expect(turns.filter((t) => t.type === 'agent.text').length).toBeGreaterThanOrEqual(2);

    const cont = await call(`/api/v1/traces/${thread.traceId}/continue`, { method: 'POST', token: user.token });
    expect(cont.body.continueWith).toEqual({ method: 'POST', path: `/api/v1/threads/${thread.id}/messages`, body: { sessionId: thread.traceKey } });

    const list = await call('/api/v1/threads', { token: user.token });
    expect(list.body).toMatchObject({ data: [{ id: thread.id }], has_more: false });
  });

  it('validates, hides other workspaces and checks thread scopes', async () => {
    const user = await setup();
    const stranger = await setup();
    expect(expectError(await newThread(user, { skill_slug: 'meeting-summarizer', title: '' }), 400, 'INVALID_INPUT').details?.field).toBe('title');
    expectError(await newThread(user, { skill_slug: 'not-installed' }), 404, 'NOT_FOUND');
    const thread = (await newThread(user, { skill_slug: 'meeting-summarizer' })).body;
    expect(thread.title).toBe('Chat with meeting-summarizer');
    expect(expectError(await say(user, thread.id, ''), 400, 'INVALID_INPUT').details?.field).toBe('content');
    expect(expectError(await say(user, thread.id, 'hi', { sessionId: 'other' }), 400, 'INVALID_INPUT').details?.field).toBe('sessionId');

    expectError(await say(stranger, thread.id, 'hi'), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/threads/${thread.id}/messages`, { token: stranger.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/threads', { token: stranger.token })).body.data).toEqual([]);

    const reader = await createKey(user, ['thread:read']);
    expect((await call('/api/v1/threads', { apiKey: reader.key })).status).toBe(200);
    const denied = await call(`/api/v1/threads/${thread.id}/messages`, { apiKey: reader.key, body: { content: 'hi' } });
    expect(expectError(denied, 403, 'FORBIDDEN').details?.scope).toBe('thread:write');
  });
});
