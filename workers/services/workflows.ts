import { and, desc, eq, inArray, or } from 'drizzle-orm';
import { z } from 'zod';
import { artifacts, threads } from '../../schema';
import { workflowRuns, workflowStepResults, workflows, type WorkflowRow, type WorkflowRunRow } from '../../schema/workflows';
import { runActor } from '../auth/actor';
import type { CredentialKind } from '../auth/credentials';
import type { Principal } from '../auth/principal';
import type { Db, Env } from '../env';
import { AppError, forbidden, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { formatId, parseId } from '../lib/ids';
import { readArchive } from '../lib/archive';
import { compileWorkflow, MAX_SLUG_LENGTH, TOOL_IDS, WORKFLOW_SLUG, type CompiledWorkflow, type Json } from '../workflows/compiler';
import { valueProblem } from '../workflows/json-schema';
import { agentSlugs } from './agents';
import { workspacePrefix } from './archive-install';
import { recordChange, recordChangeAfter } from './audit';

/** Spec 8: the runs list defaults to 50. */
const DEFAULT_RUNS_PAGE = 50;
const MAX_RUNS_PAGE = 200;
/** Largest definition text accepted, from a body or an artifact. */
const MAX_DEFINITION_BYTES = 512 * 1024;

/** Path segments under /workflows that are routes of their own, so never slugs. */
const RESERVED_SLUGS = new Set(['runs', 'queue', 'definitions', 'install-from-artifact']);

export const WorkflowSlug = z
  .string()
  .max(MAX_SLUG_LENGTH)
  .regex(WORKFLOW_SLUG, 'kebab-case: lower-case letters, digits and single hyphens')
  .refine((slug) => !RESERVED_SLUGS.has(slug), 'is reserved for a route');

export const WorkflowRecord = z.object({
  id: z.number().int(),
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  storagePath: z.string(),
  installedAt: z.string(),
  workspaceId: z.string(),
  requiresConnector: z.string().nullable(),
  definition: z.string(),
});
export type WorkflowRecord = z.infer<typeof WorkflowRecord>;

const present = (row: WorkflowRow): WorkflowRecord => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  description: row.description,
  category: row.category,
  storagePath: row.storagePath,
  installedAt: toIso(row.installedAt),
  workspaceId: row.workspaceId,
  requiresConnector: row.requiresConnector,
  definition: row.definition,
});

/** Compiles against this workspace's agents and the deployment's tools (spec 4.8 steps 1-5). */
export async function compileFor(db: Db, workspaceId: string, definition: unknown): Promise<CompiledWorkflow> {
  const slugs = await agentSlugs(db, workspaceId);
  return compileWorkflow(definition, { workspaceId, hasAgent: (slug) => slugs.has(slug), tools: new Set(TOOL_IDS) });
}

/**
 * Spec 4.8: the install body is `{content: <JSON text>}`, `{definition: <object>}`, or the
 * definition itself (recognised by `id` and `graph`).
 */
export function definitionFromBody(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidInput('body', 'type', 'The body must be a JSON object');
  const b = body as Record<string, unknown>;
  if ('id' in b && 'graph' in b) return b;
  if (b.definition !== undefined) return b.definition;
  if (b.content !== undefined) {
    if (typeof b.content !== 'string') throw invalidInput('content', 'type', 'content must be the definition as JSON text');
    try {
      return JSON.parse(b.content);
    } catch {
      throw invalidInput('content', 'json', 'content is not valid JSON text');
    }
  }
  throw invalidInput('body', 'required', 'Send {content: <definition JSON text>}, {definition: <object>} or the definition itself');
}

/** The install route's wire body: one of the three shapes, read into the definition (a wrong one is 400 naming its field). */
export const InstallBody = z.unknown().transform((body) => ({ definition: definitionFromBody(body) }));

const metaString = (metadata: Record<string, Json>, key: string) => (typeof metadata[key] === 'string' ? (metadata[key] as string) : null);

const findBySlug = async (db: Db, workspaceId: string, slug: string) =>
  (
    await db
      .select()
      .from(workflows)
      .where(and(eq(workflows.workspaceId, workspaceId), eq(workflows.slug, slug)))
      .limit(1)
  )[0] ?? null;

