import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import { z } from 'zod';
import { executions, skillVersions, type EvalRole, EVAL_ROLES } from '../../schema';
import { withoutSupersededText, type ExecutionEvent } from './execution-events';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { MAX_RUN_INPUT, withAttachedFiles } from '../lib/attached-input';
import { globalDbOf } from '../lib/db';
import { conflict, invalidInput } from '../errors';
import { CANCEL_WAIT_MS, interruptTurn, startTurn, startTurnById } from './execution-lifecycle';
import { currentExecution, withStaleSettled } from './execution-reconciler';
import { now, toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import { byIntegerId, cursorPage, DEFAULT_PAGE, mapPage } from '../lib/pagination';
import type { RunConnector } from '../connectors/registry';
import { checkRunConnector, runConnectorOf, saveRunConnector } from './connectors';
import { streamPath } from './execution-streams';
import { recordChange } from './audit';
import { requireOwned } from './tenant';
import { requireSkill } from './skills';
import { budgetOf, RunBudget } from './spend-limits';
import { requireTraceByKey, traceExecutionRemoved, traceUpsert } from './traces';

type ExecutionRow = typeof executions.$inferSelect;

/** Spec 8: the offset form of the history defaults to 10 items. */
const HISTORY_PAGE = 10;

export const CreateExecutionBody = z.object({
  skill_slug: z.string().min(1).max(64),
  input: z.string().trim().min(1).max(100_000),
  source: z.string().trim().min(1).max(40).default('api'),
  interface: z.string().trim().min(1).max(40).default('api'),
  /** A trace key (spec 4.7 rule 4): the execution joins that lineage's trace. */
  sessionId: z.string().trim().min(1).max(100).optional(),
  budget: RunBudget,
});
export type CreateExecutionBody = z.infer<typeof CreateExecutionBody>;

export const IdleExecution = z.object({ id: z.string(), skill_slug: z.string(), skill_name: z.string(), status: z.literal('idle') });
export type IdleExecution = z.infer<typeof IdleExecution>;

interface Lineage {
  parentExecutionId: number | null;
  traceKey: string;
}

/** Step 1 of the three-step flow: an idle execution of an installed skill; nothing runs yet. */
export async function createExecution(
  db: ShardDb,
  globalDb: GlobalDb,
  principal: Principal,
  input: CreateExecutionBody,
  lineage?: Lineage,
): Promise<IdleExecution> {
  const skill = await requireSkill(db, globalDb, principal, input.skill_slug);
  if (!lineage && input.sessionId !== undefined) {
    const trace = await requireTraceByKey(db, principal, input.sessionId);
    lineage = { parentExecutionId: trace.targetExecutionId, traceKey: trace.traceKey };
  }
  const traceKey = lineage?.traceKey ?? crypto.randomUUID();
  const [version] = await db.select().from(skillVersions).where(eq(skillVersions.id, skill.activeVersionId!)).limit(1);
  const newId = sql`(SELECT MAX(${executions.id}) FROM ${executions} WHERE ${executions.workspaceId} = ${principal.workspaceId})`;
  const [[row]] = await db.batch([
    db
      .insert(executions)
      .values({
        workspaceId: principal.workspaceId,
        userId: principal.userId,
        skillSlug: skill.slug,
        skillName: version!.name,
        skillVersionId: version!.id,
        status: 'idle',
        inputText: input.input,
        source: input.source,
        interface: input.interface,
        parentExecutionId: lineage?.parentExecutionId ?? null,
        traceKey,
        budget: budgetOf(input.budget) ?? null,
        startedAt: now(),
      })
      .returning(),
    traceUpsert(db, principal, { traceKey, kind: 'execution', title: `${version!.name}: ${input.input}`, executionId: newId }),
    ...recordChange(db, principal, {
      action: 'execution.created',
      resourceType: 'execution',
      resourceId: sql`(SELECT 'exec_' || MAX(${executions.id}) FROM ${executions} WHERE ${executions.workspaceId} = ${principal.workspaceId})`,
      metadata: { skill: skill.slug, source: input.source, interface: input.interface },
    }),
  ]);
  return { id: formatId('exec', row!.id), skill_slug: skill.slug, skill_name: version!.name, status: 'idle' as const };
}

const requireExecution = (db: ShardDb, principal: Principal, rawId: string) => requireOwned(db, executions, principal, 'exec', rawId, 'Execution');

const TextBlock = z.object({ type: z.literal('text'), text: z.string().min(1).max(100_000) });
export const PostEventsBody = z.object({
  events: z
    .array(
      z.discriminatedUnion('type', [
        z.object({ type: z.literal('user.message'), content: z.array(TextBlock).min(1).max(20), budget: RunBudget }),
        z.object({ type: z.literal('user.interrupt') }),
      ]),
    )
    .min(1)
    .max(1),
});
export type PostEventsBody = z.infer<typeof PostEventsBody>;

const present = (executionId: number, e: ExecutionEvent) => ({
  id: `${formatId('exec', executionId)}:${e.seq}`,
  type: e.type,
  sequence: e.seq,
  payload: e.payload,
});

/**
 * Step 3: `user.message` starts a turn on an idle execution (to a working one
 * 409 EXECUTION_RUNNING, to a finished one 409 CONFLICT); `user.interrupt` stops a working one.
 */
export async function postEvents(db: ShardDb, env: Env, principal: Principal, rawId: string, body: PostEventsBody) {
  const event = body.events[0]!;
  if (event.type === 'user.interrupt') {
    const execution = await currentExecution(db, env, principal, rawId);
    if (execution.status !== 'working') throw conflict('The execution is not running');
    const { outcome } = await interruptTurn(db, env, principal, execution);
    return { data: (outcome.state === 'finished' ? [] : outcome.events).map((e) => present(execution.id, e)) };
  }
  const text = event.content.map((b) => b.text).join('\n');
  const { execution, events } = await startTurnById(db, env, principal, rawId, { text, budget: budgetOf(event.budget) });
  return { data: events.map((e) => present(execution.id, e)) };
}

/**
 * Deletes an execution created to start at once whose start failed and was undone (it is idle).
 * One still `working` is left: its start could not be undone yet, and the reconciler settles it.
 */
async function removeUnstarted(db: ShardDb, executionId: number): Promise<boolean> {
  const removed = await db
    .delete(executions)
    .where(and(eq(executions.id, executionId), eq(executions.status, 'idle')))
    .returning({ id: executions.id });
  return removed.length > 0;
}

/**
 * A run of a workspace agent (a workflow `agent` step): an execution whose system prompt is the
 * agent's instructions instead of a skill's, started at once; one that cannot start is removed.
 */
export async function runAgent(
  db: ShardDb,
  env: Env,
  principal: Principal,
  agent: { slug: string; name: string; instructions: string },
  input: string,
  /** The run's budget, hundredths of a Ds. */
  budget?: number,
) {
  const [row] = await db
    .insert(executions)
    .values({
      workspaceId: principal.workspaceId,
      userId: principal.userId,
      skillSlug: `agent:${agent.slug}`,
      skillName: agent.name,
      status: 'idle',
      inputText: input,
      source: 'workflow',
      interface: 'workflow',
      traceKey: crypto.randomUUID(),
      budget: budget ?? null,
      startedAt: now(),
    })
    .returning();
  try {
    await startTurn(db, env, principal, row!, { text: input, system: agent.instructions });
  } catch (error) {
    await removeUnstarted(db, row!.id);
    throw error;
  }
  return formatId('exec', row!.id);
}

/** A run of a skill eval: its part, the skill version it measures, its input and what it may spend. */
export interface EvalRun {
  evalId: number;
  role: EvalRole;
  slug: string;
  name: string;
  /** The version measured: a `skill` run's system prompt is its prompt. */
  skillVersionId: number;
  input: string;
  /** The system prompt instead of the version's: empty for a `baseline` run, the grader's for a `grader` run. */
  system?: string;
  model?: string;
  /** Hundredths of a Ds. */
  budget?: number;
}

/**
 * Starts one run of a skill eval: an ordinary execution (charged, traced, in the history),
 * tagged with the eval and its part in it, not counted against the user's run starts per minute
 * (the eval paces its own). A grader's runs under its own slug, so the skill's bound secrets are
 * not handed to it. One that cannot start is removed; answers its id.
 */
export async function startEvalRun(db: ShardDb, env: Env, principal: Principal, run: EvalRun): Promise<number> {
  const grader = run.role === 'grader';
  const traceKey = crypto.randomUUID();
  const [[row]] = await db.batch([
    db
      .insert(executions)
      .values({
        workspaceId: principal.workspaceId,
        userId: principal.userId,
        skillSlug: grader ? `eval-grader:${run.slug}` : run.slug,
        skillName: grader ? `Eval grader (${run.name})` : run.name,
        skillVersionId: run.skillVersionId,
        status: 'idle',
        inputText: run.input,
        source: 'eval',
        interface: 'eval',
        traceKey,
        budget: run.budget ?? null,
        evalId: run.evalId,
        evalRole: run.role,
        startedAt: now(),
      })
      .returning(),
    traceUpsert(db, principal, {
      traceKey,
      kind: 'execution',
      title: `${run.name} eval (${run.role}): ${run.input}`,
      executionId: sql`(SELECT MAX(${executions.id}) FROM ${executions} WHERE ${executions.workspaceId} = ${principal.workspaceId})`,
    }),
  ]);
  try {
    await startTurn(db, env, principal, row!, {
      text: run.input,
      uncounted: true,
      ...(run.system === undefined ? {} : { system: run.system }),
      ...(run.model === undefined ? {} : { model: run.model }),
    });
  } catch (error) {
    if (await removeUnstarted(db, row!.id)) await traceExecutionRemoved(db, principal.workspaceId, traceKey);
    throw error;
  }
  return row!.id;
}

/** `github` with `fields.repo` (owner/repo) or `remote` with empty fields; any other type is 400 INVALID_CONNECTOR (services/connectors.ts). */
const Connector = z.object({ type: z.string().trim().min(1).max(64), fields: z.record(z.string(), z.unknown()).default({}) });

/** A file given with a run: its text, or where it is (the model is told the address). */
const Attachment = z
  .object({ name: z.string().trim().min(1).max(200), url: z.url().optional(), content: z.string().max(MAX_RUN_INPUT).optional() })
  .refine((a) => a.content !== undefined || a.url !== undefined, { message: 'An attachment carries its content or its url' });

/** The run's input as the model gets it: the input, then each attachment as a section of it; 400 on `attachments` past the limit. */
function attachedInput(body: { input: string; attachments?: z.infer<typeof Attachment>[] }): string {
  const input = withAttachedFiles(
    body.input,
    (body.attachments ?? []).map((a) => ({ name: a.name, text: a.content ?? `At ${a.url}` })),
  );
  if (input.length > MAX_RUN_INPUT) throw invalidInput('attachments', 'too_long', `The input with its attachments must be at most ${MAX_RUN_INPUT} characters`);
  return input;
}

export const RunSkillBody = z.object({
  input: z.string().trim().min(1).max(MAX_RUN_INPUT),
  interface: z.string().trim().min(1).max(40).optional(),
  attachments: z.array(Attachment).max(10).optional(),
  connector: Connector.optional(),
  budget: RunBudget,
});
export type RunSkillBody = z.infer<typeof RunSkillBody>;

export const StartedRun = z.object({
  executionId: z.string(),
  skillName: z.string(),
  status: z.literal('started'),
  message: z.string(),
  sseUrl: z.string(),
});

/** Creates an execution and starts it at once; one that cannot start is not left behind idle. */
async function createAndStart(db: ShardDb, env: Env, principal: Principal, input: CreateExecutionBody, lineage?: Lineage, connector?: RunConnector) {
  const idle = await createExecution(db, globalDbOf(env), principal, input, lineage);
  const execution = await requireExecution(db, principal, idle.id);
  if (connector) await saveRunConnector(db, execution.id, principal.workspaceId, connector);
  try {
    await startTurn(db, env, principal, execution, { text: input.input });
  } catch (error) {
    if (await removeUnstarted(db, execution.id)) await traceExecutionRemoved(db, principal.workspaceId, execution.traceKey);
    throw error;
  }
  return startedRunOf(execution);
}

/** What starting a run answers (`StartedRun`), from the execution it started. */
export const startedRunOf = (execution: Pick<ExecutionRow, 'id' | 'skillName'>): z.infer<typeof StartedRun> => ({
  executionId: formatId('exec', execution.id),
  skillName: execution.skillName,
  status: 'started',
  message: `Running ${execution.skillName}; mint a stream URL at /api/v1/executions/${formatId('exec', execution.id)}/stream-token`,
  sseUrl: streamPath(execution.id),
});

/** POST /skills/:slug/run: create and start in one call (spec 4.3). */
/**
 * `source` is the channel the run came through: `api` for REST, `mcp` for the MCP endpoint,
 * `workflow` for a workflow step; `grantToken`, the caller's `x-permission-grant`, for the connector's scope.
 */
export const runSkill = async (
  db: ShardDb,
  env: Env,
  principal: Principal,
  slug: string,
  body: RunSkillBody,
  source: 'api' | 'mcp' | 'workflow' = 'api',
  grantToken?: string,
) =>
  createAndStart(
    db,
    env,
    principal,
    {
      skill_slug: slug,
      input: attachedInput(body),
      source,
      interface: body.interface ?? source,
      ...(body.budget === undefined ? {} : { budget: body.budget }),
    },
    undefined,
    body.connector && (await checkRunConnector(db, env, principal, body.connector, grantToken)),
  );

export const FollowUpBody = z.object({ input: z.string().trim().min(1).max(100_000) });
export type FollowUpBody = z.infer<typeof FollowUpBody>;

export const FollowUpRun = StartedRun.omit({ sseUrl: true }).extend({ parentExecutionId: z.string(), sseUrl: z.string() });

/**
 * Rerun (same lineage: the trace key is inherited) or remix (a new lineage) of an execution
 * with new instructions: the same skill, as installed now, started at once.
 */
export async function followUp(db: ShardDb, env: Env, principal: Principal, rawId: string, body: FollowUpBody, kind: 'rerun' | 'remix') {
  const parent = await requireExecution(db, principal, rawId);
  const started = await createAndStart(
    db,
    env,
    principal,
    { skill_slug: parent.skillSlug, input: body.input, source: parent.source, interface: parent.interface },
    { parentExecutionId: parent.id, traceKey: kind === 'rerun' && parent.traceKey ? parent.traceKey : crypto.randomUUID() },
    await runConnectorOf(db, parent.id),
  );
  return { ...started, parentExecutionId: formatId('exec', parent.id) };
}

export const CancelResult = z.object({ success: z.boolean(), message: z.string(), processKilled: z.boolean(), actualStatus: z.string() });

/**
 * Cancel = interrupt a working execution (it is idle afterwards), waiting a few seconds for the
 * run to stop so the answer says what actually happened. A run that never reached its session
 * (lost to a crash) is stopped and its credits released all the same.
 */
export async function cancelExecution(db: ShardDb, env: Env, principal: Principal, rawId: string) {
  const execution = await requireExecution(db, principal, rawId);
  if (execution.status !== 'working') {
    return { success: true, message: `The execution is ${execution.status}; nothing to cancel`, processKilled: false, actualStatus: execution.status };
  }
  const { outcome, status } = await interruptTurn(db, env, principal, execution, CANCEL_WAIT_MS);
  const message =
    outcome.state === 'abandoned'
      ? 'The run had not started (it was lost before its session took it); it was stopped and its credits released'
      : outcome.state === 'finished'
        ? `The run had already ended; the execution is ${status}`
        : status === 'working'
          ? 'The run was told to stop and stops at its next step'
          : 'The run was interrupted';
  return { success: true, message, processKilled: outcome.state === 'live', actualStatus: status };
}

const names = (what: string) => z.array(z.string().max(40)).max(20).optional().describe(`Only these ${what}`);

/** History filters and paging: offset paging, or cursor paging when after_id or before_id is present. */
export const ListExecutionsInput = z.object({
  limit: z.number().int().min(1).max(100).optional().describe(`Page size (default ${HISTORY_PAGE}; ${DEFAULT_PAGE} in the cursor form)`),
  offset: z.number().int().min(0).max(100_000).default(0).describe('How many to skip (default 0)'),
  after_id: z.string().min(1).max(40).optional().describe('Older executions: continue after this id (the cursor form)'),
  before_id: z.string().min(1).max(40).optional().describe('Newer executions: the page before this id (the cursor form)'),
  channels: names('sources, e.g. ["api", "mcp"]'),
  interfaces: names('interfaces, e.g. ["mcp-vscode"]'),
});

/** A comma-separated list in a query string, e.g. `channels=api,mcp`. */
const csv = z
  .string()
  .max(500)
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .optional();

/** The REST query: the same fields as text. */
export const ListExecutionsQuery = ListExecutionsInput.extend({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
  channels: csv,
  interfaces: csv,
});
export type ListExecutionsInput = z.infer<typeof ListExecutionsInput>;

export const HistoryItem = z.object({
  id: z.number().int(),
  executionId: z.string(),
  skillSlug: z.string(),
  skillName: z.string(),
  status: z.string(),
  cost: z.number(),
  source: z.string(),
  interface: z.string(),
  inputText: z.string(),
  startedAt: z.string(),
  completedAt: z.string().nullable(),
  evalId: z.string().nullable().describe('The skill eval this run belongs to (`eval_<id>`), null for any other run'),
  evalRole: z.enum(EVAL_ROLES).nullable().describe('Its part in the eval: `skill`, `baseline` (the same input without the skill) or `grader`'),
});

export const presentHistory = (row: typeof executions.$inferSelect) => ({
  id: row.id,
  executionId: formatId('exec', row.id),
  skillSlug: row.skillSlug,
  skillName: row.skillName,
  status: row.status,
  cost: row.cost / 100,
  source: row.source,
  interface: row.interface,
  inputText: row.inputText,
  startedAt: toIso(row.startedAt),
  completedAt: row.completedAt === null ? null : toIso(row.completedAt),
  evalId: row.evalId === null ? null : formatId('eval', row.evalId),
  evalRole: row.evalRole,
});

/**
 * The cursor form when after_id or before_id is present, the offset form otherwise; a run lost
 * before its start was answered is settled first (`withStaleSettled`), so it is never listed
 * `working` past the grace period.
 */
export async function listExecutions(db: ShardDb, env: Env, principal: Principal, query: ListExecutionsInput) {
  const where = and(
    eq(executions.workspaceId, principal.workspaceId),
    query.channels?.length ? inArray(executions.source, query.channels) : undefined,
    query.interfaces?.length ? inArray(executions.interface, query.interfaces) : undefined,
  );
  return withStaleSettled(db, env, principal.workspaceId, async () => {
    if (query.after_id !== undefined || query.before_id !== undefined) {
      const page = await cursorPage(
        { limit: query.limit ?? DEFAULT_PAGE, after_id: query.after_id, before_id: query.before_id },
        byIntegerId(executions.id, (w, orderBy, limit) => db.select().from(executions).where(w).orderBy(orderBy).limit(limit), 'exec'),
        where,
      );
      return mapPage(page, presentHistory);
    }
    const limit = query.limit ?? HISTORY_PAGE;
    const rows = await db
      .select()
      .from(executions)
      .where(where)
      .orderBy(desc(executions.id))
      .limit(limit + 1)
      .offset(query.offset);
    return { items: rows.slice(0, limit).map(presentHistory), hasMore: rows.length > limit, offset: query.offset, limit };
  });
}

/** The offset form of the history (spec 4.3). */
export const HistoryPage = z.object({ items: z.array(HistoryItem), hasMore: z.boolean(), offset: z.number(), limit: z.number() });

export const ExecutionStatus = z.object({
  executionId: z.string(),
  status: z.string(),
  skillSlug: z.string(),
  skillName: z.string(),
  startedAt: z.string(),
  outputBlocks: z.array(z.object({ type: z.literal('text'), text: z.string() })),
  cost: z.number(),
  executionTime: z.number(),
});

/** A run's tool call as its `agent.tool_use` event names it: the tool's display name and what this call does. */
export const ToolCall = z.object({ name: z.string(), label: z.string() });

export const StatusQuery = z.object({ blocksAfter: z.coerce.number().int().min(0).max(100_000).optional() });

/** One text block per turn: the agent's streamed message text between running and idle. */
export function outputBlocks(events: Omit<ExecutionEvent, 'at'>[]) {
  const blocks: { type: 'text'; text: string }[] = [];
  for (const event of withoutSupersededText(events)) {
    if (event.type === 'session.status_running') blocks.push({ type: 'text', text: '' });
    else if (event.type === 'agent.message' && blocks.length) {
      blocks[blocks.length - 1]!.text += (event.payload.content as { text: string }[]).map((c) => c.text).join('');
    }
  }
  return blocks.filter((b) => b.text);
}

/**
 * An execution of this workspace and, once its run has stopped and left it idle, why it stopped
 * (`interrupt` or `limit_reached`; spec 6.1): what an MCP task of the run reports.
 */
export async function executionOutcome(db: ShardDb, env: Env, principal: Principal, rawId: string) {
  const execution = await currentExecution(db, env, principal, rawId);
  if (execution.status !== 'idle') return { execution, stopReason: null };
  const events = await env.EXECUTION_SESSION.getByName(formatId('exec', execution.id)).read(0);
  const stopped = events.findLast((e) => e.type === 'session.status_idle');
  return { execution, stopReason: (stopped?.payload.stop_reason as { type?: string } | undefined)?.type ?? null };
}

/** The tool calls of an execution's runs so far, in the order they were made. */
export async function executionToolCalls(db: ShardDb, env: Env, principal: Principal, rawId: string): Promise<z.infer<typeof ToolCall>[]> {
  const execution = await currentExecution(db, env, principal, rawId);
  const events = await env.EXECUTION_SESSION.getByName(formatId('exec', execution.id)).read(0);
  return events
    .filter((e) => e.type === 'agent.tool_use')
    .map((e) => ({ name: String(e.payload.name ?? e.payload.tool), label: String(e.payload.label ?? '') }));
}

export async function getExecutionStatus(db: ShardDb, env: Env, principal: Principal, rawId: string, blocksAfter = 0) {
  const execution = await currentExecution(db, env, principal, rawId);
  const events = await env.EXECUTION_SESSION.getByName(formatId('exec', execution.id)).read(0);
  return {
    executionId: formatId('exec', execution.id),
    status: execution.status,
    skillSlug: execution.skillSlug,
    skillName: execution.skillName,
    startedAt: toIso(execution.startedAt),
    outputBlocks: outputBlocks(events).slice(blocksAfter),
    cost: execution.cost / 100,
    executionTime: execution.executionTimeMs,
  };
}
