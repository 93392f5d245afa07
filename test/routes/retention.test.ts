import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { activityLog, auditLog, traces, traceTurns, workflowRuns, workflowStepResults } from '../../schema';
import { advanceClock, freezeClock, now, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { shardD1, shardDbFor } from '../helpers/shards';
import { runHousekeeping } from '../helpers/housekeeping';
import { join } from '../helpers/members';

beforeEach(() => freezeClock());
afterEach(() => resetClock());

const DAY = 86_400_000;

const retention = (user: TestUser, workspaceId = user.workspaceId) => call(`/api/v1/workspaces/${workspaceId}/retention`, { token: user.token });
const setRetention = (user: TestUser, body: unknown, workspaceId = user.workspaceId) =>
  call(`/api/v1/workspaces/${workspaceId}/retention`, { token: user.token, method: 'PUT', body });

/**
 * One item of every kind the sweep expires, stamped `at`, labelled `label`: an audit and an
 * activity entry, an ended trace with an appended turn, a running trace, an ended run of each end
 * state with a step result, and a suspended run. Written as their producers write them.
 */
async function seed(user: TestUser, label: string, at: number) {
  const db = await shardDbFor(user.workspaceId);
  const actor = { workspaceId: user.workspaceId, actorUserId: user.user.id };
  await db.insert(auditLog).values({ ...actor, action: 'test.seeded', resourceType: 'test', resourceId: label, requestId: 'r', metadata: {}, createdAt: at });
  await db.insert(activityLog).values({ ...actor, type: 'test.seeded', summary: label, resourceType: 'test', resourceId: label, createdAt: at });
  const trace = (id: string, status: string) => ({
    id,
    workspaceId: user.workspaceId,
    traceKey: id,
    kind: 'chat' as const,
    title: label,
    status,
    actorUserId: user.user.id,
    startedAt: at,
    lastActivityAt: at,
  });
  const ids = { ended: crypto.randomUUID(), running: crypto.randomUUID() };
  await db.insert(traces).values([trace(ids.ended, 'completed'), trace(ids.running, 'running')]);
  await db.insert(traceTurns).values({ traceId: ids.ended, seq: 1, type: 'user.message', payload: { text: label }, actorUserId: user.user.id, at });
  const runs = { success: `${label}-success`, failed: `${label}-failed`, canceled: `${label}-canceled`, suspended: `${label}-suspended` };
  for (const [status, runId] of Object.entries(runs)) {
    await db.insert(workflowRuns).values({
      runId: `${user.workspaceId}-${runId}`,
      workspaceId: user.workspaceId,
      workflowId: 'wf',
      status: status as 'success',
      resourceId: user.user.id,
      snapshot: '{}',
      version: 1,
      createdAt: at,
      updatedAt: at,
    });
    await db.insert(workflowStepResults).values({ runId: `${user.workspaceId}-${runId}`, stepId: 's', status: 'success', output: null, updatedAt: at });
  }
  return { traces: ids, runs: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, `${user.workspaceId}-${v}`])) as typeof runs };
}
type Seeded = Awaited<ReturnType<typeof seed>>;

/** An API key of every scope: unlike a session, it outlasts the months these tests move the clock. */
type Reader = { apiKey: string };
const readerOf = async (user: TestUser): Promise<Reader> => ({ apiKey: (await createKey(user, ['*'])).key });

const found = async (reader: Reader, path: string) => (await call(path, reader)).status;
const listed = async (reader: Reader, path: string) =>
  ((await call(`${path}?limit=100`, reader)).body.data as { resourceId: string }[]).map((e) => e.resourceId);

