import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it, vi } from 'vitest';
import type { WorkflowRun } from '../../durable-objects/WorkflowRun';
import { sleep } from '../../workers/lib/clock';
import { followTask } from '../../workers/mcp/task-follow';
import type { TaskState } from '../../workers/mcp/tasks';
import { call, createKey, signUp, type TestUser } from '../helpers/api';
import { callFollowed } from '../helpers/mcp';
import { countedShard, keyContext } from '../helpers/counted-shard';
import { definition, install, launch, mapping, runsOf, waitForRun } from '../helpers/workflows';

/** Following a workflow run: its object tells of each new version of the record, so followers read the shard only then. */

const approve = { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Ship it?' } } };

async function suspendedRun() {
  const user = await signUp();
  await install(user, 'ship', definition('ship', [approve, mapping('after', { answer: { step: 'approve', path: 'ok' } })]));
  const runId = await launch(user, 'ship');
  await waitForRun(user, runId, ['suspended']);
  return { user, runId };
}

/** How many streams of change notices the run's object has open. */
const followers = (runId: string) => runInDurableObject(env.WORKFLOW_RUN.getByName(runId), (run: WorkflowRun) => run['notices'].size);

/** The last version of the run's record its object wrote. */
const versionOf = (runId: string) => runInDurableObject(env.WORKFLOW_RUN.getByName(runId), (_: WorkflowRun, state) => state.storage.kv.get<number>('rev')!);

const resume = (user: TestUser, runId: string) => call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { ok: true } } });

/** An MCP task follow of the run (as `subscriptions/listen` runs one) on a shard that counts its statements. */
async function followedTask(user: TestUser, runId: string) {
  const shard = countedShard(user.shard);
  const ctx = await keyContext(user, shard.db);
  const heard: TaskState['status'][] = [];
  const following = followTask(ctx, runId, new AbortController().signal, async (task) => void heard.push(task.status));
  await vi.waitFor(() => expect(heard).toEqual(['input_required']));
  await vi.waitFor(async () => expect(await followers(runId)).toBe(1));
  return { shard, heard, following };
}

describe('a workflow run’s followers', () => {
  it('read the shard once per change the run’s object tells of: nothing while the run waits, once more for the resume', async () => {
    const { user, runId } = await suspendedRun();
    const { shard, heard, following } = await followedTask(user, runId);
    const subscribed = shard.count.statements;
    // A while of a waiting run: a follower polling once a second would have read the record by now.
    await sleep(1_500);
    expect(shard.count.statements).toBe(subscribed);

    const suspendedAt = await versionOf(runId);
    expect((await resume(user, runId)).status).toBe(200);
    await following;
    expect(heard.at(-1)).toBe('completed');
    // At most one read per version written since, and the object's stream was given back.
    const reads = shard.count.statements - subscribed;
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual((await versionOf(runId)) - suspendedAt);
    expect(await followers(runId)).toBe(0);
  });

  it('open the object’s stream again after it was dropped (an eviction), and still hear the run end', async () => {
    const { user, runId } = await suspendedRun();
    const { shard, heard, following } = await followedTask(user, runId);
    const subscribed = shard.count.statements;
    // An eviction drops the streams the instance held (a graceful one would wait for them to end).
    await abortAllDurableObjects();
    // The follower reads the record once and opens the stream of the new instance.
    await vi.waitFor(async () => expect(await followers(runId)).toBe(1), { timeout: 10_000 });
    expect(shard.count.statements).toBe(subscribed + 1);
    expect((await resume(user, runId)).status).toBe(200);
    await following;
    expect(heard.at(-1)).toBe('completed');
  });

  it('stop following, and give the object’s stream back, when an MCP call followed with a progressToken loses its client', async () => {
    const user = await signUp();
    await install(user, 'slow', definition('slow', [{ type: 'sleep', id: 'wait', duration: 60_000 }]));
    const { key } = await createKey(user, ['*']);
    const answer = await callFollowed(key, 'start-workflow', { workflowId: 'slow' });
    expect(answer.status).toBe(200);
    const [run] = await vi.waitFor(async () => {
      const runs = await runsOf(user, 'slow');
      expect(runs).toHaveLength(1);
      return runs;
    });
    const runId = run!.runId;
    await vi.waitFor(async () => expect(await followers(runId)).toBe(1));
    await answer.body!.cancel();
    await vi.waitFor(async () => expect(await followers(runId)).toBe(0));
    expect((await call(`/api/v1/workflows/runs/${runId}`, { token: user.token })).body.run.status).toBe('running');
  });
});
