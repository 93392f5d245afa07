import { and, desc, eq, inArray } from 'drizzle-orm';
import { z } from 'zod';
import { threads } from '../../schema';
import { UNFINISHED_RUN_STATUSES, workflowRuns, workflowStepResults, type WorkflowRow, type WorkflowRunRow } from '../../schema/shard/workflows';
import { runActor } from '../auth/actor';
import type { CredentialKind } from '../auth/credentials';
import type { Principal } from '../auth/principal';
import type { ShardDb, Env } from '../env';
import { AppError, conflict, forbidden, invalidInput, notFound } from '../errors';
import { toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import type { CompiledWorkflow, Concurrency, Json } from '../workflows/compiler';
import { fillTemplate } from '../workflows/predicates';
import type { RerunFrom } from '../workflows/interpreter';
import type { StartInput } from '../workflows/run-start';
import { valueProblem } from '../workflows/json-schema';
import { compileFor, resolveLaunchId } from './workflow-definitions';
import { recordChangeAfter } from './audit';

/** Workflow runs (spec 4.8): launch, list, read, resume, cancel, and the queue of unfinished runs. */

type CompiledNode = CompiledWorkflow['nodes'][number];

/** The statuses a run ends in: only such a run may be rerun. */
const FINISHED: readonly string[] = ['success', 'failed', 'canceled'];

/** Spec 8: the runs list defaults to 50. */
const DEFAULT_RUNS_PAGE = 50;
const MAX_RUNS_PAGE = 200;

export const LaunchInput = z.object({
  workflowId: z.string().min(1).max(200).describe('The workflow’s slug, runtime id or declared id'),
  inputs: z.record(z.string(), z.unknown()).optional().describe('The run’s input data (initData), validated against the workflow’s inputSchema'),
  threadId: z.string().min(1).max(100).optional().describe('The chat thread the run was started from; it gets the run’s outcome as a message'),
});
/**
 * A launch: what a caller asks for, and the key that makes it once (a run's tool call, a
 * schedule's fire time); a schedule's launch names the schedule, which the run tells when it ends.
 */
export type LaunchRequest = z.infer<typeof LaunchInput> & { toolCallKey?: string; scheduleId?: string };

export const Launched = z.object({
  runId: z.string(),
  workflowId: z.string(),
  status: z.literal('started'),
  /** Only for runs started from a chat thread (spec 4.8). */
  conversationId: z.string().optional(),
});
export type Launched = z.infer<typeof Launched>;

/** A tool call's run id, shaped as the ids of other runs: its key (32 hex digits) as a UUID. */
const runIdOf = (key: string) => `${key.slice(0, 8)}-${key.slice(8, 12)}-${key.slice(12, 16)}-${key.slice(16, 20)}-${key.slice(20)}`;

/**
 * The installed definition compiled, with `inputs` checked against its inputSchema: 400 naming
 * `<field>.<path>` otherwise (launch's `inputs`, a schedule's `input`).
 */
export async function compileWithInputs(db: ShardDb, principal: Principal, row: WorkflowRow, inputs: Record<string, unknown>, field: string) {
  const compiled = await compiledDefinition(db, principal, row);
  const problem = valueProblem(compiled.inputSchema, inputs);
  if (problem) {
    const path = [field, ...problem.pointer.split('/').filter(Boolean)].join('.');
    throw invalidInput(path, 'input_schema', `${path}: ${problem.message}`);
  }
  return compiled;
}

/**
 * Recompiles the installed definition, validates the inputs against its inputSchema and hands
 * the run to a fresh WorkflowRun object, which writes the run record and queues the first step.
 * Without the queue binding nothing is created (503). Launched by a run's tool call
 * (`toolCallKey`), the run's id is the call's, so the call made again by a cut-off turn starts
 * the same run (its object takes a start once) and records the launch once; a schedule's fire
 * time passes a key of the same kind (workers/services/schedule-firing.ts).
 */
export async function launchWorkflow(db: ShardDb, env: Env, principal: Principal, launch: LaunchRequest): Promise<Launched> {
  const { inputs = {}, threadId, toolCallKey, scheduleId } = launch;
  const row = await resolveLaunchId(db, principal, launch.workflowId);
  if (threadId !== undefined) {
    const [thread] = await db
      .select({ id: threads.id })
      .from(threads)
      .where(and(eq(threads.workspaceId, principal.workspaceId), eq(threads.id, threadId)))
      .limit(1);
    if (!thread) throw new AppError('NOT_FOUND', 404, 'Thread not found', { field: 'threadId' });
  }
  const compiled = await compileWithInputs(db, principal, row, inputs, 'inputs');
  const runId = toolCallKey === undefined ? crypto.randomUUID() : runIdOf(toolCallKey);
  await startRunObject(env, principal, {
    runId,
    workflowId: row.slug,
    workflow: JSON.stringify(compiled),
    initData: JSON.stringify(inputs),
    threadId: threadId ?? null,
    concurrencyKey: compiled.concurrency ? concurrencyKeyOf(compiled.concurrency, inputs) : null,
    scheduleId: scheduleId ?? null,
  });
  await recordChangeAfter(
    db,
    principal,
    {
      action: 'workflow.launched',
      resourceType: 'workflow_run',
      resourceId: runId,
      metadata: { workflowId: row.slug },
      activity: `Workflow ${row.name} was launched`,
    },
    toolCallKey,
  );
  return { runId, workflowId: row.slug, status: 'started', ...(threadId === undefined ? {} : { conversationId: threadId }) };
}

/** A run's concurrency key: the workflow's template filled from the launch inputs, as a mapping's template is. */
const concurrencyKeyOf = (concurrency: Concurrency, inputs: Record<string, unknown>) =>
  fillTemplate(concurrency.key, { initData: inputs, inputData: inputs, state: null, stepResults: {} });

/** The installed definition compiled as a launch runs it; one that no longer loads is 400 (spec 7.3). */
async function compiledDefinition(db: ShardDb, principal: Principal, row: WorkflowRow) {
  let stored: unknown;
  try {
    stored = JSON.parse(row.definition);
  } catch {
    throw invalidInput('definition', 'json', 'The stored definition is not valid JSON; install it again');
  }
  return compileFor(db, principal.workspaceId, stored);
}

/**
 * Hands a new run to its WorkflowRun object, which writes the run record and queues the first
 * step. Without the queue binding nothing is created (503).
 */
async function startRunObject(env: Env, principal: Principal, start: Omit<StartInput, 'workspaceId' | 'actor'>) {
  if (!env.WORKFLOW_STEPS || !env.WORKFLOW_RUN) {
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      503,
      'The durable workflow backend is not configured (WORKFLOW_STEPS queue, WORKFLOW_RUN objects); no run was created',
    );
  }
  try {
    await env.WORKFLOW_RUN.getByName(start.runId).start({
      ...start,
      workspaceId: principal.workspaceId,
      actor: runActor(principal, { kind: 'workflow', id: start.runId }),
    });
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', requestId: principal.origin.requestId, runId: start.runId, error: String(error) }));
    throw new AppError('INTERNAL_ERROR', 500, 'The run could not be started', { cause: error instanceof Error ? error.message : String(error) });
  }
}

