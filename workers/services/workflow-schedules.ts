import { and, asc, count, eq } from 'drizzle-orm';
import { z } from 'zod';
import { SCHEDULE_CATCH_UPS, SCHEDULE_OVERLAPS, SCHEDULE_STATES, workflowSchedules, type WorkflowScheduleRow } from '../../schema/shard/workflows';
import { actorToKeep } from '../auth/actor';
import type { Principal } from '../auth/principal';
import type { Env, ShardDb } from '../env';
import { AppError, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import { cronProblem, nextFireTimes, type CronSetting } from '../workflows/schedule-times';
import { recordChange, recordChangeAfter } from './audit';
import { requireInstalled } from './workflow-definitions';
import { compileWithInputs } from './workflow-runs';

/**
 * Workflow schedules (docs/workflows.md, Schedules): cron schedules of an installed workflow,
 * each firing from its own WorkflowSchedule object (durable-objects/WorkflowSchedule.ts). This
 * module is their settings: create, list, read, change, pause, resume, delete.
 */

/** Schedules one workflow may have. */
export const MAX_SCHEDULES_PER_WORKFLOW = 20;

const ScheduleSettings = z.object({
  cron: z.string().min(1).max(120).describe('Five-field cron expression (minute hour day-of-month month day-of-week) or a nickname such as @daily'),
  timezone: z.string().min(1).max(64).describe('IANA time zone the cron expression is read in (default UTC)'),
  input: z.record(z.string(), z.unknown()).describe('The input of every run it launches, checked against the workflow’s inputSchema'),
  overlap: z
    .enum(SCHEDULE_OVERLAPS)
    .describe('A fire time while a run it started is unfinished: skip it, queue one run for when that ends, or allow both (default skip)'),
  catchUp: z.enum(SCHEDULE_CATCH_UPS).describe('Fire times missed while paused or down: skip them, or start one run for them all (default skip)'),
});

export const ScheduleBody = ScheduleSettings.extend({
  timezone: ScheduleSettings.shape.timezone.default('UTC'),
  input: ScheduleSettings.shape.input.default({}),
  overlap: ScheduleSettings.shape.overlap.default('skip'),
  catchUp: ScheduleSettings.shape.catchUp.default('skip'),
  paused: z.boolean().default(false).describe('Create it paused'),
});
export type ScheduleBody = z.output<typeof ScheduleBody>;

export const ScheduleChange = ScheduleSettings.partial();
export type ScheduleChange = z.output<typeof ScheduleChange>;

export const ScheduleId = z.string().min(1).max(64).describe('The schedule id');

export const Schedule = z.object({
  id: z.string(),
  workflowId: z.string().describe('The workflow’s slug'),
  cron: z.string(),
  timezone: z.string(),
  input: z.record(z.string(), z.unknown()),
  overlap: z.enum(SCHEDULE_OVERLAPS),
  catchUp: z.enum(SCHEDULE_CATCH_UPS),
  paused: z.boolean(),
  state: z.enum(SCHEDULE_STATES),
  stoppedReason: z.string().nullable().describe('Why it stopped (state stopped): its credential no longer acts here, or its run could not be launched'),
  actsFor: z.object({
    userId: z.string(),
    credential: z.object({ type: z.enum(['session', 'api_key', 'oauth']), apiKeyId: z.string().nullable() }),
  }),
  nextFireTimes: z.array(z.string()).describe('The next five fire times (ISO 8601); empty unless active'),
  lastFire: z
    .object({
      fireTime: z.string(),
      outcome: z.enum(['started', 'queued', 'skipped', 'missed']),
      runId: z.string().optional(),
      reason: z.string().optional(),
    })
    .nullable(),
  createdBy: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Schedule = z.infer<typeof Schedule>;

const present = (row: WorkflowScheduleRow): Schedule => ({
  id: row.id,
  workflowId: row.workflowSlug,
  cron: row.cron,
  timezone: row.timezone,
  input: JSON.parse(row.input) as Record<string, unknown>,
  overlap: row.overlap,
  catchUp: row.catchUp,
  paused: row.state === 'paused',
  state: row.state,
  stoppedReason: row.stoppedReason,
  actsFor: {
    userId: row.actorUserId,
    credential: { type: row.actorCredentialType, apiKeyId: row.actorApiKeyId === null ? null : formatId('key', row.actorApiKeyId) },
  },
  nextFireTimes: row.state === 'active' ? nextFireTimes(row, now()).map(toIso) : [],
  lastFire: row.lastFire ? { ...row.lastFire, fireTime: toIso(row.lastFire.fireTime) } : null,
  createdBy: row.createdBy,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
});

const actorColumns = (principal: Principal) => ({
  actorUserId: principal.userId,
  actorCredentialType: principal.credential.type,
  actorApiKeyId: principal.credential.type === 'api_key' ? principal.credential.apiKeyId : null,
});

const objectOf = (env: Env, id: string) => env.WORKFLOW_SCHEDULE.getByName(id);

/** The schedule of this workflow in this workspace, or 404: another workspace's answers exactly like a missing one. */
async function requireSchedule(db: ShardDb, principal: Principal, slug: string, id: string): Promise<WorkflowScheduleRow> {
  const [row] = await db
    .select()
    .from(workflowSchedules)
    .where(and(eq(workflowSchedules.workspaceId, principal.workspaceId), eq(workflowSchedules.workflowSlug, slug), eq(workflowSchedules.id, id)))
    .limit(1);
  if (!row) throw notFound('Schedule');
  return row;
}

function checkCron(setting: CronSetting) {
  const problem = cronProblem(setting);
  if (problem) throw invalidInput(problem.field, problem.rule, problem.message);
}

/** A schedule's object could not be reached: what was written for it is taken back by the caller, and this is the answer. */
const unreachable = (error: unknown) =>
  new AppError('INTERNAL_ERROR', 500, 'The schedule could not be set going; nothing was changed', {
    cause: error instanceof Error ? error.message : String(error),
  });

export async function createSchedule(db: ShardDb, env: Env, principal: Principal, slug: string, body: ScheduleBody): Promise<Schedule> {
  const workflow = await requireInstalled(db, principal, slug);
  checkCron(body);
  await compileWithInputs(db, principal, workflow, body.input, 'input');
  const [existing] = await db
    .select({ n: count() })
    .from(workflowSchedules)
    .where(and(eq(workflowSchedules.workspaceId, principal.workspaceId), eq(workflowSchedules.workflowSlug, slug)));
  if ((existing?.n ?? 0) >= MAX_SCHEDULES_PER_WORKFLOW) {
    throw invalidInput('slug', 'limit', `A workflow has at most ${MAX_SCHEDULES_PER_WORKFLOW} schedules; delete one first`, {
      limit: MAX_SCHEDULES_PER_WORKFLOW,
    });
  }
  const id = crypto.randomUUID();
  const t = now();
  const state = body.paused ? ('paused' as const) : ('active' as const);
  await db.batch([
    db.insert(workflowSchedules).values({
      id,
      workspaceId: principal.workspaceId,
      workflowSlug: slug,
      cron: body.cron,
      timezone: body.timezone,
      input: JSON.stringify(body.input),
      overlap: body.overlap,
      catchUp: body.catchUp,
      state,
      ...actorColumns(principal),
      createdBy: principal.userId,
      createdAt: t,
      updatedAt: t,
    }),
    ...recordChange(db, principal, {
      action: 'workflow.schedule_created',
      resourceType: 'workflow_schedule',
      resourceId: id,
      metadata: { workflowId: slug, cron: body.cron, timezone: body.timezone },
      activity: `A schedule of workflow ${workflow.name} was created (${body.cron}, ${body.timezone})`,
    }),
  ]);
  // The row first: the object's first alarm reads it.
  try {
    await objectOf(env, id).begin({ scheduleId: id, workspaceId: principal.workspaceId, shard: principal.shard }, actorToKeep(principal), {
      cron: body.cron,
      timezone: body.timezone,
      active: state === 'active',
    });
  } catch (error) {
    await db.delete(workflowSchedules).where(eq(workflowSchedules.id, id));
    throw unreachable(error);
  }
  return getSchedule(db, principal, slug, id);
}

export async function listSchedules(db: ShardDb, principal: Principal, slug: string): Promise<{ schedules: Schedule[] }> {
  await requireInstalled(db, principal, slug);
  const rows = await db
    .select()
    .from(workflowSchedules)
    .where(and(eq(workflowSchedules.workspaceId, principal.workspaceId), eq(workflowSchedules.workflowSlug, slug)))
    .orderBy(asc(workflowSchedules.createdAt), asc(workflowSchedules.id));
  return { schedules: rows.map(present) };
}

export async function getSchedule(db: ShardDb, principal: Principal, slug: string, id: string): Promise<Schedule> {
  return present(await requireSchedule(db, principal, slug, id));
}

export async function changeSchedule(db: ShardDb, env: Env, principal: Principal, slug: string, id: string, change: ScheduleChange): Promise<Schedule> {
  const row = await requireSchedule(db, principal, slug, id);
  const timing = { cron: change.cron ?? row.cron, timezone: change.timezone ?? row.timezone };
  const retimed = timing.cron !== row.cron || timing.timezone !== row.timezone;
  if (retimed) checkCron(timing);
  if (change.input !== undefined) await compileWithInputs(db, principal, await requireInstalled(db, principal, slug), change.input, 'input');
  await db.batch([
    db
      .update(workflowSchedules)
      .set({
        ...timing,
        ...(change.input === undefined ? {} : { input: JSON.stringify(change.input) }),
        ...(change.overlap === undefined ? {} : { overlap: change.overlap }),
        ...(change.catchUp === undefined ? {} : { catchUp: change.catchUp }),
        updatedAt: now(),
      })
      .where(eq(workflowSchedules.id, id)),
    ...recordChange(db, principal, {
      action: 'workflow.schedule_changed',
      resourceType: 'workflow_schedule',
      resourceId: id,
      metadata: { workflowId: slug, fields: Object.keys(change) },
    }),
  ]);
  if (retimed) await objectOf(env, id).reset({ ...timing, active: row.state === 'active' });
  return getSchedule(db, principal, slug, id);
}

/** Pausing: its alarm finds the row paused and fires nothing (a fire waiting behind a run is dropped). */
export async function pauseSchedule(db: ShardDb, principal: Principal, slug: string, id: string): Promise<Schedule> {
  const row = await requireSchedule(db, principal, slug, id);
  if (row.state === 'active') {
    await db.batch([
      db.update(workflowSchedules).set({ state: 'paused', updatedAt: now() }).where(eq(workflowSchedules.id, id)),
      ...recordChange(db, principal, { action: 'workflow.schedule_paused', resourceType: 'workflow_schedule', resourceId: id, metadata: { workflowId: slug } }),
    ]);
  }
  return getSchedule(db, principal, slug, id);
}

/**
 * Resuming a paused or stopped schedule: it acts for the caller's credential from now on, and
 * fire times missed meanwhile are handled at once, as `catchUp` says. An active one is left as it is.
 */
export async function resumeSchedule(db: ShardDb, env: Env, principal: Principal, slug: string, id: string): Promise<Schedule> {
  const row = await requireSchedule(db, principal, slug, id);
  if (row.state === 'active') return present(row);
  const restore = {
    state: row.state,
    stoppedReason: row.stoppedReason,
    actorUserId: row.actorUserId,
    actorCredentialType: row.actorCredentialType,
    actorApiKeyId: row.actorApiKeyId,
  };
  await db
    .update(workflowSchedules)
    .set({ state: 'active', stoppedReason: null, ...actorColumns(principal), updatedAt: now() })
    .where(eq(workflowSchedules.id, id));
  try {
    await objectOf(env, id).resume(actorToKeep(principal));
  } catch (error) {
    await db.update(workflowSchedules).set(restore).where(eq(workflowSchedules.id, id));
    throw unreachable(error);
  }
  await recordChangeAfter(db, principal, {
    action: 'workflow.schedule_resumed',
    resourceType: 'workflow_schedule',
    resourceId: id,
    metadata: { workflowId: slug },
  });
  return getSchedule(db, principal, slug, id);
}

export async function deleteSchedule(db: ShardDb, env: Env, principal: Principal, slug: string, id: string): Promise<{ success: true }> {
  await requireSchedule(db, principal, slug, id);
  await db.batch([
    db.delete(workflowSchedules).where(eq(workflowSchedules.id, id)),
    ...recordChange(db, principal, { action: 'workflow.schedule_deleted', resourceType: 'workflow_schedule', resourceId: id, metadata: { workflowId: slug } }),
  ]);
  // Row first: an object whose erase fails finds no row at its next alarm and erases itself.
  await objectOf(env, id)
    .erase()
    .catch((error: unknown) => console.error(JSON.stringify({ level: 'error', scheduleId: id, error: `schedule object erase failed: ${String(error)}` })));
  return { success: true };
}

/** Uninstalling a workflow deletes its schedules, rows then objects. */
export async function deleteSchedulesOf(db: ShardDb, env: Env, workspaceId: string, slug: string): Promise<void> {
  const where = and(eq(workflowSchedules.workspaceId, workspaceId), eq(workflowSchedules.workflowSlug, slug));
  const rows = await db.select({ id: workflowSchedules.id }).from(workflowSchedules).where(where);
  if (rows.length === 0) return;
  await db.delete(workflowSchedules).where(where);
  // An object not reached now finds no row at its next alarm and erases itself.
  await Promise.allSettled(rows.map(({ id }) => objectOf(env, id).erase()));
}
