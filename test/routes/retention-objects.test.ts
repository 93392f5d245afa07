import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { advanceClock, freezeClock, resetClock } from '../../workers/lib/clock';
import { call, createKey, waitForStatus, type TestUser } from '../helpers/api';
import { signUpWithSummarizer } from '../helpers/skills';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';
import { runHousekeeping } from '../helpers/housekeeping';

beforeEach(() => freezeClock());
afterEach(() => resetClock());

const DAY = 86_400_000;

/** An API key of every scope: unlike a session, it outlasts the months these tests move the clock. */
const readerOf = async (user: TestUser) => ({ apiKey: (await createKey(user, ['*'])).key });
type Reader = Awaited<ReturnType<typeof readerOf>>;

const executionObject = (id: string) => env.EXECUTION_SESSION.getByName(id);
const runObject = (runId: string) => env.WORKFLOW_RUN.getByName(runId);

/** What an object's storage holds: its own tables (the runtime's `_cf_` ones aside), kv keys and alarm. */
const storageOf = (stub: DurableObjectStub) =>
  runInDurableObject(stub, async (_: unknown, state: DurableObjectState) => ({
    tables: state.storage.sql
      .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`)
      .toArray()
      .map((t) => t.name)
      .filter((name) => !name.startsWith('_cf_') && name !== 'sqlite_sequence'),
    kv: [...state.storage.kv.list()].map(([key]) => key),
    alarm: await state.storage.getAlarm(),
  }));
const EMPTY = { tables: [], kv: [], alarm: null };

const eventCount = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_: unknown, state: DurableObjectState) => state.storage.sql.exec<{ n: number }>('SELECT count(*) AS n FROM events').one().n);

async function until<T>(fn: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  const end = Date.now() + 15_000;
  for (;;) {
    const value = await fn();
    if (ok(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs the summarizer to completion: the execution's log ends, and its object arms its expiry. */
async function completedExecution(user: TestUser) {
  const started = await call('/api/v1/skills/meeting-summarizer/run', { token: user.token, body: { input: 'We ship Friday.' } });
  expect(started.status).toBe(200);
  const id = started.body.executionId as string;
  await waitForStatus(user, id, 'completed');
  await until(
    () => storageOf(executionObject(id)),
    (s) => s.alarm !== null && s.kv.includes('expiry'),
    'the expiry alarm',
  );
  return id;
}

const executionFound = async (reader: Reader, id: string) => (await call(`/api/v1/executions/${id}`, reader)).status;
const listedExecutions = async (reader: Reader) =>
  ((await call('/api/v1/executions?limit=100', reader)).body.items as { executionId: string }[]).map((e) => e.executionId);

describe('retention of executions', () => {
  it('the sweep deletes an ended execution past its window, row then object, and keeps one exactly as old as the window', async () => {
    const user = await signUpWithSummarizer();
    const reader = await readerOf(user);
    const old = await completedExecution(user);
    advanceClock(1);
    const edge = await completedExecution(user);
    // Created and never run: no object, its row counted from its creation.
    const idle = (await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'meeting-summarizer', input: 'Later.' } })).body.id as string;

    advanceClock(30 * DAY - 1);
    await runHousekeeping();
    expect(await listedExecutions(reader)).toEqual(expect.arrayContaining([old, edge, idle]));

    advanceClock(1);
    await runHousekeeping();
    expect(await executionFound(reader, old)).toBe(404);
    expect((await call(`/api/v1/executions/${old}/status`, reader)).status).toBe(404);
    expect(await storageOf(executionObject(old))).toEqual(EMPTY);
    expect(await executionFound(reader, edge)).toBe(200);
    expect(await eventCount(executionObject(edge))).toBeGreaterThan(0);
    expect((await listedExecutions(reader)).sort()).toEqual([edge, idle].sort());
    // Artifacts are kept until deleted: the expired run's output is still listed.
    expect((await call(`/api/v1/artifacts?executionId=${old}`, reader)).body.data.map((a: { name: string }) => a.name)).toContain('output.md');

    advanceClock(1);
    await runHousekeeping();
    expect(await executionFound(reader, edge)).toBe(404);
    expect(await storageOf(executionObject(edge))).toEqual(EMPTY);
    expect(await executionFound(reader, idle)).toBe(404);
    expect(await listedExecutions(reader)).toEqual([]);
  });

  it("an execution's object erases itself at its alarm once the workspace's window has passed, deleting the row first; a lengthened window re-arms it", async () => {
    const standard = await signUpWithSummarizer();
    const longer = await signUpWithSummarizer();
    expect((await call(`/api/v1/workspaces/${longer.workspaceId}/retention`, { token: longer.token, method: 'PUT', body: { executions: 45 } })).status).toBe(
      200,
    );
    const readers = { standard: await readerOf(standard), longer: await readerOf(longer) };
    const ids = { standard: await completedExecution(standard), longer: await completedExecution(longer) };

    advanceClock(30 * DAY + 1);
    // No sweep: the objects' own alarms.
    expect(await runDurableObjectAlarm(executionObject(ids.standard))).toBe(true);
    expect(await runDurableObjectAlarm(executionObject(ids.longer))).toBe(true);
    expect(await executionFound(readers.standard, ids.standard)).toBe(404);
    expect(await storageOf(executionObject(ids.standard))).toEqual(EMPTY);
    expect(await executionFound(readers.longer, ids.longer)).toBe(200);
    expect((await storageOf(executionObject(ids.longer))).alarm).not.toBeNull();

    advanceClock(15 * DAY);
    expect(await runDurableObjectAlarm(executionObject(ids.longer))).toBe(true);
    expect(await executionFound(readers.longer, ids.longer)).toBe(404);
    expect(await storageOf(executionObject(ids.longer))).toEqual(EMPTY);
  });

  it('a shortened window: the sweep erases the object long before the alarm it armed for the default', async () => {
    const user = await signUpWithSummarizer();
    expect((await call(`/api/v1/workspaces/${user.workspaceId}/retention`, { token: user.token, method: 'PUT', body: { executions: 1 } })).status).toBe(200);
    const reader = await readerOf(user);
    const id = await completedExecution(user);
    advanceClock(DAY + 1);
    await runHousekeeping();
    expect(await executionFound(reader, id)).toBe(404);
    expect(await storageOf(executionObject(id))).toEqual(EMPTY);
  });
});

describe('retention of workflow runs', () => {
  /** A run that succeeds at once; answers its id once its object has armed its expiry. */
  async function finishedRun(user: TestUser) {
    const runId = await launch(user, 'flow');
    expect((await waitForRun(user, runId, ['success'])).run.status).toBe('success');
    await until(
      () => storageOf(runObject(runId)),
      (s) => s.alarm !== null && s.kv.includes('expiry'),
      'the expiry alarm',
    );
    return runId;
  }
  const runFound = async (reader: Reader, runId: string) => (await call(`/api/v1/workflows/runs/${runId}`, reader)).status;

  it('the sweep deletes a run past its window and erases its object; its alarm does the same without the sweep; a run inside its window stays', async () => {
    const user = await signUpWithSummarizer();
    await install(user, 'flow', definition('flow', [mapping('m', { a: { value: 1 } })]));
    const reader = await readerOf(user);
    const swept = await finishedRun(user);
    const alarmed = await finishedRun(user);
    advanceClock(1);
    const edge = await finishedRun(user);

    advanceClock(30 * DAY);
    expect(await runDurableObjectAlarm(runObject(alarmed))).toBe(true);
    expect(await runFound(reader, alarmed)).toBe(404);
    expect(await storageOf(runObject(alarmed))).toEqual(EMPTY);
    // The run exactly as old as its window is kept by its alarm, which rings again after it.
    expect(await runDurableObjectAlarm(runObject(edge))).toBe(true);
    expect(await runFound(reader, edge)).toBe(200);
    expect((await storageOf(runObject(edge))).alarm).not.toBeNull();

    await runHousekeeping();
    expect(await runFound(reader, swept)).toBe(404);
    expect(await storageOf(runObject(swept))).toEqual(EMPTY);
    expect(await runFound(reader, edge)).toBe(200);
    expect((await storageOf(runObject(edge))).tables).toContain('events');
    expect(((await call('/api/v1/workflows/runs?limit=100', reader)).body.runs as { runId: string }[]).map((r) => r.runId)).toEqual([edge]);
  });
});