export const RerunBody = z.object({
  fromStep: z.string().min(1).max(64).describe('The top-level step to run again, with every step after it'),
  input: z.unknown().optional().describe('The input of that step in place of the one it had (the output of the step before it, or the launch inputs)'),
});
export type RerunBody = z.infer<typeof RerunBody>;

export const Rerun = Launched.omit({ conversationId: true }).extend({ rerunOf: z.string(), fromStep: z.string() });

/** Every step id inside `node` (itself, a container's children, a loop's body), to any depth. */
function stepIdsOf(node: CompiledNode): string[] {
  const inner = 'steps' in node ? node.steps : 'branches' in node ? node.branches.map((b) => b.step) : 'step' in node ? [node.step] : [];
  return [node.id, ...inner.flatMap((child) => stepIdsOf(child as CompiledNode))];
}

/**
 * Reruns a finished run from one of its top-level steps, as a new run of the installed
 * definition linked to it: the steps before `fromStep` keep the outputs the run recorded and do
 * not run again; `fromStep` runs on `input` if given (else on the input it had), and everything
 * after it as a launch would. The launch inputs are the original's.
 */
export async function rerunRun(db: ShardDb, env: Env, principal: Principal, runId: string, body: RerunBody): Promise<z.infer<typeof Rerun>> {
  const original = await requireRun(db, principal, runId);
  if (!FINISHED.includes(original.status)) throw conflict(`The run is ${original.status}: rerun it once it has finished`);
  const row = await resolveLaunchId(db, principal, original.workflowId);
  const compiled = await compiledDefinition(db, principal, row);
  const cursor = compiled.nodes.findIndex((node) => node.id === body.fromStep);
  if (cursor < 0)
    throw invalidInput('fromStep', 'unknown_step', `fromStep must be a top-level step of ${row.slug}: ${compiled.nodes.map((n) => n.id).join(', ')}`);
  const context = (JSON.parse(original.snapshot) as { context?: Record<string, { status?: string; output?: Json } | Json> }).context ?? {};
  const initData = (context.input ?? {}) as Json;
  const recorded = (stepId: string) => context[stepId] as { status?: string; output?: Json } | undefined;
  const before = compiled.nodes.slice(0, cursor);
  const unfinished = before.find((node) => recorded(node.id)?.status !== 'success');
  if (unfinished)
    throw conflict(`Step ${unfinished.id} did not succeed in run ${original.runId}, so it cannot be reused: rerun from ${unfinished.id} or before it`);
  const results = Object.fromEntries(
    before.flatMap(stepIdsOf).flatMap((stepId) => {
      const kept = recorded(stepId);
      return kept?.status === 'success' ? [[stepId, { status: 'success' as const, output: kept.output ?? null }]] : [];
    }),
  );
  const input = body.input !== undefined ? (body.input as Json) : cursor === 0 ? initData : (recorded(before.at(-1)!.id)!.output ?? null);
  const newRunId = crypto.randomUUID();
  const from: RerunFrom = { cursor, input, results };
  await startRunObject(env, principal, {
    runId: newRunId,
    workflowId: row.slug,
    workflow: JSON.stringify(compiled),
    initData: JSON.stringify(initData),
    threadId: null,
    rerunOf: { runId: original.runId, fromStep: body.fromStep },
    from: JSON.stringify(from),
  });
  await recordChangeAfter(db, principal, {
    action: 'workflow.rerun',
    resourceType: 'workflow_run',
    resourceId: newRunId,
    metadata: { workflowId: row.slug, rerunOf: original.runId, fromStep: body.fromStep },
    activity: `Workflow ${row.name} was rerun from ${body.fromStep}`,
  });
  return { runId: newRunId, workflowId: row.slug, status: 'started', rerunOf: original.runId, fromStep: body.fromStep };
}

