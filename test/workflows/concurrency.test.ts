import { runDurableObjectAlarm } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, expectError, signUp, type TestUser } from '../helpers/api';
import { definition, install, launch, waitForRun } from '../helpers/workflows';
import { shardD1 } from '../helpers/shards';

/** Concurrency keys (docs/workflows.md): runs over a key's limit wait queued and start in launch order when a slot frees. */

const approve = { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } };
const perRepo = (limit = 1) => definition('per-repo', [approve], { concurrency: { key: 'repo-${initData.repo}', limit } });

const resume = (user: TestUser, runId: string) => call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: {} } });

/** Each run's status as the queue listing shows it (absent: finished). */
async function queueStatuses(user: TestUser): Promise<Map<string, { status: string; concurrencyKey?: string }>> {
  const res = await call('/api/v1/workflows/queue', { token: user.token });
  expect(res.status).toBe(200);
  return new Map(res.body.queued.map((q: { runId: string; status: string; concurrencyKey?: string }) => [q.runId, q]));
}

describe('concurrency keys', () => {
  it('runs ten launches of one key under a limit of one one at a time, in launch order', async () => {
    const user = await signUp();
    await install(user, 'per-repo', perRepo());
    const runs: string[] = [];
    for (let i = 0; i < 10; i++) runs.push(await launch(user, 'per-repo', { repo: 'a' }));
    for (const [i, runId] of runs.entries()) {
      await waitForRun(user, runId, ['suspended']);
      const queue = await queueStatuses(user);
      // Only the i-th run is going; every later one still waits, and the earlier ones finished.
      expect(runs.map((r) => queue.get(r)?.status ?? 'finished')).toEqual(runs.map((_, j) => (j < i ? 'finished' : j === i ? 'suspended' : 'queued')));
      expect(queue.get(runId)?.concurrencyKey).toBe('repo-a');
      expect((await resume(user, runId)).status).toBe(200);
      await waitForRun(user, runId, ['success']);
    }
    const details = await call(`/api/v1/workflows/runs/${runs[0]}`, { token: user.token });
    expect(details.body.run).toMatchObject({ status: 'success', concurrencyKey: 'repo-a' });
  });

  it('runs different keys side by side, and a limit of two lets two of one key go', async () => {
    const user = await signUp();
    await install(user, 'per-repo', perRepo());
    const [a1, b1, a2] = [
      await launch(user, 'per-repo', { repo: 'a' }),
      await launch(user, 'per-repo', { repo: 'b' }),
      await launch(user, 'per-repo', { repo: 'a' }),
    ];
    await waitForRun(user, a1!, ['suspended']);
    await waitForRun(user, b1!, ['suspended']);
    expect((await waitForRun(user, a2!, ['queued'])).run.concurrencyKey).toBe('repo-a');

    const other = await signUp();
    await install(other, 'per-repo', perRepo(2));
    const runs = [
      await launch(other, 'per-repo', { repo: 'a' }),
      await launch(other, 'per-repo', { repo: 'a' }),
      await launch(other, 'per-repo', { repo: 'a' }),
    ];
    await waitForRun(other, runs[0]!, ['suspended']);
    await waitForRun(other, runs[1]!, ['suspended']);
    expect((await queueStatuses(other)).get(runs[2]!)?.status).toBe('queued');
  });

  it('a run canceled while queued never starts and frees no slot', async () => {
    const user = await signUp();
    await install(user, 'per-repo', perRepo());
    const [first, canceled, last] = [
      await launch(user, 'per-repo', { repo: 'a' }),
      await launch(user, 'per-repo', { repo: 'a' }),
      await launch(user, 'per-repo', { repo: 'a' }),
    ];
    await waitForRun(user, first!, ['suspended']);
    expect((await call(`/api/v1/workflows/queue/${canceled}`, { token: user.token, method: 'DELETE' })).status).toBe(200);
    expect((await waitForRun(user, canceled!, ['canceled'])).steps).toEqual({});
    let queue = await queueStatuses(user);
    expect([queue.get(first!)?.status, queue.get(canceled!)?.status, queue.get(last!)?.status]).toEqual(['suspended', undefined, 'queued']);
    expect((await resume(user, first!)).status).toBe(200);
    await waitForRun(user, last!, ['suspended']);
    const after = await waitForRun(user, canceled!, ['canceled']);
    expect(after.steps).toEqual({});
    queue = await queueStatuses(user);
    expect(queue.get(last!)?.status).toBe('suspended');
  });

  it('a queued run whose slot freed without a wake-up starts at its own alarm', async () => {
    const user = await signUp();
    await install(user, 'per-repo', perRepo());
    const [holder, waiting] = [await launch(user, 'per-repo', { repo: 'a' }), await launch(user, 'per-repo', { repo: 'a' })];
    await waitForRun(user, holder!, ['suspended']);
    await waitForRun(user, waiting!, ['queued']);
    // The slot's holder ends as far as D1 knows, but its object never wakes the queue (as if it stopped first).
    await (await shardD1(user.workspaceId)).prepare(`UPDATE workflow_runs SET status = 'failed' WHERE run_id = ?`).bind(holder).run();
    expect((await queueStatuses(user)).get(waiting!)?.status).toBe('queued');
    expect(await runDurableObjectAlarm(env.WORKFLOW_RUN.getByName(waiting!))).toBe(true);
    await waitForRun(user, waiting!, ['suspended']);
  });

  it('refuses a bad concurrency declaration at install, naming the field', async () => {
    const user = await signUp();
    const cases: [unknown, string, string][] = [
      [{ key: 'k', limit: 0 }, 'concurrency.limit', 'range'],
      [{ key: 'k', limit: 101 }, 'concurrency.limit', 'range'],
      [{ key: 'k' }, 'concurrency.limit', 'required'],
      [{ key: 7, limit: 1 }, 'concurrency.key', 'type'],
      [{ key: '${repo}', limit: 1 }, 'concurrency.key', 'template'],
      [{ key: '${stepResults.approve.x}', limit: 1 }, 'concurrency.key', 'template'],
      [{ key: 'k', limit: 1, burst: 2 }, 'concurrency.burst', 'unknown_key'],
      ['k', 'concurrency', 'type'],
    ];
    for (const [concurrency, field, rule] of cases) {
      const err = expectError(
        await call('/api/v1/workflows/per-repo/install', { token: user.token, body: definition('per-repo', [approve], { concurrency }) }),
        400,
        'INVALID_INPUT',
      );
      expect(err.details).toMatchObject({ field, rule });
      expect(err.message).toContain(field);
    }
    expectError(await call('/api/v1/workflows/per-repo', { token: user.token }), 404, 'NOT_FOUND');
  });
});