/** What of `seeded` the API still shows, by kind. */
async function visible(user: Reader, label: string, seeded: Seeded) {
  return {
    audit: (await listed(user, '/api/v1/audit-logs')).includes(label),
    activity: (await listed(user, '/api/v1/activity')).includes(label),
    endedTrace: (await found(user, `/api/v1/traces/${seeded.traces.ended}`)) === 200,
    runningTrace: (await found(user, `/api/v1/traces/${seeded.traces.running}`)) === 200,
    successRun: (await found(user, `/api/v1/workflows/runs/${seeded.runs.success}`)) === 200,
    failedRun: (await found(user, `/api/v1/workflows/runs/${seeded.runs.failed}`)) === 200,
    canceledRun: (await found(user, `/api/v1/workflows/runs/${seeded.runs.canceled}`)) === 200,
    suspendedRun: (await found(user, `/api/v1/workflows/runs/${seeded.runs.suspended}`)) === 200,
  };
}

const ALL = { audit: true, activity: true, endedTrace: true, runningTrace: true, successRun: true, failedRun: true, canceledRun: true, suspendedRun: true };
const ENDED_TRACES_AND_RUNS_GONE = { ...ALL, endedTrace: false, successRun: false, failedRun: false, canceledRun: false };

describe('the retention sweep', () => {
  it('with the defaults: ended traces and runs go after 30 days, activity after 90, audit after 365; an item at its window edge stays', async () => {
    const user = await signUp();
    const t0 = now();
    // `old` is 1 ms older than `edge`: when `edge` is exactly its window old (the last moment inside it), `old` is past it.
    const reader = await readerOf(user);
    const old = await seed(user, 'old', t0 - 1);
    const edge = await seed(user, 'edge', t0);

    advanceClock(30 * DAY - 1);
    await runHousekeeping();
    expect(await visible(reader, 'old', old)).toEqual(ALL);

    advanceClock(1);
    await runHousekeeping();
    expect(await visible(reader, 'old', old)).toEqual(ENDED_TRACES_AND_RUNS_GONE);
    expect(await visible(reader, 'edge', edge)).toEqual(ALL);
    expect((await call('/api/v1/traces?limit=100', reader)).body.items.map((t: { id: string }) => t.id)).not.toContain(old.traces.ended);
    const turns = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT count(*) AS n FROM trace_turns WHERE trace_id = ?')
      .bind(old.traces.ended)
      .first<{ n: number }>();
    expect(turns!.n).toBe(0);
    const steps = await (
      await shardD1(user.workspaceId)
    )
      .prepare('SELECT count(*) AS n FROM workflow_step_results WHERE run_id IN (?, ?, ?)')
      .bind(old.runs.success, old.runs.failed, old.runs.canceled)
      .first<{ n: number }>();
    expect(steps!.n).toBe(0);

    advanceClock(60 * DAY);
    await runHousekeeping();
    expect(await visible(reader, 'old', old)).toEqual({ ...ENDED_TRACES_AND_RUNS_GONE, activity: false });
    expect((await visible(reader, 'edge', edge)).activity).toBe(true);

    advanceClock(275 * DAY);
    await runHousekeeping();
    expect(await visible(reader, 'old', old)).toEqual({ ...ENDED_TRACES_AND_RUNS_GONE, activity: false, audit: false });
    expect(await visible(reader, 'edge', edge)).toEqual({ ...ENDED_TRACES_AND_RUNS_GONE, activity: false, audit: true });
  });

  it("applies each workspace's own windows: a shortened one expires sooner, a lengthened one keeps longer, others keep the defaults", async () => {
    const shorter = await signUp();
    const longer = await signUp();
    const standard = await signUp();
    expect((await setRetention(shorter, { audit: 1, activity: 2 })).status).toBe(200);
    expect((await setRetention(longer, { traces: 60, workflowRuns: 45 })).status).toBe(200);
    const readers = { shorter: await readerOf(shorter), longer: await readerOf(longer), standard: await readerOf(standard) };
    const t0 = now();
    const seeded = { shorter: await seed(shorter, 'item', t0), longer: await seed(longer, 'item', t0), standard: await seed(standard, 'item', t0) };

    advanceClock(DAY + 1);
    await runHousekeeping();
    expect(await visible(readers.shorter, 'item', seeded.shorter)).toEqual({ ...ALL, audit: false });
    expect(await visible(readers.standard, 'item', seeded.standard)).toEqual(ALL);

    advanceClock(DAY);
    await runHousekeeping();
    expect(await visible(readers.shorter, 'item', seeded.shorter)).toEqual({ ...ALL, audit: false, activity: false });

    advanceClock(28 * DAY);
    await runHousekeeping();
    expect(await visible(readers.standard, 'item', seeded.standard)).toEqual(ENDED_TRACES_AND_RUNS_GONE);
    expect(await visible(readers.longer, 'item', seeded.longer)).toEqual(ALL);

    advanceClock(15 * DAY);
    await runHousekeeping();
    expect(await visible(readers.longer, 'item', seeded.longer)).toEqual({ ...ALL, successRun: false, failedRun: false, canceledRun: false });

    advanceClock(15 * DAY);
    await runHousekeeping();
    expect(await visible(readers.longer, 'item', seeded.longer)).toEqual(ENDED_TRACES_AND_RUNS_GONE);
  });
});