export const RunRecord = z.object({
  runId: z.string(),
  workflowId: z.string(),
  status: z.string(),
  resourceId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  snapshot: z.record(z.string(), z.unknown()),
  rerunOf: z.object({ runId: z.string(), fromStep: z.string() }).optional().describe('The run this one reruns, and the step it started from'),
  concurrencyKey: z.string().optional().describe('Its concurrency key, when its workflow declares one: runs of one key share the limit'),
});
export type RunRecord = z.infer<typeof RunRecord>;

export const presentRun = (row: WorkflowRunRow): RunRecord => ({
  runId: row.runId,
  workflowId: row.workflowId,
  status: row.status,
  resourceId: row.resourceId,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
  snapshot: JSON.parse(row.snapshot) as Record<string, unknown>,
  ...(row.rerunOf ? { rerunOf: { runId: row.rerunOf, fromStep: row.rerunFromStep ?? '' } } : {}),
  ...(row.concurrencyKey === null ? {} : { concurrencyKey: row.concurrencyKey }),
});

export const ListRunsInput = z.object({ limit: z.number().int().min(1).max(MAX_RUNS_PAGE).optional().describe('How many (default 50)') });
/** The runs list's query string. */
export const RunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(MAX_RUNS_PAGE).default(DEFAULT_RUNS_PAGE) });

