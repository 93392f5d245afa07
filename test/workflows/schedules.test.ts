import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import type { WorkflowSchedule } from '../../durable-objects/WorkflowSchedule';
import triageSchedule from '../../examples/workflows/triage-schedule.json?raw';
import triage from '../../examples/workflows/triage.json?raw';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { definition, install, mapping } from '../helpers/workflows';

afterEach(() => resetClock());

const HOUR = 3_600_000;
const stub = (id: string) => env.WORKFLOW_SCHEDULE.getByName(id);
/** A run that waits for input: unfinished until it is canceled. */
const waiting = definition('nightly', [{ type: 'tool', id: 'wait', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } }], {
  inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
});

async function setUp(graph = waiting) {
  const user = await signUp();
  await install(user, 'nightly', graph);
  return user;
}

const schedules = (user: TestUser, path = '', init: { method?: string; body?: unknown; apiKey?: string } = {}) =>
  call(`/api/v1/workflows/nightly/schedules${path}`, { token: init.apiKey ? undefined : user.token, ...init });

async function schedule(user: TestUser, body: Record<string, unknown> = {}, apiKey?: string) {
  const res = await schedules(user, '', { body: { cron: '0 * * * *', input: { title: 'Report' }, ...body }, apiKey });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; nextFireTimes: string[]; state: string };
}

/** The runs this workflow has, oldest first. */
async function runsOf(user: TestUser) {
  const res = await call('/api/v1/workflows/runs?limit=200', { token: user.token });
  return (res.body.runs as { runId: string; workflowId: string; status: string }[]).filter((r) => r.workflowId === 'nightly').reverse();
}

const read = async (user: TestUser, id: string) => (await schedules(user, `/${id}`)).body;

/** Moves the service clock to just past the schedule's next fire time, then rings its alarm. */
async function toNextFire(user: TestUser, id: string, pastMs = 1_000) {
  const { nextFireTimes } = await read(user, id);
  advanceClock(Date.parse(nextFireTimes[0]) - now() + pastMs);
  expect(await runDurableObjectAlarm(stub(id))).toBe(true);
}

/** Waits until the alarm a resume sets for now has rung by itself. */
async function alarmRang(id: string) {
  for (let i = 0; i < 200; i++) {
    const alarm = await runInDurableObject(stub(id), (_: WorkflowSchedule, state) => state.storage.getAlarm());
    // Re-armed for a later fire time: the rung alarm's work is done (null may only mean it is ringing now).
    if (alarm !== null && alarm > Date.now() + 5_000) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the alarm never rang');
}

const cancel = (user: TestUser, runId: string) => call(`/api/v1/workflows/runs/${runId}/cancel`, { method: 'POST', token: user.token });

/** A queue_one schedule that fired once (its run waits for input) and fired again: that fire waits, queued. */
async function fireQueuedBehindARun() {
  const user = await setUp();
  const { id } = await schedule(user, { overlap: 'queue_one' });
  await toNextFire(user, id);
  const [first] = await runsOf(user);
  await toNextFire(user, id);
  expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'queued' });
  return { user, id: id as string, first: first! };
}

