import { and, desc, eq, or } from 'drizzle-orm';
import { z } from 'zod';
import { artifacts } from '../../schema';
import { workflows, type WorkflowRow } from '../../schema/shard/workflows';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { AppError, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { parseId } from '../lib/ids';
import { readArchive } from '../lib/archive';
import { stepToolIds } from '../workflows/step-tool-ids';
import { compileWorkflow, MAX_SLUG_LENGTH, WORKFLOW_SLUG, type CompiledWorkflow, type Json } from '../workflows/compiler';
import { agentSlugs } from './agents';
import { workspacePrefix } from './archive-install';
import { recordChange } from './audit';

/** Installed workflow definitions (spec 4.8): install, list, read, uninstall, and finding the one a launch names. */

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
export async function compileFor(db: ShardDb, workspaceId: string, definition: unknown): Promise<CompiledWorkflow> {
  const slugs = await agentSlugs(db, workspaceId);
  return compileWorkflow(definition, { workspaceId, hasAgent: (slug) => slugs.has(slug), tools: stepToolIds() });
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

export const findBySlug = async (db: ShardDb, workspaceId: string, slug: string) =>
  (
    await db
      .select()
      .from(workflows)
      .where(and(eq(workflows.workspaceId, workspaceId), eq(workflows.slug, slug)))
      .limit(1)
  )[0] ?? null;

/** Compiles, then writes the stores: the definition in R2 and the record in D1 (overwriting the slug). */
export async function installWorkflow(db: ShardDb, bucket: R2Bucket, principal: Principal, slug: string, definition: unknown): Promise<WorkflowRecord> {
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
export async function installFromArtifact(db: ShardDb, bucket: R2Bucket, principal: Principal, artifactId: string): Promise<WorkflowRecord> {
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

export async function listWorkflows(db: ShardDb, principal: Principal): Promise<WorkflowRecord[]> {
  const rows = await db.select().from(workflows).where(eq(workflows.workspaceId, principal.workspaceId)).orderBy(workflows.slug);
  return rows.map(present);
}

/** The workflow installed under `slug` in the caller's workspace, or 404. */
export async function requireInstalled(db: ShardDb, principal: Principal, slug: string): Promise<WorkflowRow> {
  const row = await findBySlug(db, principal.workspaceId, slug);
  if (!row) throw notFound('Workflow');
  return row;
}

export async function getWorkflow(db: ShardDb, principal: Principal, slug: string): Promise<WorkflowRecord> {
  return present(await requireInstalled(db, principal, slug));
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
export async function listDefinitions(db: ShardDb, principal: Principal) {
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

export async function uninstallWorkflow(db: ShardDb, bucket: R2Bucket, principal: Principal, slug: string) {
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
export async function resolveLaunchId(db: ShardDb, principal: Principal, id: string): Promise<WorkflowRow> {
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