/** Compiles, then writes the stores: the definition in R2 and the record in D1 (overwriting the slug). */
export async function installWorkflow(db: Db, bucket: R2Bucket, principal: Principal, slug: string, definition: unknown): Promise<WorkflowRecord> {
  const compiled = await compileFor(db, principal.workspaceId, definition);
  const text = JSON.stringify(definition);
  if (new TextEncoder().encode(text).length > MAX_DEFINITION_BYTES)
    throw invalidInput('definition', 'max_size', `A definition holds at most ${MAX_DEFINITION_BYTES} bytes`);
  const storagePath = `${workspacePrefix(principal.workspaceId)}workflows/${slug}/workflow.json`;
  const values = {
    declaredId: compiled.id,
    name: metaString(compiled.metadata, 'name') ?? compiled.id,
    description: compiled.description,
    category: metaString(compiled.metadata, 'category') ?? '',
    requiresConnector: metaString(compiled.metadata, 'requiresConnector'),
    definition: text,
    storagePath,
    installedAt: now(),
  };
  try {
    await bucket.put(storagePath, text, { httpMetadata: { contentType: 'application/json' } });
    await db.batch([
      db
        .insert(workflows)
        .values({ workspaceId: principal.workspaceId, slug, ...values })
        .onConflictDoUpdate({ target: [workflows.workspaceId, workflows.slug], set: values }),
      ...recordChange(db, principal, {
        action: 'workflow.installed',
        resourceType: 'workflow',
        resourceId: slug,
        metadata: { slug, declaredId: compiled.id },
        activity: `Workflow ${values.name} was installed`,
      }),
    ]);
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', requestId: principal.origin.requestId, error: String(error) }));
    throw new AppError('INTERNAL_ERROR', 500, 'The workflow could not be stored', { cause: error instanceof Error ? error.message : String(error) });
  }
  // Spec 4.8: the answer is the record read back from storage.
  const stored = await findBySlug(db, principal.workspaceId, slug);
  if (!stored) throw new AppError('INTERNAL_ERROR', 500, 'The workflow was not found after it was written');
  return present(stored);
}

/**
 * Spec 7.3: 400 for a missing or mistyped artifactId, 404 for no such artifact, 500 when the
 * bundle has no workflow.json or its definition does not compile. The slug is the definition's id.
 */
export async function installFromArtifact(db: Db, bucket: R2Bucket, principal: Principal, artifactId: string): Promise<WorkflowRecord> {
  const id = parseId('art', artifactId);
  const [row] =
    id === null
      ? []
      : await db
          .select()
          .from(artifacts)
          .where(and(eq(artifacts.workspaceId, principal.workspaceId), eq(artifacts.id, id)))
          .limit(1);
  if (!row) throw notFound('Artifact');
  const bundleError = (message: string) => new AppError('INTERNAL_ERROR', 500, message, { field: 'artifactId' });
  const object = await bucket.get(row.r2Key);
  if (!object) throw bundleError('The artifact has no stored bytes');
  const bytes = new Uint8Array(await object.arrayBuffer());
  let text: string | null = null;
  if (row.name === 'workflow.json') text = new TextDecoder().decode(bytes);
  else {
    try {
      const file = readArchive(bytes).find((f) => f.path === 'workflow.json');
      text = file ? new TextDecoder().decode(file.bytes) : null;
    } catch {
      text = null;
    }
  }
  if (text === null) throw bundleError('The artifact bundle has no workflow.json');
  let definition: unknown;
  try {
    definition = JSON.parse(text);
  } catch {
    throw bundleError('workflow.json is not valid JSON');
  }
  let compiled: CompiledWorkflow;
  try {
    compiled = await compileFor(db, principal.workspaceId, definition);
  } catch (error) {
    if (error instanceof AppError) throw new AppError('INTERNAL_ERROR', 500, `workflow.json does not compile: ${error.message}`, error.details);
    throw error;
  }
  return installWorkflow(db, bucket, principal, compiled.id, definition);
}

export async function listWorkflows(db: Db, principal: Principal): Promise<WorkflowRecord[]> {
  const rows = await db.select().from(workflows).where(eq(workflows.workspaceId, principal.workspaceId)).orderBy(workflows.slug);
  return rows.map(present);
}

export async function getWorkflow(db: Db, principal: Principal, slug: string): Promise<WorkflowRecord> {
  const row = await findBySlug(db, principal.workspaceId, slug);
  if (!row) throw notFound('Workflow');
  return present(row);
}