describe('schedules: settings', () => {
  it('creates a schedule answering its next five fire times in its time zone, lists, reads and changes it', async () => {
    const user = await setUp();
    const res = await schedules(user, '', {
      body: { cron: '30 9 * * 1-5', timezone: 'Europe/Paris', input: { title: 'Standup' }, overlap: 'queue_one', catchUp: 'run_once' },
    });
    expect(res.status).toBe(201);
    const created = res.body;
    expect(created).toMatchObject({
      workflowId: 'nightly',
      cron: '30 9 * * 1-5',
      timezone: 'Europe/Paris',
      overlap: 'queue_one',
      catchUp: 'run_once',
      paused: false,
      state: 'active',
    });
    expect(created.actsFor).toEqual({ userId: user.user.id, credential: { type: 'session', apiKeyId: null } });
    expect(created.nextFireTimes).toHaveLength(5);
    for (const time of created.nextFireTimes as string[]) {
      const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', weekday: 'short', hour: '2-digit', minute: '2-digit' }).format(new Date(time));
      expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:30$/);
    }
    expect((await schedules(user)).body.schedules.map((s: { id: string }) => s.id)).toEqual([created.id]);
    const changed = await schedules(user, `/${created.id}`, { method: 'PATCH', body: { cron: '0 0 1 * *', timezone: 'UTC', overlap: 'allow' } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ cron: '0 0 1 * *', overlap: 'allow', catchUp: 'run_once' });
    expect(new Date(changed.body.nextFireTimes[0]).getUTCDate()).toBe(1);
    const paused = await schedules(user, `/${created.id}/pause`, { method: 'POST' });
    expect(paused.body).toMatchObject({ paused: true, state: 'paused', nextFireTimes: [] });
  });

  it('takes the example of docs/workflows.md for the triage example', async () => {
    const user = await signUp();
    await install(user, 'triage', JSON.parse(triage));
    const res = await call('/api/v1/workflows/triage/schedules', { token: user.token, body: JSON.parse(triageSchedule) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const paris = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', weekday: 'short', hour: '2-digit', minute: '2-digit' });
    for (const time of res.body.nextFireTimes as string[]) expect(paris.format(new Date(time))).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
  });

  it('refuses a bad cron, an unknown time zone and input the inputSchema refuses, naming the field', async () => {
    const user = await setUp();
    const refused = async (body: Record<string, unknown>) =>
      expectError(await schedules(user, '', { body: { cron: '0 * * * *', input: { title: 'x' }, ...body } }), 400, 'INVALID_INPUT');
    expect((await refused({ cron: 'every day' })).details?.field).toBe('cron');
    expect((await refused({ cron: '61 * * * *' })).details?.field).toBe('cron');
    // Seconds are refused: the shortest interval is a minute.
    expect((await refused({ cron: '*/10 * * * * *' })).details?.field).toBe('cron');
    expect((await refused({ cron: '0 0 30 2 *' })).details).toMatchObject({ field: 'cron', rule: 'never_fires' });
    expect((await refused({ timezone: 'Mars/Olympus' })).details?.field).toBe('timezone');
    expect((await refused({ input: { title: 7 } })).details).toMatchObject({ field: 'input.title', rule: 'input_schema' });
    expect((await refused({ input: {} })).details?.field).toBe('input');
    expect((await refused({ overlap: 'sometimes' })).details?.field).toBe('overlap');
    expect((await schedules(user)).body.schedules).toEqual([]);
  });

  it('answers 404 for another workspace’s schedule and workflow, and for an unknown workflow', async () => {
    const owner = await setUp();
    const other = await setUp();
    const { id } = await schedule(owner);
    for (const [method, path] of [
      ['GET', `/${id}`],
      ['PATCH', `/${id}`],
      ['POST', `/${id}/pause`],
      ['POST', `/${id}/resume`],
      ['DELETE', `/${id}`],
    ] as const) {
      expectError(await schedules(other, path, { method, ...(method === 'PATCH' ? { body: { overlap: 'allow' } } : {}) }), 404, 'NOT_FOUND');
    }
    expect((await schedules(other)).body.schedules).toEqual([]);
    expectError(await call('/api/v1/workflows/nowhere/schedules', { token: owner.token }), 404, 'NOT_FOUND');
    expect((await read(owner, id)).state).toBe('active');
  });

  it('holds at most 20 schedules per workflow', async () => {
    const user = await setUp();
    for (let i = 0; i < 20; i++) await schedule(user, { cron: `${i} * * * *` });
    const refused = expectError(await schedules(user, '', { body: { cron: '0 * * * *', input: { title: 'x' } } }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ rule: 'limit', limit: 20 });
  });

  it('asks workflow:run to create or change a schedule and library:read to list them', async () => {
    const user = await setUp();
    const reader = await createKey(user, ['library:read']);
    expectError(await schedules(user, '', { body: { cron: '0 * * * *', input: { title: 'x' } }, apiKey: reader.key }), 403, 'FORBIDDEN');
    expect((await schedules(user, '', { apiKey: reader.key })).status).toBe(200);
  });
});

describe('schedules: firing', () => {
  it('starts exactly one run per fire time, however often its alarm rings', async () => {
    const user = await setUp();
    const { id } = await schedule(user, { overlap: 'allow' });
    await toNextFire(user, id);
    expect(await runDurableObjectAlarm(stub(id))).toBe(true);
    const runs = await runsOf(user);
    expect(runs).toHaveLength(1);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'started', runId: runs[0]!.runId });
    const detail = await call(`/api/v1/workflows/runs/${runs[0]!.runId}`, { token: user.token });
    expect(detail.body.run.snapshot.context.input).toEqual({ title: 'Report' });
    await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(2);
  });

  it('overlap skip: a fire time while its run is unfinished starts nothing', async () => {
    const user = await setUp();
    const { id } = await schedule(user, { overlap: 'skip' });
    await toNextFire(user, id);
    const [first] = await runsOf(user);
    await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(1);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'skipped', reason: 'overlap' });
    await cancel(user, first!.runId);
    await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(2);
  });

  it('overlap queue_one: one fire waits for the unfinished run and starts when it ends; a second one is skipped', async () => {
    const { user, id, first } = await fireQueuedBehindARun();
    await toNextFire(user, id);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'skipped', reason: 'queue_full' });
    expect(await runsOf(user)).toHaveLength(1);
    // While the first run goes on, an alarm starts nothing.
    expect(await runDurableObjectAlarm(stub(id))).toBe(true);
    expect(await runsOf(user)).toHaveLength(1);
    await cancel(user, first.runId);
    expect(await runDurableObjectAlarm(stub(id))).toBe(true);
    const runs = await runsOf(user);
    expect(runs).toHaveLength(2);
    // Nothing more waits: the next alarm starts nothing.
    await runDurableObjectAlarm(stub(id));
    expect(await runsOf(user)).toHaveLength(2);
  });

  it('overlap queue_one: the waiting fire starts when the run ends, woken by it, the object not polling meanwhile', async () => {
    const { user, id, first } = await fireQueuedBehindARun();
    // Waiting, its next alarm is no sooner than the fallback's ten minutes.
    const alarm = await runInDurableObject(stub(id), (_: WorkflowSchedule, state) => state.storage.getAlarm());
    expect(alarm! - Date.now()).toBeGreaterThan(5 * 60_000);
    // The run's end wakes it: the waiting fire starts with no alarm rung by hand.
    await cancel(user, first.runId);
    for (let i = 0; (await runsOf(user)).length < 2; i++) {
      if (i > 200) throw new Error('the waiting fire never started');
      await new Promise((r) => setTimeout(r, 25));
    }
    const [, second] = await runsOf(user);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'started', runId: second!.runId });
  });

  it('overlap allow: every fire time starts a run', async () => {
    const user = await setUp();
    const { id } = await schedule(user, { overlap: 'allow' });
    for (let i = 0; i < 3; i++) await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(3);
  });

  it('a fire launched but not recorded (the object cut off in between) starts one run when it is handled again', async () => {
    const user = await setUp();
    const { id } = await schedule(user, { overlap: 'allow' });
    await toNextFire(user, id);
    const [run] = await runsOf(user);
    // Back to the moment after the launch, before it was recorded.
    await runInDurableObject(stub(id), (_: WorkflowSchedule, state) => {
      const fireTime = state.storage.kv.get<number>('anchor')!;
      state.storage.kv.put('handling', { fireTime, covered: 1 });
      state.storage.kv.put('runs', []);
    });
    expect(await runDurableObjectAlarm(stub(id))).toBe(true);
    const runs = await runsOf(user);
    expect(runs.map((r) => r.runId)).toEqual([run!.runId]);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'started', runId: run!.runId });
  });

  it('a paused schedule fires nothing; resumed, catchUp skip starts nothing for the fire times missed', async () => {
    const user = await setUp();
    const { id, nextFireTimes } = await schedule(user, { catchUp: 'skip' });
    await schedules(user, `/${id}/pause`, { method: 'POST' });
    advanceClock(Date.parse(nextFireTimes[0]!) - now() + 2 * HOUR + 30 * 60_000);
    await runDurableObjectAlarm(stub(id));
    expect(await runsOf(user)).toHaveLength(0);
    const resumed = await schedules(user, `/${id}/resume`, { method: 'POST' });
    expect(resumed.body).toMatchObject({ state: 'active', paused: false });
    await alarmRang(id);
    expect(await runsOf(user)).toHaveLength(0);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'missed' });
    await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(1);
  });

  it('resumed, catchUp run_once starts one run for all the fire times missed while paused', async () => {
    const user = await setUp();
    const { id, nextFireTimes } = await schedule(user, { catchUp: 'run_once' });
    await schedules(user, `/${id}/pause`, { method: 'POST' });
    advanceClock(Date.parse(nextFireTimes[0]!) - now() + 2 * HOUR + 30 * 60_000);
    await runDurableObjectAlarm(stub(id));
    expect(await runsOf(user)).toHaveLength(0);
    await schedules(user, `/${id}/resume`, { method: 'POST' });
    await alarmRang(id);
    for (let i = 0; i < 100 && (await runsOf(user)).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await runsOf(user)).toHaveLength(1);
    expect((await read(user, id)).lastFire).toMatchObject({ outcome: 'started', reason: 'covers 3 fire times' });
    await runDurableObjectAlarm(stub(id));
    expect(await runsOf(user)).toHaveLength(1);
  });

  it('after an outage (its alarm late by hours) the missed fire times start one run with run_once, none with skip', async () => {
    const user = await setUp();
    const once = await schedule(user, { catchUp: 'run_once', overlap: 'allow' });
    const skip = await schedule(user, { catchUp: 'skip', overlap: 'allow' });
    advanceClock(Date.parse(once.nextFireTimes[0]!) - now() + 3 * HOUR + 30 * 60_000);
    expect(await runDurableObjectAlarm(stub(once.id))).toBe(true);
    expect(await runDurableObjectAlarm(stub(skip.id))).toBe(true);
    expect(await runsOf(user)).toHaveLength(1);
    expect((await read(user, once.id)).lastFire).toMatchObject({ outcome: 'started', reason: 'covers 4 fire times' });
    expect((await read(user, skip.id)).lastFire).toMatchObject({ outcome: 'missed', reason: '4 fire time(s) missed' });
    // Each goes on at its next fire time.
    await toNextFire(user, skip.id);
    expect(await runsOf(user)).toHaveLength(2);
  });

  it('a deleted schedule fires no more', async () => {
    const user = await setUp();
    const { id, nextFireTimes } = await schedule(user);
    expect((await schedules(user, `/${id}`, { method: 'DELETE' })).body).toEqual({ success: true });
    advanceClock(Date.parse(nextFireTimes[0]!) - now() + 1_000);
    expect(await runDurableObjectAlarm(stub(id))).toBe(false);
    expect(await runsOf(user)).toHaveLength(0);
    expectError(await schedules(user, `/${id}`), 404, 'NOT_FOUND');
  });

  it('stops, saying why, when the key it acts for is revoked; resumed by a member it acts for them', async () => {
    const user = await setUp();
    const key = await createKey(user, ['workflow:run', 'library:read']);
    const { id } = await schedule(user, {}, key.key);
    expect((await read(user, id)).actsFor.credential).toEqual({ type: 'api_key', apiKeyId: key.id });
    await call(`/api/v1/api-keys/${key.id}/revoke`, { method: 'POST', token: user.token });
    await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(0);
    const stopped = await read(user, id);
    expect(stopped).toMatchObject({ state: 'stopped', stoppedReason: 'The credential this schedule acts for was revoked', nextFireTimes: [] });
    const resumed = await schedules(user, `/${id}/resume`, { method: 'POST' });
    expect(resumed.body).toMatchObject({ state: 'active', stoppedReason: null, actsFor: { credential: { type: 'session' } } });
    await alarmRang(id);
    await toNextFire(user, id);
    expect(await runsOf(user)).toHaveLength(1);
  });

  it('uninstalling the workflow deletes its schedules', async () => {
    const user = await setUp(definition('nightly', [mapping('m', { a: { value: 1 } })]));
    const { id } = await schedule(user, { input: {} });
    expect((await call('/api/v1/workflows/nightly', { method: 'DELETE', token: user.token })).status).toBe(200);
    expect(await runDurableObjectAlarm(stub(id))).toBe(false);
  });
});
