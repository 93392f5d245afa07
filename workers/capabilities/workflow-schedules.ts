import { z } from 'zod';
import { optionalJsonBody } from '../middleware/validate';
import { WorkflowSlug } from '../services/workflow-definitions';
import {
  changeSchedule,
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  pauseSchedule,
  resumeSchedule,
  Schedule,
  ScheduleBody,
  ScheduleChange,
  ScheduleId,
} from '../services/workflow-schedules';
import { defineCapability, READ_ONLY, WRITE, type Capability } from './capability';

// As the workflow routes: reading needs library:read, anything that makes runs happen workflow:run.
const READ = { auth: 'credential', scope: 'library:read' } as const;
const RUN = { auth: 'credential', scope: 'workflow:run' } as const;
const REMOVES = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;

const Slug = z.object({ slug: WorkflowSlug });
const OneSchedule = Slug.extend({ scheduleId: ScheduleId });

/** Cron schedules of an installed workflow (docs/workflows.md, Schedules), under `/api/v1/workflows/:slug/schedules`. */
export const scheduleCapabilities: Capability[] = [
  defineCapability({
    name: 'list-workflow-schedules',
    title: 'List workflow schedules',
    description: 'Lists the cron schedules of an installed workflow, each with its state, next five fire times and last fire.',
    access: READ,
    input: Slug,
    output: z.object({ schedules: z.array(Schedule) }),
    annotations: READ_ONLY,
    http: { method: 'GET', path: '/:slug/schedules', summary: 'Schedules of a workflow' },
    run: (ctx, { slug }) => listSchedules(ctx.db, ctx.actor, slug),
  }),
  defineCapability({
    name: 'create-workflow-schedule',
    title: 'Schedule a workflow',
    description:
      'Schedules an installed workflow on a five-field cron expression in a time zone, with fixed input (checked against its inputSchema), an overlap policy (skip, queue_one, allow) and a catch-up policy for fire times missed while paused (skip, run_once). Runs act for the credential that creates (or resumes) the schedule.',
    access: RUN,
    input: Slug.extend(ScheduleBody.shape),
    output: Schedule,
    annotations: WRITE,
    http: { method: 'POST', path: '/:slug/schedules', status: 201, summary: 'Schedule a workflow' },
    run: (ctx, { slug, ...body }) => createSchedule(ctx.db, ctx.env, ctx.actor, slug, body),
  }),
  defineCapability({
    name: 'get-workflow-schedule',
    title: 'Get a workflow schedule',
    description: 'One schedule of a workflow, with its next five fire times and last fire.',
    access: READ,
    input: OneSchedule,
    output: Schedule,
    annotations: READ_ONLY,
    http: { method: 'GET', path: '/:slug/schedules/:scheduleId', summary: 'One schedule' },
    mcp: false,
    run: (ctx, { slug, scheduleId }) => getSchedule(ctx.db, ctx.actor, slug, scheduleId),
  }),
  defineCapability({
    name: 'update-workflow-schedule',
    title: 'Change a workflow schedule',
    description: 'Changes a schedule’s cron, time zone, input, overlap or catch-up; a new cron or time zone counts fire times from now.',
    access: RUN,
    input: OneSchedule.extend(ScheduleChange.shape),
    output: Schedule,
    annotations: { ...WRITE, idempotentHint: true },
    http: { method: 'PATCH', path: '/:slug/schedules/:scheduleId', summary: 'Change a schedule' },
    mcp: false,
    run: (ctx, { slug, scheduleId, ...change }) => changeSchedule(ctx.db, ctx.env, ctx.actor, slug, scheduleId, change),
  }),
  defineCapability({
    name: 'pause-workflow-schedule',
    title: 'Pause a workflow schedule',
    description: 'Pauses a schedule: it fires nothing until resumed.',
    access: RUN,
    input: OneSchedule,
    output: Schedule,
    annotations: { ...WRITE, idempotentHint: true },
    http: { method: 'POST', path: '/:slug/schedules/:scheduleId/pause', before: [optionalJsonBody], summary: 'Pause a schedule' },
    run: (ctx, { slug, scheduleId }) => pauseSchedule(ctx.db, ctx.actor, slug, scheduleId),
  }),
  defineCapability({
    name: 'resume-workflow-schedule',
    title: 'Resume a workflow schedule',
    description:
      'Sets a paused or stopped schedule going again, acting for the caller’s credential from now on; fire times missed meanwhile start one run or none, as its catchUp says.',
    access: RUN,
    input: OneSchedule,
    output: Schedule,
    annotations: { ...WRITE, idempotentHint: true },
    http: { method: 'POST', path: '/:slug/schedules/:scheduleId/resume', before: [optionalJsonBody], summary: 'Resume a schedule' },
    run: (ctx, { slug, scheduleId }) => resumeSchedule(ctx.db, ctx.env, ctx.actor, slug, scheduleId),
  }),
  defineCapability({
    name: 'delete-workflow-schedule',
    title: 'Delete a workflow schedule',
    description: 'Deletes a schedule; runs it already started keep going.',
    access: RUN,
    input: OneSchedule,
    output: z.object({ success: z.literal(true) }),
    annotations: REMOVES,
    http: { method: 'DELETE', path: '/:slug/schedules/:scheduleId', summary: 'Delete a schedule' },
    run: (ctx, { slug, scheduleId }) => deleteSchedule(ctx.db, ctx.env, ctx.actor, slug, scheduleId),
  }),
];
