import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { runTools } from '../../workers/runtime/tools';
import { call, createKey, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { keyTurn, turnOf } from '../helpers/turns';
import { definition, mapping, waitForRun } from '../helpers/workflows';
import { shardDbFor } from '../helpers/shards';

const SECRET = 'The merger closes on Friday';

async function userWithMemory() {
  const user = await signUp();
  await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: SECRET } });
  return user;
}

/** Installs and launches `graph`, with the key when one is given, and waits for the run to end. */
async function runGraph(user: TestUser, graph: unknown[], apiKey?: string) {
  const auth = apiKey === undefined ? { token: user.token } : { apiKey };
  expect((await call('/api/v1/workflows/flow/install', { ...auth, body: definition('flow', graph) })).status).toBe(201);
  const launched = await call('/api/v1/workflows/flow/launch', { ...auth, body: {} });
  expect(launched.status).toBe(201);
  return waitForRun(user, launched.body.runId);
}

const readMemoryRun = (user: TestUser, apiKey?: string) => runGraph(user, [{ type: 'tool', id: 'read', toolId: 'read-memory' }], apiKey);

describe('a workflow run acts with its launcher’s scopes, never more', () => {
  it('fails a read-memory step launched by a key without memory:read, naming the scope', async () => {
    const user = await userWithMemory();
    const key = await createKey(user, ['workflow:run', 'library:write']);
    expect((await call('/api/v1/memory', { apiKey: key.key })).status).toBe(403);
    const { run, steps } = await readMemoryRun(user, key.key);
    expect(run.status).toBe('failed');
    expect(steps.read.status).toBe('failed');
    expect(steps.read.output.error).toContain('memory:read');
    expect(JSON.stringify({ run, steps })).not.toContain(SECRET);
  });

  it('fails an execute-skill step launched by a key without tool:execute, and starts no execution', async () => {
    const user = await signUp();
    const skill = { name: 'Notes', description: 'Takes notes.', category: 'productivity', prompt: '# Notes' };
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: skill });
    const key = await createKey(user, ['workflow:run', 'library:write']);
    const shape = mapping('shape', { slug: { value: 'notes' }, input: { value: 'Plan it.' } });
    const { run, steps } = await runGraph(user, [shape, { type: 'tool', id: 'run', toolId: 'execute-skill' }], key.key);
    expect(run.status).toBe('failed');
    expect(steps.run.output.error).toContain('tool:execute');
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
  });

  it('reads memory for a key holding memory:read, a * key and a session', async () => {
    const user = await userWithMemory();
    const scoped = await createKey(user, ['workflow:run', 'library:write', 'memory:read']);
    const wildcard = await createKey(user, ['*']);
    for (const apiKey of [scoped.key, wildcard.key, undefined]) {
      const { run } = await readMemoryRun(user, apiKey);
      expect(run.status).toBe('success');
      expect(run.snapshot.result).toEqual({ content: SECRET });
    }
  });
});

describe('a model’s tools act with the launching credential’s scopes, never more', () => {
  const byName = (tools: ReturnType<typeof runTools>) => Object.fromEntries(tools.map((t) => [t.spec.name, t]));

  it('answers a tool error naming the scope when the launching key lacks it, and changes nothing', async () => {
    const user = await userWithMemory();
    const tools = byName(runTools(await shardDbFor(user.workspaceId), env, await keyTurn(user, ['tool:execute'])));
    expect(await tools.read_memory!.run({})).toEqual({ content: expect.stringContaining('memory:read'), isError: true });
    expect(await tools.append_memory!.run({ content: 'planted' })).toEqual({ content: expect.stringContaining('memory:write'), isError: true });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe(SECRET);
  });

  it('reads and appends for a key holding the memory scopes, a * key and a session', async () => {
    const user = await userWithMemory();
    const turns = [await keyTurn(user, ['tool:execute', 'memory:read', 'memory:write']), await keyTurn(user, ['*']), turnOf(user)];
    for (const turn of turns) {
      const tools = byName(runTools(await shardDbFor(user.workspaceId), env, turn));
      expect(await tools.read_memory!.run({})).toEqual({ content: expect.stringContaining(SECRET) });
      expect(await tools.append_memory!.run({ content: 'noted' })).toEqual({ content: 'Appended' });
    }
  });
});

describe('the launching credential travels with the run', () => {
  it('a run started by a key without memory:read is refused the memory its model asks for; the owner’s run is not', async () => {
    const user = await userWithMemory();
    expect((await call('/api/v1/byok', { method: 'PUT', token: user.token, body: { key: inject('modelKeys').byok } })).status).toBe(200);
    await call('/api/v1/skills/notes', {
      method: 'PUT',
      token: user.token,
      body: { name: 'Notes', description: 'Takes notes.', category: 'productivity', prompt: '# Notes' },
    });
    const key = await createKey(user, ['tool:execute']);
    const answerOf = async (auth: { apiKey: string } | { token: string }) => {
      const res = await call('/api/v1/skills/notes/run', { ...auth, body: { input: 'Please read memory.' } });
      expect(res.status).toBe(200);
      return (await waitForStatus(user, res.body.executionId, 'completed')).outputBlocks;
    };
    const refused = await answerOf({ apiKey: key.key });
    expect(JSON.stringify(refused)).toContain('memory:read');
    expect(JSON.stringify(refused)).not.toContain(SECRET);
    expect(await answerOf({ token: user.token })).toEqual([{ type: 'text', text: `Memory: ${SECRET}` }]);
  });
});
