import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { appendMemory, MAX_MEMORY_BYTES, MEMORY_SEPARATOR } from '../../workers/services/memory';
import { call, sessionPrincipal, signUp } from '../helpers/api';
import { turnOf } from '../helpers/turns';
import { shardDbFor } from '../helpers/shards';

describe('appendMemory', () => {
  it('joins entries with the spec separator, starting from an empty document', async () => {
    const user = await signUp();
    const db = await shardDbFor(user.workspaceId);
    await appendMemory(db, sessionPrincipal(user), 'first');
    const doc = await appendMemory(db, sessionPrincipal(user), 'second');
    expect(doc.content).toBe(`first${MEMORY_SEPARATOR}second`);
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe(doc.content);
  });

  it('loses nothing when twenty appends race', async () => {
    const user = await signUp();
    const db = await shardDbFor(user.workspaceId);
    const entries = Array.from({ length: 20 }, (_, i) => `note ${i}`);
    await Promise.all(entries.map((e) => appendMemory(db, sessionPrincipal(user), e)));
    const parts = (await call('/api/v1/memory', { token: user.token })).body.content.split(MEMORY_SEPARATOR);
    expect([...parts].sort()).toEqual([...entries].sort());
  });

  it('refuses to grow past the cap, and records nothing for the refused append', async () => {
    const user = await signUp();
    const db = await shardDbFor(user.workspaceId);
    await appendMemory(db, sessionPrincipal(user), 'x'.repeat(MAX_MEMORY_BYTES - 10));
    await expect(appendMemory(db, sessionPrincipal(user), 'y'.repeat(20))).rejects.toMatchObject({ code: 'INVALID_INPUT', status: 400 });
    const audit = await call('/api/v1/audit-logs?action=memory.appended', { token: user.token });
    expect(audit.body.data).toHaveLength(1);
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toHaveLength(MAX_MEMORY_BYTES - 10);
  });
});

describe('the run tools for working memory', () => {
  it('read and append the workspace memory as the run’s principal, attributed to its key', async () => {
    const { runTools } = await import('../../workers/runtime/tools');
    const user = await signUp();
    const db = await shardDbFor(user.workspaceId);
    await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'Existing note' } });
    const tools = runTools(db, env, turnOf(user, { apiKeyId: 7, requestId: 'req-run-1', skillSlug: 'notes' }));
    const byName = Object.fromEntries(tools.map((t) => [t.spec.name, t]));
    expect(Object.keys(byName).sort()).toEqual(['append_memory', 'http_request', 'read_memory', 'write_artifact']);
    expect(await byName.read_memory!.run({})).toEqual({ content: 'Existing note' });
    expect(await byName.append_memory!.run({ content: 'From the run' })).toEqual({ content: 'Appended' });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe(`Existing note${MEMORY_SEPARATOR}From the run`);
    const [entry] = (await call('/api/v1/audit-logs?action=memory.appended', { token: user.token })).body.data;
    expect(entry).toMatchObject({ actor: { type: 'api_key', apiKeyId: 'key_7' }, requestId: 'req-run-1' });
  });

  it('append once per tool call: the call made again by a cut-off turn changes and records nothing more', async () => {
    const { runTools } = await import('../../workers/runtime/tools');
    const user = await signUp();
    const db = await shardDbFor(user.workspaceId);
    const turn = turnOf(user, { skillSlug: 'notes', turnKey: `exec_1:${crypto.randomUUID()}` });
    const append = (callId: string, content: string) =>
      runTools(db, env, turn)
        .find((t) => t.spec.name === 'append_memory')!
        .run({ content }, { id: callId });
    expect(await append('toolu_1', 'Once')).toEqual({ content: 'Appended' });
    expect(await append('toolu_1', 'Once')).toEqual({ content: 'Appended' });
    // Another call, and the same call id in another turn, append again.
    expect(await append('toolu_2', 'Twice')).toEqual({ content: 'Appended' });
    const other = runTools(db, env, { ...turn, turnKey: `${turn.turnKey}:next` }).find((t) => t.spec.name === 'append_memory')!;
    expect(await other.run({ content: 'Thrice' }, { id: 'toolu_1' })).toEqual({ content: 'Appended' });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe(['Once', 'Twice', 'Thrice'].join(MEMORY_SEPARATOR));
    expect((await call('/api/v1/audit-logs?action=memory.appended', { token: user.token })).body.data).toHaveLength(3);
  });
});