export async function listRuns(db: ShardDb, principal: Principal, limit = DEFAULT_RUNS_PAGE) {
  const rows = await db
    .select()
    .from(workflowRuns)
    .where(eq(workflowRuns.workspaceId, principal.workspaceId))
    .orderBy(desc(workflowRuns.createdAt), desc(workflowRuns.runId))
    .limit(limit);
  return { runs: rows.map(presentRun) };
}

/** The run in this workspace, or 404: another workspace's run answers exactly like a missing one. */
export async function findRun(db: ShardDb, principal: Principal, runId: string): Promise<WorkflowRunRow | null> {
  if (runId.length > 100) return null;
  const [row] = await db
    .select()
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, principal.workspaceId), eq(workflowRuns.runId, runId)))
    .limit(1);
  return row ?? null;
}

async function requireRun(db: ShardDb, principal: Principal, runId: string) {
  const row = await findRun(db, principal, runId);
  if (!row) throw notFound('Workflow run');
  return row;
}

export const RunDetails = z.object({ run: RunRecord, steps: z.record(z.string(), z.object({ status: z.string(), output: z.unknown() })) });

/** The step results D1 holds of a run the caller has found. */
export async function runSteps(db: ShardDb, runId: string): Promise<z.infer<typeof RunDetails>['steps']> {
  const steps = await db.select().from(workflowStepResults).where(eq(workflowStepResults.runId, runId));
  return Object.fromEntries(steps.map((s) => [s.stepId, { status: s.status, output: s.output === null ? null : (JSON.parse(s.output) as unknown) }]));
}

export async function getRun(db: ShardDb, principal: Principal, runId: string): Promise<z.infer<typeof RunDetails>> {
  const row = await requireRun(db, principal, runId);
  return { run: presentRun(row), steps: await runSteps(db, row.runId) };
}

export const ResumeBody = z.object({
  resumeData: z.unknown().optional().describe('The human input: what the suspended step outputs'),
  stepId: z.string().min(1).max(64).optional().describe('The suspended step’s id, when the run waits at more than one'),
});
export type ResumeBody = z.infer<typeof ResumeBody>;

export const Resumed = z.object({ runId: z.string(), status: z.literal('running') });

/** Spec 7.3's resume answers: its own codes, and `{cancelled: true, error}` for a finished run. */
export const ResumeAnswer = z.discriminatedUnion('status', [
  z.object({ status: z.literal(200), body: Resumed }),
  z.object({ status: z.literal([400, 403, 404, 409, 500]), body: z.record(z.string(), z.unknown()) }),
]);
export type ResumeAnswer = z.infer<typeof ResumeAnswer>;

const resumeError = (status: 404 | 409 | 500, code: string, message: string): ResumeAnswer => ({ status, body: { error: { code, message } } });

/** Who resumes a run: their own credential's scopes, and how the run records them. */
export interface Resumer {
  scopes: string[];
  by: { userId: string; credential: { type: CredentialKind; apiKeyId: string | null } };
}

/** The resumer as the run checks and records them: their own credential's scopes, and who they are. */
const resumerOf = (principal: Principal): Resumer => ({
  scopes: principal.scopes,
  by: {
    userId: principal.userId,
    credential: { type: principal.credential.type, apiKeyId: principal.credential.type === 'api_key' ? formatId('key', principal.credential.apiKeyId) : null },
  },
});