export const DefinitionItem = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  inputSchema: z.unknown(),
  outputSchema: z.unknown(),
  triggers: z.array(z.unknown()),
  requiresConnector: z.string().nullable(),
});

/** Spec 4.8: the catalog of installed definitions without their graphs. */
export async function listDefinitions(db: Db, principal: Principal) {
  const rows = await db.select().from(workflows).where(eq(workflows.workspaceId, principal.workspaceId)).orderBy(workflows.slug);
  const items = rows.map((row) => {
    const definition = JSON.parse(row.definition) as Record<string, unknown>;
    const metadata = (definition.metadata ?? {}) as Record<string, unknown>;
    return {
      id: row.declaredId,
      slug: row.slug,
      name: row.name,
      description: row.description,
      category: row.category,
      inputSchema: definition.inputSchema,
      outputSchema: definition.outputSchema,
      triggers: Array.isArray(metadata.triggers) ? metadata.triggers : [],
      requiresConnector: row.requiresConnector,
    };
  });
  return { workflows: items, format: 'service-v1' as const, exportable: true, count: items.length };
}

export async function uninstallWorkflow(db: Db, bucket: R2Bucket, principal: Principal, slug: string) {
  const row = await findBySlug(db, principal.workspaceId, slug);
  if (!row) throw notFound('Workflow');
  await db.batch([
    db.delete(workflows).where(eq(workflows.id, row.id)),
    ...recordChange(db, principal, {
      action: 'workflow.uninstalled',
      resourceType: 'workflow',
      resourceId: slug,
      metadata: { slug },
      activity: `Workflow ${row.name} was uninstalled`,
    }),
  ]);
  await bucket.delete(row.storagePath);
  return { success: true as const };
}

/** Spec 4.8: the launch id is the slug, the namespaced runtime id `<workspace_id>:<slug>`, or the declared id. */
async function resolveLaunchId(db: Db, principal: Principal, id: string): Promise<WorkflowRow> {
  const prefix = `${principal.workspaceId}:`;
  const slug = id.startsWith(prefix) ? id.slice(prefix.length) : id;
  const [row] = await db
    .select()
    .from(workflows)
    .where(and(eq(workflows.workspaceId, principal.workspaceId), or(eq(workflows.slug, slug), eq(workflows.declaredId, id))))
    .orderBy(desc(eq(workflows.slug, slug)))
    .limit(1);
  if (!row) throw notFound('Workflow');
  return row;
}

export const LaunchInput = z.object({
  workflowId: z.string().min(1).max(200).describe('The workflow’s slug, runtime id or declared id'),
  inputs: z.record(z.string(), z.unknown()).optional().describe('The run’s input data (initData), validated against the workflow’s inputSchema'),
  threadId: z.string().min(1).max(100).optional().describe('The chat thread the run was started from; it gets the run’s outcome as a message'),
});
/** A launch: what a caller asks for, and the tool call that makes it when a run's turn does. */
export type LaunchRequest = z.infer<typeof LaunchInput> & { toolCallKey?: string };

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
 * Recompiles the installed definition, validates the inputs against its inputSchema and hands
 * the run to a fresh WorkflowRun object, which writes the run record and queues the first step.
 * Without the queue binding nothing is created (503). Launched by a run's tool call
 * (`toolCallKey`), the run's id is the call's, so the call made again by a cut-off turn starts
 * the same run (its object takes a start once) and records the launch once.
 */
