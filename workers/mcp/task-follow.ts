import type { WorkflowRunStatus } from '../../schema/shard/workflows';
import type { CapabilityContext } from '../capabilities/capability';
import { presentRun } from '../services/workflow-runs';
import { followExecutionStream, NO_REPLAY } from '../services/execution-stream';
import { followRunRecord } from '../services/run-follow';
import { isExecution, runTaskState, taskState, ttlOf, type TaskState } from './tasks';

/** A task's state as a notification sends it, once per change. */
export type TaskReport = (task: TaskState) => Promise<void>;

const ENDED = new Set<TaskState['status']>(['completed', 'failed', 'cancelled']);
/** The run statuses of an ended task. */
const RUN_ENDED: ReadonlySet<WorkflowRunStatus> = new Set<WorkflowRunStatus>(['success', 'failed', 'canceled']);

/** What a notification shows of a task: a newer `lastUpdatedAt` alone (a run's step polled) is not sent again. */
const shown = (task: TaskState) => JSON.stringify([task.status, task.statusMessage, task.inputRequests]);

/** Sends a task's state when what it shows changed since the last one sent. */
function reporter(report: TaskReport) {
  let last: string | undefined;
  return async (task: TaskState) => {
    if (shown(task) === last) return;
    last = shown(task);
    await report(task);
  };
}

/** A skill run's task: its state now, then again each time the execution's stream ends, until the run has ended. */
async function followExecutionTask(ctx: CapabilityContext, taskId: string, signal: AbortSignal, report: TaskReport): Promise<void> {
  let task = await taskState(ctx, taskId);
  await report(task);
  if (ENDED.has(task.status)) return;
  await followExecutionStream(ctx.env, taskId, {
    afterSeq: NO_REPLAY,
    signal,
    ended: async () => {
      task = await taskState(ctx, taskId);
      await report(task);
      return ENDED.has(task.status);
    },
  });
}

/**
 * A workflow run's task, through the run record's follower (read once now, then once per change
 * notice of the run's object): its state now, then each change to what it shows (a suspension
 * asking questions is `input_required`, a resume `working` again), until the run has ended or is gone.
 */
async function followRunTask(ctx: CapabilityContext, taskId: string, signal: AbortSignal, report: TaskReport): Promise<void> {
  const ttlMs = await ttlOf(ctx, 'workflowRuns');
  const gone = new AbortController();
  const stop = AbortSignal.any([signal, gone.signal]);
  let version = -1;
  let ended = false;
  // A follow ends after a while (as a run stream does); the task goes on being followed from the version last seen.
  while (!ended && !stop.aborted) {
    await followRunRecord(ctx.env, ctx.db, ctx.actor, taskId, {
      signal: stop,
      since: version,
      closesOn: RUN_ENDED,
      onRow: async (row) => {
        version = row.version;
        const task = runTaskState(presentRun(row), row.threadId, ttlMs);
        ended = ENDED.has(task.status);
        await report(task);
      },
      onMissing: async () => gone.abort(),
    });
  }
}

/**
 * Follows one task until it has ended or `signal` aborts: `report` gets the task's current state
 * first, then the state after each change to what it shows, exactly as `tasks/get` answers it.
 */
export function followTask(ctx: CapabilityContext, taskId: string, signal: AbortSignal, report: TaskReport): Promise<void> {
  const follow = isExecution(taskId) ? followExecutionTask : followRunTask;
  return follow(ctx, taskId, signal, reporter(report));
}