export async function resumeRun(db: ShardDb, env: Env, principal: Principal, runId: string, body: ResumeBody): Promise<ResumeAnswer> {
  const row = await findRun(db, principal, runId);
  if (!row) return resumeError(404, 'NOT_FOUND', 'Workflow run not found');
  let outcome;
  try {
    outcome = await env.WORKFLOW_RUN.getByName(row.runId).resume(body.stepId ?? null, JSON.stringify(body.resumeData ?? null), resumerOf(principal));
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', requestId: principal.origin.requestId, runId, error: String(error) }));
    return resumeError(500, 'RESUME_FAILED', 'The resume could not be dispatched');
  }
  switch (outcome.kind) {
    case 'resumed':
      await recordChangeAfter(db, principal, {
        action: 'workflow.resumed',
        resourceType: 'workflow_run',
        resourceId: row.runId,
        metadata: { stepId: outcome.stepId },
      });
      return { status: 200, body: { runId: row.runId, status: 'running' } };
    case 'finished':
      return { status: 409, body: { cancelled: true, error: `The run has already finished (${outcome.status})` } };
    case 'not_suspended':
      return resumeError(409, 'NOT_SUSPENDED', `The run is ${outcome.status}, not suspended`);
    case 'in_progress':
      return resumeError(409, 'RESUME_IN_PROGRESS', 'Another resume of this run is in flight');
    case 'no_frame':
      return resumeError(409, 'NO_SUSPEND_FRAME', 'The run is marked suspended but has no suspended step');
    case 'invalid': {
      // The field is the path into resumeData, down to a missing property when one is missing.
      const field = ['resumeData', ...outcome.pointer.split('/').filter(Boolean), ...(outcome.missing === undefined ? [] : [outcome.missing])].join('.');
      const error = invalidInput(field, 'resume_schema', `${field}: ${outcome.message} (the resumeSchema of step ${outcome.stepId})`, {
        stepId: outcome.stepId,
      });
      return { status: 400, body: error.toEnvelope() };
    }
    case 'step_mismatch':
      return resumeError(409, 'STEP_MISMATCH', `The run is suspended at ${outcome.suspended.join(', ')}, not at ${body.stepId ?? '(no stepId)'}`);
    case 'forbidden': {
      const named = outcome.missing.map((scope) => `"${scope}"`).join(', ');
      const error = forbidden(`Resuming this run needs ${named} for the steps it has left, which this credential lacks`, {
        scopes: outcome.missing,
        stepId: outcome.stepId,
      });
      return { status: 403, body: error.toEnvelope() };
    }
  }
}

/** Cancels a run that has not finished; a finished one is left as it is. */
export async function cancelRun(db: ShardDb, env: Env, principal: Principal, runId: string) {
  const row = await requireRun(db, principal, runId);
  const outcome = await env.WORKFLOW_RUN.getByName(row.runId).cancel();
  if (outcome.canceled) {
    await recordChangeAfter(db, principal, {
      action: 'workflow.canceled',
      resourceType: 'workflow_run',
      resourceId: row.runId,
      metadata: { workflowId: row.workflowId },
      activity: `A run of workflow ${row.workflowId} was canceled`,
    });
  }
  return { success: true as const, runId: row.runId };
}

export const QueueEntry = z.object({
  runId: z.string(),
  workflowSlug: z.string(),
  enqueuedAt: z.string(),
  status: z.string().describe('`queued` while it waits for a slot of its concurrency key, then `running` or `suspended`'),
  concurrencyKey: z.string().optional(),
});

/** The queue: runs of this workspace that have not finished (waiting for a slot of their key, running or suspended), oldest first. */
export async function listQueue(db: ShardDb, principal: Principal) {
  const rows = await db
    .select()
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, principal.workspaceId), inArray(workflowRuns.status, UNFINISHED_RUN_STATUSES)))
    .orderBy(workflowRuns.createdAt);
  const queued = rows.map((r): z.infer<typeof QueueEntry> => ({
    runId: r.runId,
    workflowSlug: r.workflowId,
    enqueuedAt: toIso(r.createdAt),
    status: r.status,
    ...(r.concurrencyKey === null ? {} : { concurrencyKey: r.concurrencyKey }),
  }));
  return { queued, total: queued.length };
}

export async function dequeueRun(db: ShardDb, env: Env, principal: Principal, runId: string) {
  await cancelRun(db, env, principal, runId);
  return { success: true as const };
}
