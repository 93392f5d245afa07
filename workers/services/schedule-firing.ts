import { and, eq, inArray } from 'drizzle-orm';
import { UNFINISHED_RUN_STATUSES, workflowRuns, workflowSchedules, type ScheduleFire, type WorkflowScheduleRow } from '../../schema/shard/workflows';
import type { Actor } from '../auth/actor';
import { credentialNow, LAUNCHED } from '../auth/launcher';
import { hasScope } from '../auth/scopes';
import type { Env, ShardDb } from '../env';
import { AppError } from '../errors';
import { now, toIso } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';
import { recordChangeAfter } from './audit';
import { launchWorkflow } from './workflow-runs';

/**
 * What a schedule's fire does in D1, for its WorkflowSchedule object: launch the run as the
 * schedule's credential stands now, stop the schedule when that cannot be, record the outcome.
 */

/** The scope a schedule's runs are launched under, as the launch route asks it. */
const RUN_SCOPE = 'workflow:run';

/** A schedule that cannot fire as set any more: it is stopped with this reason. */
export class ScheduleStopped extends Error {}

export const readSchedule = async (db: ShardDb, scheduleId: string): Promise<WorkflowScheduleRow | undefined> =>
  (await db.select().from(workflowSchedules).where(eq(workflowSchedules.id, scheduleId)).limit(1))[0];

/**
 * The launch key of one fire time: the run's id is made from it (launchWorkflow's `toolCallKey`),
 * so launching the same fire time again, after a crash before the launch was recorded, finds the
 * run already started and records its launch once.
 */
export const fireKey = async (scheduleId: string, fireTime: number) => (await sha256Hex(`schedule:${scheduleId}:${fireTime}`)).slice(0, 32);

/**
 * Launches the schedule's run for `fireTime` as its credential stands now (revoked, signed out,
 * expired, its holder gone from the workspace, or without `workflow:run` any more: stopped). A
 * refusal of the launch itself (the workflow uninstalled, its input no longer fitting the
 * inputSchema) stops the schedule too; anything else throws, to be tried again.
 */
export async function launchFire(db: ShardDb, env: Env, row: WorkflowScheduleRow, stored: Actor, fireTime: number): Promise<string> {
  const held = await credentialNow(env, stored);
  if (!held.ok) throw new ScheduleStopped(held.reason.replace(LAUNCHED, 'The credential this schedule acts for'));
  if (!hasScope(held.actor.scopes, RUN_SCOPE)) throw new ScheduleStopped(`The credential this schedule acts for no longer holds "${RUN_SCOPE}"`);
  const actor: Actor = { ...held.actor, origin: { requestId: `schedule:${row.id}:${toIso(fireTime)}`, ip: null, userAgent: null } };
  try {
    const launched = await launchWorkflow(db, env, actor, {
      workflowId: row.workflowSlug,
      inputs: JSON.parse(row.input) as Record<string, unknown>,
      toolCallKey: await fireKey(row.id, fireTime),
      scheduleId: row.id,
    });
    return launched.runId;
  } catch (error) {
    if (error instanceof AppError && error.status < 500) throw new ScheduleStopped(`The run could not be launched: ${error.message}`);
    throw error;
  }
}

/** Of `runIds`, those not finished yet (a run whose record is gone, by retention, has finished). */
export async function unfinishedRuns(db: ShardDb, workspaceId: string, runIds: string[]): Promise<string[]> {
  if (runIds.length === 0) return [];
  const rows = await db
    .select({ runId: workflowRuns.runId })
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, workspaceId), inArray(workflowRuns.runId, runIds), inArray(workflowRuns.status, UNFINISHED_RUN_STATUSES)));
  const open = new Set(rows.map((r) => r.runId));
  return runIds.filter((id) => open.has(id));
}

export const recordFire = (db: ShardDb, scheduleId: string, fire: ScheduleFire) =>
  db.update(workflowSchedules).set({ lastFire: fire }).where(eq(workflowSchedules.id, scheduleId));

/** Stops the schedule, recording why, as its credential's holder (the audit entry `workflow.schedule_stopped`). */
export async function stopSchedule(db: ShardDb, row: WorkflowScheduleRow, stored: Actor, reason: string): Promise<void> {
  await db
    .update(workflowSchedules)
    .set({ state: 'stopped', stoppedReason: reason, updatedAt: now() })
    .where(and(eq(workflowSchedules.id, row.id), eq(workflowSchedules.state, 'active')));
  await recordChangeAfter(db, stored, {
    action: 'workflow.schedule_stopped',
    resourceType: 'workflow_schedule',
    resourceId: row.id,
    metadata: { workflowId: row.workflowSlug, reason },
    activity: `A schedule of workflow ${row.workflowSlug} stopped: ${reason}`,
  });
}