export async function launchWorkflow(db: Db, env: Env, principal: Principal, launch: LaunchRequest): Promise<Launched> {
  const { inputs = {}, threadId, toolCallKey } = launch;
  const row = await resolveLaunchId(db, principal, launch.workflowId);
  if (threadId !== undefined) {
    const [thread] = await db
      .select({ id: threads.id })
      .from(threads)
      .where(and(eq(threads.workspaceId, principal.workspaceId), eq(threads.id, threadId)))
      .limit(1);
    if (!thread) throw new AppError('NOT_FOUND', 404, 'Thread not found', { field: 'threadId' });
  }
  let stored: unknown;
  try {
    stored = JSON.parse(row.definition);
  } catch {
    // Spec 7.3: a launch that cannot load its definition is 400.
    throw invalidInput('definition', 'json', 'The stored definition is not valid JSON; install it again');
  }
  const compiled = await compileFor(db, principal.workspaceId, stored);
  const problem = valueProblem(compiled.inputSchema, inputs);
  if (problem) {
    const field = ['inputs', ...problem.pointer.split('/').filter(Boolean)].join('.');
    throw invalidInput(field, 'input_schema', `${field}: ${problem.message}`);
  }
  if (!env.WORKFLOW_STEPS || !env.WORKFLOW_RUN) {
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      503,
      'The durable workflow backend is not configured (WORKFLOW_STEPS queue, WORKFLOW_RUN objects); no run was created',
    );
  }
  const runId = toolCallKey === undefined ? crypto.randomUUID() : runIdOf(toolCallKey);
  try {
    await env.WORKFLOW_RUN.getByName(runId).start({
      runId,
      workspaceId: principal.workspaceId,
      workflowId: row.slug,
      actor: runActor(principal, { kind: 'workflow', id: runId }),
      workflow: JSON.stringify(compiled),
      initData: JSON.stringify(inputs),
      threadId: threadId ?? null,
    });
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', requestId: principal.origin.requestId, runId, error: String(error) }));
    throw new AppError('INTERNAL_ERROR', 500, 'The run could not be started', { cause: error instanceof Error ? error.message : String(error) });
  }
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

export const RunRecord = z.object({
  runId: z.string(),
  workflowId: z.string(),
  status: z.string(),
  resourceId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  snapshot: z.record(z.string(), z.unknown()),
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
});

export const ListRunsInput = z.object({ limit: z.number().int().min(1).max(MAX_RUNS_PAGE).optional().describe('How many (default 50)') });
/** The runs list's query string. */
export const RunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(MAX_RUNS_PAGE).default(DEFAULT_RUNS_PAGE) });

export async function listRuns(db: Db, principal: Principal, limit = DEFAULT_RUNS_PAGE) {
  const rows = await db
    .select()
    .from(workflowRuns)
    .where(eq(workflowRuns.workspaceId, principal.workspaceId))
    .orderBy(desc(workflowRuns.createdAt), desc(workflowRuns.runId))
    .limit(limit);
  return { runs: rows.map(presentRun) };
}

/** The run in this workspace, or 404: another workspace's run answers exactly like a missing one. */
export async function findRun(db: Db, principal: Principal, runId: string): Promise<WorkflowRunRow | null> {
  if (runId.length > 100) return null;
  const [row] = await db
    .select()
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, principal.workspaceId), eq(workflowRuns.runId, runId)))
    .limit(1);
  return row ?? null;
}

async function requireRun(db: Db, principal: Principal, runId: string) {
  const row = await findRun(db, principal, runId);
  if (!row) throw notFound('Workflow run');
  return row;
}

export const RunDetails = z.object({ run: RunRecord, steps: z.record(z.string(), z.object({ status: z.string(), output: z.unknown() })) });

export async function getRun(db: Db, principal: Principal, runId: string): Promise<z.infer<typeof RunDetails>> {
  const row = await requireRun(db, principal, runId);
  const steps = await db.select().from(workflowStepResults).where(eq(workflowStepResults.runId, row.runId));
  return {
    run: presentRun(row),
    steps: Object.fromEntries(steps.map((s) => [s.stepId, { status: s.status, output: s.output === null ? null : (JSON.parse(s.output) as unknown) }])),
  };
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

export async function resumeRun(db: Db, env: Env, principal: Principal, runId: string, body: ResumeBody): Promise<ResumeAnswer> {
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
export async function cancelRun(db: Db, env: Env, principal: Principal, runId: string) {
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

/** The queue: runs of this workspace that have not finished, oldest first. */
export async function listQueue(db: Db, principal: Principal) {
  const rows = await db
    .select()
    .from(workflowRuns)
    .where(and(eq(workflowRuns.workspaceId, principal.workspaceId), inArray(workflowRuns.status, ['running', 'suspended'])))
    .orderBy(workflowRuns.createdAt);
  const queued = rows.map((r) => ({ runId: r.runId, workflowSlug: r.workflowId, enqueuedAt: toIso(r.createdAt), status: r.status }));
  return { queued, total: queued.length };
}

export async function dequeueRun(db: Db, env: Env, principal: Principal, runId: string) {
  await cancelRun(db, env, principal, runId);
  return { success: true as const };
}
