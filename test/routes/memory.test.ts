import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp } from '../helpers/api';

describe('GET and PUT /api/v1/memory', () => {
  it('starts empty, then holds exactly what was last written', async () => {
    const user = await signUp();
    expect((await call('/api/v1/memory', { token: user.token })).body).toEqual({ content: '', updatedAt: null });

    const first = await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'Project: Apollo' } });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ content: 'Project: Apollo', updatedAt: expect.any(String) });

    const text = 'Notes 📝 — עברית — 中文\n\n---\n\nsecond entry';
    await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: text } });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe(text);
  });

  it.each([
    [{}, 'content'],
    [{ content: 42 }, 'content'],
    [{ content: 'x'.repeat(512 * 1024 + 1) }, 'content'],
  ])('rejects %# with 400 naming the field and keeps the document', async (body, field) => {
    const user = await signUp();
    await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'keep me' } });
    const error = expectError(await call('/api/v1/memory', { method: 'PUT', token: user.token, body }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe(field);
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe('keep me');
  });

  it('is one document per workspace', async () => {
    const a = await signUp();
    const b = await signUp();
    await call('/api/v1/memory', { method: 'PUT', token: a.token, body: { content: 'A only' } });
    expect((await call('/api/v1/memory', { token: b.token })).body.content).toBe('');
    const key = await createKey(a, ['memory:read']);
    expect((await call('/api/v1/memory', { apiKey: key.key })).body.content).toBe('A only');
  });

  it('checks memory:read and memory:write separately', async () => {
    const user = await signUp();
    const reader = await createKey(user, ['memory:read']);
    expect((await call('/api/v1/memory', { apiKey: reader.key })).status).toBe(200);
    const denied = expectError(await call('/api/v1/memory', { method: 'PUT', apiKey: reader.key, body: { content: 'x' } }), 403, 'FORBIDDEN');
    expect(denied.details).toEqual({ scope: 'memory:write' });
    const writer = await createKey(user, ['memory:write']);
    expect((await call('/api/v1/memory', { method: 'PUT', apiKey: writer.key, body: { content: 'x' } })).status).toBe(200);
    expect(expectError(await call('/api/v1/memory', { apiKey: writer.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'memory:read' });
  });
});
