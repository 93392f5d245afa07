import { MissingRequiredClientCapabilityError, ProtocolErrorCode, type InputRequests, type McpServer, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { RouteAccess } from '../auth/access';
import { authorizeWithGrants } from '../auth/actor';
import type { CapabilityContext } from '../capabilities/capability';
import { AppError } from '../errors';
import { toIso } from '../lib/clock';
import { cancelExecution, executionOutcome, startedRunOf } from '../services/executions';
import { windowOf } from '../services/retention';
import { cancelRun, findRun, presentRun, resumeRun, type RunRecord } from '../services/workflow-runs';
import { TASKS_EXTENSION, takesTasks } from './client-capabilities';
import { JsonRpcError } from './json-rpc-error';
import { answerTo, inputRequestsOf, runQuestions } from './run-input';

/**
 * MCP Tasks (the `io.modelcontextprotocol/tasks` extension, 2026-07-28 clients): a skill run or a
 * workflow run started by a tool is its task. The task id is the durable id the service already
 * has (`exec_<n>`, the run's id), and its state is read from the execution or the run each time:
 * nothing is stored for a task, so any isolate answers for it.
 */

/** How often a client should poll a task. */
const POLL_INTERVAL_MS = 2_000;
const DAY_MS = 86_400_000;

/** The tools that start a run, and the task id their answer names. */
export const TASK_TOOLS: Record<string, (started: Record<string, unknown>) => string> = {
  'execute-skill': (started) => String(started.executionId),
  'start-workflow': (started) => String(started.runId),
};

export const isExecution = (taskId: string) => taskId.startsWith('exec_');

type TaskStatus = 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed';

/** A task as `tasks/get` answers it: the state, and the result once completed or the input requests while it waits. */
export interface TaskState {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  result?: Record<string, unknown>;
  inputRequests?: InputRequests;
}

/** A tool's answer as the tool call sends it: JSON text and `structuredContent`. */
export const toolResult = (answer: object) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(answer) }],
  structuredContent: answer as Record<string, unknown>,
});

/**
 * The task is kept as long as its execution or run is: the workspace's retention window for it,
 * counted from its last activity, so at least that long from its creation.
 */
export const ttlOf = async (ctx: CapabilityContext, kind: 'executions' | 'workflowRuns') => (await windowOf(ctx.db, ctx.actor.workspaceId, kind)) * DAY_MS;

/** Another workspace's execution or run is not found, as a missing one is. */
const notFound = (taskId: string) => new JsonRpcError(ProtocolErrorCode.InvalidParams, 'Task not found', { taskId });
/** An execution service's 404 as the task's not-found. */
const orNotFound = (taskId: string) => (error: unknown) => {
  throw error instanceof AppError && error.status === 404 ? notFound(taskId) : error;
};

async function executionTask(ctx: CapabilityContext, taskId: string): Promise<TaskState> {
  const { execution, stopReason } = await executionOutcome(ctx.db, ctx.env, ctx.actor, taskId).catch(orNotFound(taskId));
  const base = {
    taskId,
    createdAt: toIso(execution.startedAt),
    lastUpdatedAt: toIso(execution.completedAt ?? execution.startedAt),
    ttlMs: await ttlOf(ctx, 'executions'),
    pollIntervalMs: POLL_INTERVAL_MS,
  };
  // The result is what execute-skill answers; get-execution-status reads the run's output.
  const result = toolResult(startedRunOf(execution));
  switch (execution.status) {
    case 'working':
      return { ...base, status: 'working', statusMessage: 'The run is working' };
    case 'completed':
      return { ...base, status: 'completed', statusMessage: 'The run ended', result };
    case 'failed':
      return { ...base, status: 'completed', statusMessage: 'The run failed', result };
    case 'idle':
      return stopReason === 'interrupt'
        ? { ...base, status: 'cancelled', statusMessage: 'The run was interrupted' }
        : { ...base, status: 'completed', statusMessage: stopReason === 'limit_reached' ? 'The run stopped at its limit' : 'The run ended', result };
  }
}

/** The task of a workflow run: suspended is `input_required`, asking each suspended step's question. */
export function runTaskState(run: RunRecord, threadId: string | null, ttlMs: number): TaskState {
  const base = { taskId: run.runId, createdAt: run.createdAt, lastUpdatedAt: run.updatedAt, ttlMs, pollIntervalMs: POLL_INTERVAL_MS };
  // The result is what start-workflow answers; get-workflow-run reads the steps' output.
  const result = toolResult({ runId: run.runId, workflowId: run.workflowId, status: 'started', ...(threadId === null ? {} : { conversationId: threadId }) });
  switch (run.status) {
    case 'suspended': {
      const questions = runQuestions(run);
      return questions.length
        ? {
            ...base,
            status: 'input_required',
            statusMessage: `Waiting for input at ${questions.map((q) => q.stepId).join(', ')}`,
            inputRequests: inputRequestsOf(questions),
          }
        : { ...base, status: 'working', statusMessage: 'The run is suspended' };
    }
    case 'success':
      return { ...base, status: 'completed', statusMessage: 'The run succeeded', result };
    case 'failed':
      return { ...base, status: 'completed', statusMessage: 'The run failed', result };
    case 'canceled':
      return { ...base, status: 'cancelled', statusMessage: 'The run was cancelled' };
    default:
      return { ...base, status: 'working', statusMessage: 'The run is running' };
  }
}

