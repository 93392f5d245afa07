import { and, asc, count, eq } from 'drizzle-orm';
import { z } from 'zod';
import {
  SENDER_AUTHS,
  TRIGGER_AUTHS,
  TRIGGER_SOURCES,
  TRIGGER_STATES,
  workflowTriggers,
  type WorkflowRow,
  type WorkflowTriggerRow,
} from '../../schema/shard/workflows';
import { actorToKeep, type Actor } from '../auth/actor';
import { GithubRepo } from '../connectors/github';
import { covers, GithubTriggerEvent } from '../connectors/github-events';
import type { Principal } from '../auth/principal';
import type { Env, ShardDb } from '../env';
import { invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { randomBytes } from '../lib/crypto';
import { encryptSecret } from '../lib/encryption';
import { formatId } from '../lib/ids';
import { eraseRateLimit } from '../lib/rate-limit';
import { newWebhookSecret } from '../lib/webhook-signing';
import { declaredGithubTrigger } from '../workflows/trigger-declarations';
import { recordChange } from './audit';
import { requireInstalled } from './workflow-definitions';

/**
 * Inbound workflow triggers (docs/workflows.md, Triggers): URLs that launch a run of an
 * installed workflow when a sender proves it holds the trigger's secret. A `webhook` trigger
 * takes any sender's JSON as the input; a `github` one takes GitHub's webhook deliveries of the
 * events it asks for, which its workflow declares (docs/workflows.md, GitHub triggers). This
 * module is their settings: create, list, read, rotate the secret, delete; trigger-delivery.ts
 * receives the POSTs.
 */

/** Triggers one workflow may have. */
export const MAX_TRIGGERS_PER_WORKFLOW = 20;
/** Where the public trigger URLs live, outside /api/v1: they take no API credential. */
export const TRIGGER_PATH = '/hooks/workflows';

export const TriggerBody = z.object({
  name: z.string().min(1).max(100).optional().describe('A label for the sender, e.g. "GitHub Actions"'),
  source: z
    .enum(TRIGGER_SOURCES)
    .default('webhook')
    .describe('Who sends: any sender, its JSON body the input (webhook, default), or GitHub’s webhook delivery of the events the workflow declares (github)'),
  auth: z
    .enum(SENDER_AUTHS)
    .optional()
    .describe(
      'A webhook trigger: how the sender proves itself, Standard Webhooks signature headers (signature, default) or the secret as `Authorization: Bearer`',
    ),
  events: z
    .array(GithubTriggerEvent)
    .min(1)
    .max(30)
    .optional()
    .describe(
      'A github trigger: the events that start a run (push, pull_request, pull_request.<action>), among those the workflow declares; default: all of them',
    ),
  repository: GithubRepo.optional().describe('A github trigger: only events of this repository (owner/repo) start runs; default: the declared one, else any'),
});
export type TriggerBody = z.output<typeof TriggerBody>;

export const TriggerId = z.string().min(1).max(80).describe('The trigger id (trg_…)');

export const Trigger = z.object({
  id: z.string(),
  workflowId: z.string().describe('The workflow’s slug'),
  name: z.string().nullable(),
  source: z.enum(TRIGGER_SOURCES),
  auth: z.enum(TRIGGER_AUTHS).describe('How the sender proves itself; a github trigger’s is GitHub’s X-Hub-Signature-256'),
  events: z.array(GithubTriggerEvent).nullable().describe('A github trigger’s events; null for a webhook trigger'),
  repository: z.string().nullable().describe('A github trigger’s one repository, or null for any'),
  url: z.string().describe('Where the sender POSTs: no API key, the secret proves it'),
  state: z.enum(TRIGGER_STATES),
  stoppedReason: z.string().nullable().describe('Why it stopped (state stopped): the credential it acts for no longer acts here'),
  actsFor: z.object({
    userId: z.string(),
    credential: z.object({ type: z.enum(['session', 'api_key', 'oauth']), apiKeyId: z.string().nullable() }),
  }),
  lastDeliveryAt: z.string().nullable().describe('When a delivery last launched (or replayed) a run'),
  createdBy: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Trigger = z.infer<typeof Trigger>;

export const TriggerWithSecret = Trigger.extend({ secret: z.string().describe('The trigger’s secret (whsec_…), shown only in this answer') });

/** The GCM additional data of a trigger's secret: a ciphertext copied to another workspace or trigger does not decrypt. */
export const triggerSecretContext = (workspaceId: string, triggerId: string) => `trigger-secret:${workspaceId}:${triggerId}`;

/** The RateLimiter object that counts a trigger's deliveries (trigger-delivery.ts): erased with the trigger. */
export const triggerRateSubject = (triggerId: string) => `trigger:${triggerId}`;

/** Erases the delivery counts of triggers whose rows are gone; one not reached is logged (its last count stays, read by nothing). */
export const eraseTriggerCounts = (env: Env, triggerIds: string[]) =>
  Promise.all(
    triggerIds.map((id) =>
      eraseRateLimit(env, triggerRateSubject(id)).catch((error: unknown) =>
        console.error(JSON.stringify({ level: 'error', triggerId: id, error: `trigger count erase failed: ${String(error)}` })),
      ),
    ),
  );

/** The actor a trigger's row holds: its creator's credential as it was at creation. */
export const storedActorOf = (row: WorkflowTriggerRow): Actor => JSON.parse(row.actor) as Actor;

/**
 * A new trigger id. It carries the workspace's id (a UUID, its dashes dropped), so the public
 * route finds the workspace's shard in the directory from the id alone, wherever a move took it.
 */
const newTriggerId = (workspaceId: string) =>
  `trg_${workspaceId.replaceAll('-', '')}_${Array.from(randomBytes(8), (b) => b.toString(16).padStart(2, '0')).join('')}`;

const TRIGGER_ID = /^trg_([0-9a-f]{8})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{12})_[0-9a-f]{16}$/;

/** The workspace id a trigger id carries, or null for anything that is no trigger id of ours. */
export function workspaceOfTrigger(triggerId: string): string | null {
  const parts = TRIGGER_ID.exec(triggerId);
  return parts ? parts.slice(1).join('-') : null;
}

const present = (row: WorkflowTriggerRow, baseUrl: string): Trigger => {
  const { credential } = storedActorOf(row);
  return {
    id: row.id,
    workflowId: row.workflowSlug,
    name: row.name,
    source: row.source,
    auth: row.auth,
    events: row.events === null ? null : (JSON.parse(row.events) as GithubTriggerEvent[]),
    repository: row.repository,
    url: `${baseUrl}${TRIGGER_PATH}/${row.id}`,
    state: row.state,
    stoppedReason: row.stoppedReason,
    actsFor: {
      userId: row.actorUserId,
      credential: { type: credential.type, apiKeyId: credential.type === 'api_key' ? formatId('key', credential.apiKeyId) : null },
    },
    lastDeliveryAt: row.lastDeliveryAt === null ? null : toIso(row.lastDeliveryAt),
    createdBy: row.createdBy,
    createdAt: toIso(row.createdAt),
    updatedAt: toIso(row.updatedAt),
  };
};

/** The trigger of this workflow in this workspace, or 404: another workspace's answers exactly like a missing one. */
export async function requireTrigger(db: ShardDb, principal: Principal, slug: string, id: string): Promise<WorkflowTriggerRow> {
  const [row] = await db
    .select()
    .from(workflowTriggers)
    .where(and(eq(workflowTriggers.workspaceId, principal.workspaceId), eq(workflowTriggers.workflowSlug, slug), eq(workflowTriggers.id, id)))
    .limit(1);
  if (!row) throw notFound('Trigger');
  return row;
}

/**
 * What the body asks for, checked against the workflow: a webhook trigger's auth, or a github
 * trigger's events (each covered by one the definition declares) and repository (the declared
 * one, if it names one).
 */
function triggerKind(workflow: WorkflowRow, body: TriggerBody) {
  if (body.source === 'webhook') {
    for (const field of ['events', 'repository'] as const) {
      if (body[field] !== undefined) throw invalidInput(field, 'source', `${field} is for a trigger of source "github"`);
    }
    return { source: body.source, auth: body.auth ?? 'signature', events: null, repository: null };
  }
  if (body.auth !== undefined)
    throw invalidInput('auth', 'source', 'A github trigger is proven by GitHub’s X-Hub-Signature-256; auth is for a webhook trigger');
  const declared = declaredGithubTrigger((JSON.parse(workflow.definition) as { metadata?: unknown }).metadata);
  if (!declared) {
    throw invalidInput(
      'source',
      'not_declared',
      `Workflow ${workflow.slug} declares no GitHub events: its definition needs metadata.triggers [{"source": "github", "events": [...]}]`,
    );
  }
  const events = body.events ?? declared.events;
  events.forEach((event, i) => {
    if (!declared.events.some((asked) => covers(asked, event)))
      throw invalidInput(`events.${i}`, 'not_declared', `Workflow ${workflow.slug} declares the GitHub events ${declared.events.join(', ')}, not ${event}`);
  });
  const repository = body.repository ?? declared.repository ?? null;
  if (declared.repository !== undefined && repository?.toLowerCase() !== declared.repository.toLowerCase())
    throw invalidInput('repository', 'not_declared', `Workflow ${workflow.slug} takes GitHub events of ${declared.repository} only`);
  return { source: body.source, auth: 'github_signature' as const, events: JSON.stringify([...new Set(events)]), repository };
}

export async function createTrigger(db: ShardDb, env: Env, principal: Principal, baseUrl: string, slug: string, body: TriggerBody) {
  const workflow = await requireInstalled(db, principal, slug);
  const [existing] = await db
    .select({ n: count() })
    .from(workflowTriggers)
    .where(and(eq(workflowTriggers.workspaceId, principal.workspaceId), eq(workflowTriggers.workflowSlug, slug)));
  if ((existing?.n ?? 0) >= MAX_TRIGGERS_PER_WORKFLOW) {
    throw invalidInput('slug', 'limit', `A workflow has at most ${MAX_TRIGGERS_PER_WORKFLOW} triggers; delete one first`, { limit: MAX_TRIGGERS_PER_WORKFLOW });
  }
  const kind = triggerKind(workflow, body);
  const id = newTriggerId(principal.workspaceId);
  const secret = newWebhookSecret();
  const t = now();
  await db.batch([
    db.insert(workflowTriggers).values({
      id,
      workspaceId: principal.workspaceId,
      workflowSlug: slug,
      name: body.name ?? null,
      ...kind,
      secret: await encryptSecret(env.ENCRYPTION_KEY, triggerSecretContext(principal.workspaceId, id), secret),
      state: 'active',
      actorUserId: principal.userId,
      actor: JSON.stringify(actorToKeep(principal)),
      createdBy: principal.userId,
      createdAt: t,
      updatedAt: t,
    }),
    ...recordChange(db, principal, {
      action: 'workflow.trigger_created',
      resourceType: 'workflow_trigger',
      resourceId: id,
      metadata: { workflowId: slug, source: kind.source, auth: kind.auth },
      activity: `A trigger URL of workflow ${workflow.name} was created`,
    }),
  ]);
  return { ...(await getTrigger(db, principal, baseUrl, slug, id)), secret };
}

export async function listTriggers(db: ShardDb, principal: Principal, baseUrl: string, slug: string): Promise<{ triggers: Trigger[] }> {
  await requireInstalled(db, principal, slug);
  const rows = await db
    .select()
    .from(workflowTriggers)
    .where(and(eq(workflowTriggers.workspaceId, principal.workspaceId), eq(workflowTriggers.workflowSlug, slug)))
    .orderBy(asc(workflowTriggers.createdAt), asc(workflowTriggers.id));
  return { triggers: rows.map((row) => present(row, baseUrl)) };
}

export async function getTrigger(db: ShardDb, principal: Principal, baseUrl: string, slug: string, id: string): Promise<Trigger> {
  return present(await requireTrigger(db, principal, slug, id), baseUrl);
}

/**
 * A new secret, answered once; the old one stops working at once. The trigger acts for the
 * caller's credential from now on, so rotating also sets a stopped trigger going again.
 */
export async function rotateTriggerSecret(db: ShardDb, env: Env, principal: Principal, baseUrl: string, slug: string, id: string) {
  await requireTrigger(db, principal, slug, id);
  const secret = newWebhookSecret();
  await db.batch([
    db
      .update(workflowTriggers)
      .set({
        secret: await encryptSecret(env.ENCRYPTION_KEY, triggerSecretContext(principal.workspaceId, id), secret),
        state: 'active',
        stoppedReason: null,
        actorUserId: principal.userId,
        actor: JSON.stringify(actorToKeep(principal)),
        updatedAt: now(),
      })
      .where(eq(workflowTriggers.id, id)),
    ...recordChange(db, principal, {
      action: 'workflow.trigger_secret_rotated',
      resourceType: 'workflow_trigger',
      resourceId: id,
      metadata: { workflowId: slug },
    }),
  ]);
  return { ...(await getTrigger(db, principal, baseUrl, slug, id)), secret };
}

export async function deleteTrigger(db: ShardDb, env: Env, principal: Principal, slug: string, id: string): Promise<{ success: true }> {
  await requireTrigger(db, principal, slug, id);
  await db.batch([
    db.delete(workflowTriggers).where(eq(workflowTriggers.id, id)),
    ...recordChange(db, principal, { action: 'workflow.trigger_deleted', resourceType: 'workflow_trigger', resourceId: id, metadata: { workflowId: slug } }),
  ]);
  // Row first: a delivery that finds no row is 404 before it counts.
  await eraseTriggerCounts(env, [id]);
  return { success: true };
}

/** Uninstalling a workflow deletes its triggers, rows then delivery counts: their URLs answer 404 from then on. */
export async function deleteTriggersOf(db: ShardDb, env: Env, workspaceId: string, slug: string): Promise<void> {
  const where = and(eq(workflowTriggers.workspaceId, workspaceId), eq(workflowTriggers.workflowSlug, slug));
  const rows = await db.delete(workflowTriggers).where(where).returning({ id: workflowTriggers.id });
  await eraseTriggerCounts(
    env,
    rows.map((row) => row.id),
  );
}
