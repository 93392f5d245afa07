import { env } from 'cloudflare:workers';
import { describe, expect, inject, it, vi } from 'vitest';
import { followExecution } from '../../workers/capabilities/follow';
import { sleep } from '../../workers/lib/clock';
import { getExecutionStatus } from '../../workers/services/executions';
import { call, signUp } from '../helpers/api';
import { countedShard, keyContext } from '../helpers/counted-shard';

/** What an MCP call with a progressToken costs the workspace's shard while it waits for a skill run. */

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
describe('following a skill run', () => {
  it('reads nothing from the shard while the run streams and works on, and its status once when it has ended', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    await call('/api/v1/byok', { method: 'PUT', token: user.token, body: { key: inject('modelKeys').byok } });
    // The fixture model sends its words, then keeps its answer open until it is released: the run goes on working.
    const run = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Summarise the week. [hold the stream:progress-follow]' } });
    expect(run.status).toBe(200);
    const shard = countedShard(user.shard);
    const ctx = await keyContext(user, shard.db);
    const logs: string[] = [];
    const progress: { done: number; message: string }[] = [];
    const following = followExecution(ctx, run.body.executionId, {
      log: async (text) => void logs.push(text),
      progress: async (done, message) => void progress.push({ done, message }),
    });

    await vi.waitFor(() => expect(logs.join('')).toBe('Done on your own key.'), { timeout: 10_000 });
    expect(progress.at(-1)).toEqual({ done: progress.length, message: 'Working: 21 characters so far' });
    // A while of a working run: a poll every 250 ms would have read the shard several times by now.
    await sleep(1_000);
    expect(shard.count.statements).toBe(0);

    await fetch(`${inject('fixtureOrigin')}/model/release?name=progress-follow`, { method: 'POST' });
    await following;
    expect(progress.at(-1)).toEqual({ done: progress.length, message: 'Run completed' });
    expect(logs.join('')).toBe('Done on your own key.');
    const followed = shard.count.statements;
    shard.count.statements = 0;
    await getExecutionStatus(shard.db, env, ctx.actor, run.body.executionId);
    expect(followed).toBe(shard.count.statements);
  });
});