async function requireRun(ctx: CapabilityContext, taskId: string) {
  const row = await findRun(ctx.db, ctx.actor, taskId);
  if (!row) throw notFound(taskId);
  return row;
}

/** The task's current state, read from its execution or run. */
export async function taskState(ctx: CapabilityContext, taskId: string): Promise<TaskState> {
  if (isExecution(taskId)) return executionTask(ctx, taskId);
  const row = await requireRun(ctx, taskId);
  return runTaskState(presentRun(row), row.threadId, await ttlOf(ctx, 'workflowRuns'));
}

/**
 * The answer to a tool call that started a run, for a client that takes tasks: the task as
 * `tasks/get` would answer it now (`resultType: "task"`). The tool's own answer rides along as
 * `content` and `structuredContent`, which the SDK checks against the tool's output schema.
 */
export async function createdTask(ctx: CapabilityContext, toolName: string, answer: object) {
  const taskId = TASK_TOOLS[toolName]!(answer as Record<string, unknown>);
  const { result: _result, inputRequests: _asked, ...task } = await taskState(ctx, taskId);
  return { ...toolResult(answer), ...task, resultType: 'task' as const };
}

/** The access each task method needs: that of the tool that does the same to an execution or a run. */
export type TaskAccess = (method: 'tasks/get' | 'tasks/update' | 'tasks/cancel', taskId: string) => RouteAccess | undefined;

const TaskParams = z.object({ taskId: z.string().min(1).max(100) });

/** An operation's refusal (a scope the key lacks, a resume refused) as a JSON-RPC error carrying the service's envelope. */
function refusal(error: unknown): never {
  if (error instanceof AppError) throw new JsonRpcError(ProtocolErrorCode.InvalidRequest, error.message, error.toEnvelope());
  throw error;
}

/**
 * `tasks/get`, `tasks/update` and `tasks/cancel`, each checked against the access of the tool
 * that does the same (an OAuth token lacking it was already challenged at the endpoint).
 * `tasks/update` resumes the suspended step its answer is for; `tasks/cancel` cancels the
 * execution or the run through the cancel routes' services. Both acknowledge with an empty result.
 */
export function registerTasks(server: McpServer, ctx: CapabilityContext, accessOf: TaskAccess) {
  // The task methods belong to the extension: a request whose client did not declare it is refused as the extension requires.
  const authorized = async (method: Parameters<TaskAccess>[0], taskId: string, call: ServerContext) => {
    if (!takesTasks(call)) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    const access = accessOf(method, taskId);
    if (access) await authorizeWithGrants(ctx.globalDb, access, ctx.actor, ctx.grantToken).catch(refusal);
  };
  server.server.setRequestHandler('tasks/get', { params: TaskParams }, async ({ taskId }, call) => {
    await authorized('tasks/get', taskId, call);
    return { ...(await taskState(ctx, taskId)) };
  });
  // The SDK lifts `inputResponses` off the params, as it does for a retried call.
  server.server.setRequestHandler('tasks/update', { params: TaskParams }, async ({ taskId }, call) => {
    await authorized('tasks/update', taskId, call);
    if (isExecution(taskId)) {
      await executionTask(ctx, taskId);
      return {};
    }
    const row = await requireRun(ctx, taskId);
    // Answers to questions no longer asked (already answered, or of another suspension) are ignored.
    const { accepted } = answerTo(runQuestions(presentRun(row)), call.mcpReq.inputResponses);
    const resumed = accepted && (await resumeRun(ctx.db, ctx.env, ctx.actor, row.runId, accepted));
    // A refused answer (not what the step's resume schema asks, a scope the resumer lacks) is a clearly invalid update.
    if (resumed && resumed.status !== 200) throw new JsonRpcError(ProtocolErrorCode.InvalidParams, 'The run did not take the answer', resumed.body);
    return {};
  });
  server.server.setRequestHandler('tasks/cancel', { params: TaskParams }, async ({ taskId }, call) => {
    await authorized('tasks/cancel', taskId, call);
    if (isExecution(taskId)) await cancelExecution(ctx.db, ctx.env, ctx.actor, taskId).catch(orNotFound(taskId));
    else await cancelRun(ctx.db, ctx.env, ctx.actor, (await requireRun(ctx, taskId)).runId);
    return {};
  });
}