describe('GET and PUT /api/v1/workspaces/:id/retention', () => {
  it('answers the defaults, then what the owner set over them', async () => {
    const user = await signUp();
    const res = await retention(user);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ executions: 30, traces: 30, workflowRuns: 30, activity: 90, audit: 365 });

    const set = await setRetention(user, { traces: 7, audit: 400 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ executions: 30, traces: 7, workflowRuns: 30, activity: 90, audit: 400 });
    expect((await setRetention(user, { workflowRuns: 1 })).body).toEqual({ executions: 30, traces: 7, workflowRuns: 1, activity: 90, audit: 400 });
    expect((await retention(user)).body).toEqual({ executions: 30, traces: 7, workflowRuns: 1, activity: 90, audit: 400 });
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    expect(audit.body.data[0]).toMatchObject({ action: 'workspace.retention_updated', resourceId: user.workspaceId, metadata: { workflowRuns: 1 } });
  });

  it('refuses days outside 1..RETENTION_MAX_DAYS and non-integers with 400 INVALID_INPUT naming the field', async () => {
    const user = await signUp();
    for (const [body, field] of [
      [{ traces: 0 }, 'traces'],
      [{ audit: 401 }, 'audit'],
      [{ activity: 1.5 }, 'activity'],
      [{ workflowRuns: '30' }, 'workflowRuns'],
    ] as const) {
      const error = expectError(await setRetention(user, body), 400, 'INVALID_INPUT');
      expect(error.details?.field).toBe(field);
    }
    expect((await retention(user)).body).toEqual({ executions: 30, traces: 30, workflowRuns: 30, activity: 90, audit: 365 });
  });

  it('lets members read but not change them (403), and answers 404 for a workspace other than the current one', async () => {
    const owner = await signUp();
    const member = await signUp();
    const outsider = await signUp();
    await join(owner, member, 'member');

    expect((await retention(member, owner.workspaceId)).body).toEqual({ executions: 30, traces: 30, workflowRuns: 30, activity: 90, audit: 365 });
    expectError(await setRetention(member, { traces: 1 }, owner.workspaceId), 403, 'FORBIDDEN');

    expectError(await retention(outsider, owner.workspaceId), 404, 'NOT_FOUND');
    expectError(await setRetention(outsider, { traces: 1 }, owner.workspaceId), 404, 'NOT_FOUND');
    expect((await retention(owner)).body.traces).toBe(30);
  });

  it('needs profile:read to read and profile:write to change', async () => {
    const user = await signUp();
    const reader = await createKey(user, ['profile:read']);
    expect((await call(`/api/v1/workspaces/${user.workspaceId}/retention`, { apiKey: reader.key })).status).toBe(200);
    expectError(await call(`/api/v1/workspaces/${user.workspaceId}/retention`, { apiKey: reader.key, method: 'PUT', body: { traces: 3 } }), 403, 'FORBIDDEN');
  });
});
