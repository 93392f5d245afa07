import { describe, expect, it } from 'vitest';
import { call, expectError, type TestUser, waitForStatus } from '../helpers/api';
import { shardD1 } from '../helpers/shards';
import { signUpWithSummarizer as setup } from '../helpers/skills';

/** Finding one run's outputs: the execution's own record, its artifacts, and what its trace turns cost. */

const run = async (user: TestUser, input: string) => {
  const res = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input } });
  expect(res.status).toBe(200);
  await waitForStatus(user, res.body.executionId, 'completed');
  return res.body.executionId as string;
};

async function usageOf(user: TestUser, id: string) {
  const shard = await shardD1(user.workspaceId);
  const row = await shard
    .prepare('SELECT cost, input_tokens, output_tokens FROM executions WHERE id = ?')
    .bind(Number(id.slice(5)))
    .first<{ cost: number; input_tokens: number; output_tokens: number }>();
  return row!;
}

describe('GET /api/v1/artifacts?executionId=', () => {
  it("lists only that execution's artifacts, takes the bare id too, and refuses a malformed one", async () => {
    const user = await setup();
    const first = await run(user, 'We ship Friday.');
    const second = await run(user, 'Ana writes the notes.');
    const all = (await call('/api/v1/artifacts', { token: user.token })).body.data as { id: string; executionId: string }[];
    expect(new Set(all.map((a) => a.executionId))).toEqual(new Set([first, second]));

    for (const filter of [first, first.slice('exec_'.length)]) {
      const res = await call(`/api/v1/artifacts?executionId=${filter}`, { token: user.token });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
      expect(res.body.data.every((a: { executionId: string }) => a.executionId === first)).toBe(true);
      expect(res.body.data.map((a: { id: string }) => a.id)).toEqual(all.filter((a) => a.executionId === first).map((a) => a.id));
    }
    expect((await call('/api/v1/artifacts?executionId=exec_999999', { token: user.token })).body.data).toEqual([]);
    const refused = expectError(await call('/api/v1/artifacts?executionId=yesterday', { token: user.token }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ field: 'executionId' });
  });
});

describe('GET /api/v1/executions/:id', () => {
  it('answers the history item plus parent, time, token usage and artifacts', async () => {
    const user = await setup();
    const first = await run(user, 'We ship Friday.');
    const rerun = await call(`/api/v1/executions/${first}/rerun`, { token: user.token, body: { input: 'Only the decisions.' } });
    await waitForStatus(user, rerun.body.executionId, 'completed');
    const id = rerun.body.executionId as string;

    const res = await call(`/api/v1/executions/${id}`, { token: user.token });
    expect(res.status).toBe(200);
    const history = (await call('/api/v1/executions', { token: user.token })).body.items.find((i: { executionId: string }) => i.executionId === id);
    const stored = await usageOf(user, id);
    const artifacts = (await call(`/api/v1/artifacts?executionId=${id}`, { token: user.token })).body.data;
    expect(stored.input_tokens).toBeGreaterThan(0);
    expect(res.body).toEqual({
      ...history,
      parentExecutionId: first,
      executionTime: expect.any(Number),
      tokenUsage: { inputTokens: stored.input_tokens, outputTokens: stored.output_tokens },
      artifacts: [...artifacts].reverse(),
    });
    expect(res.body.cost).toBe(stored.cost / 100);
    expect(res.body.artifacts.map((a: { name: string }) => a.name)).toContain('output.md');

    // The bare id names the same execution; a missing one is 404.
    expect((await call(`/api/v1/executions/${id.slice('exec_'.length)}`, { token: user.token })).body).toEqual(res.body);
    expectError(await call('/api/v1/executions/exec_999999', { token: user.token }), 404, 'NOT_FOUND');
  });

  it('needs tool:execute, like the other execution reads', async () => {
    const user = await setup();
    const id = await run(user, 'Notes.');
    const key = await call('/api/v1/api-keys', { token: user.token, body: { name: 'reader', scopes: ['library:read'] } });
    const refused = expectError(await call(`/api/v1/executions/${id}`, { apiKey: key.body.key }), 403, 'FORBIDDEN');
    expect(refused.details).toEqual({ scope: 'tool:execute' });
  });
});

describe('trace turns', () => {
  it('carry their execution id, the tokens of the model requests that ended on them, and the cost of the run', async () => {
    const user = await setup();
    const first = await run(user, 'We ship Friday.');
    const rerun = await call(`/api/v1/executions/${first}/rerun`, { token: user.token, body: { input: 'Only the decisions.' } });
    await waitForStatus(user, rerun.body.executionId, 'completed');
    const second = rerun.body.executionId as string;
    const [trace] = (await call('/api/v1/traces', { token: user.token })).body.items;
    await call(`/api/v1/traces/${trace.id}/events`, { token: user.token, body: { events: [{ type: 'agent.text', payload: { text: 'A note.' } }] } });
    const turns = (await call(`/api/v1/traces/${trace.id}/events`, { token: user.token })).body.items as {
      executionId: string | null;
      origin: string;
      tokens: { input: number; output: number } | null;
      cost: number | null;
    }[];

    for (const id of [first, second]) {
      const own = turns.filter((t) => t.executionId === id);
      expect(own.length).toBeGreaterThan(0);
      expect(own.every((t) => t.origin === 'producer')).toBe(true);
      const stored = await usageOf(user, id);
      const sum = (pick: (t: (typeof own)[number]) => number) => own.reduce((total, t) => total + pick(t), 0);
      expect({ input: sum((t) => t.tokens?.input ?? 0), output: sum((t) => t.tokens?.output ?? 0) }).toEqual({
        input: stored.input_tokens,
        output: stored.output_tokens,
      });
      expect(own.filter((t) => t.cost !== null)).toHaveLength(1);
      expect(sum((t) => t.cost ?? 0)).toBe(stored.cost / 100);
    }
    const total = turns.reduce((sum, t) => sum + (t.cost ?? 0), 0);
    expect(total).toBeCloseTo((await call(`/api/v1/traces/${trace.id}`, { token: user.token })).body.totalCost, 6);
    expect(turns.at(-1)).toMatchObject({ origin: 'appended', executionId: null, tokens: null, cost: null });
  });
});
