import { and, asc, between, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import {
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_EVENT_TYPES,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  type WebhookAttemptRow,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
  type WebhookEventType,
} from '../../schema';
import type { Principal } from '../auth/principal';
import type { Env, ShardDb } from '../env';
import { conflict, forbidden, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { decryptSecret, encryptSecret } from '../lib/encryption';
import { formatId, parseId } from '../lib/ids';
import { outboundUrl } from '../lib/outbound';
import { byIntegerId, cursorPage, mapPage, type CursorQuery } from '../lib/pagination';
import { newWebhookSecret } from '../lib/webhook-signing';
import { recordChange } from './audit';
import type { WebhookMessage } from './webhook-events';
import { requireOwned } from './tenant';

/**
 * A workspace's webhook endpoints (docs/webhooks.md): where its events go, their signing
 * secrets, and the log of what was delivered. Owners and admins manage them; the secret is
 * answered once, at creation and at each rotation, and stored encrypted.
 */

/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

const known = new Set<string>(WEBHOOK_EVENT_TYPES);
/** Checked as a whole, so an unknown type is an error of `events` itself. */
const EventTypes = z
  .array(z.string())
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((types) => types.every((t) => known.has(t)), { message: `event types are ${WEBHOOK_EVENT_TYPES.join(', ')}` })
  .pipe(z.array(z.enum(WEBHOOK_EVENT_TYPES)))
  .describe(`The event types to deliver: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
const EndpointUrl = z.string().min(1).max(2048).describe('Where events are POSTed: https, and a public host');
const Description = z.string().trim().max(500);

export const CreateWebhookBody = z.object({ url: EndpointUrl, events: EventTypes, description: Description.optional() });
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

export const PatchWebhookBody = z
  .object({
    url: EndpointUrl.optional(),
    events: EventTypes.optional(),
    description: Description.nullable().optional(),
    enabled: z.boolean().optional().describe('false stops deliveries; true starts them again (also after the service disabled it)'),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'send url, events, description or enabled', path: [] });
export type PatchWebhookBody = z.infer<typeof PatchWebhookBody>;

export const WebhookEndpoint = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  description: z.string().nullable(),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('Why the service disabled it (persistent delivery failure), or null'),
  previousSecretExpiresAt: z.string().nullable().describe('Until when the secret before the last rotation still signs, or null'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().describe('The signing secret (whsec_…), shown only in this answer'),
});

export const WebhookAttempt = z.object({
  attempt: z.number(),
  statusCode: z.number().nullable(),
  latencyMs: z.number(),
  error: z.string().nullable(),
  at: z.string(),
});

export const WebhookDelivery = z.object({
  id: z.string(),
  eventId: z.string().describe('The webhook-id header: the same for every attempt'),
  eventType: z.enum(WEBHOOK_EVENT_TYPES),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  nextAttemptAt: z.string().nullable(),
  payload: z.record(z.string(), z.unknown()),
  attempts: z.array(WebhookAttempt),
  createdAt: z.string(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

const presentEndpoint = (row: WebhookEndpointRow): WebhookEndpoint => ({
  id: formatId('whk', row.id),
  url: row.url,
  events: row.events,
  description: row.description,
  enabled: row.enabled,
  disabledReason: row.disabledReason,
  previousSecretExpiresAt: row.previousSecret && row.previousExpiresAt !== null && row.previousExpiresAt > now() ? toIso(row.previousExpiresAt) : null,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
});

const presentDelivery = (row: WebhookDeliveryRow, attempts: WebhookAttemptRow[]): WebhookDelivery => ({
  id: formatId('dlv', row.id),
  eventId: row.eventId,
  eventType: row.eventType,
  status: row.status,
  nextAttemptAt: row.nextAttemptAt === null ? null : toIso(row.nextAttemptAt),
  payload: JSON.parse(row.payload) as Record<string, unknown>,
  attempts: attempts.map((a) => ({ attempt: a.attempt, statusCode: a.statusCode, latencyMs: a.latencyMs, error: a.error, at: toIso(a.createdAt) })),
  createdAt: toIso(row.createdAt),
});

/** The GCM additional data of an endpoint's secrets: a ciphertext copied to another workspace does not decrypt. */
const secretContext = (workspaceId: string) => `webhook-secret:${workspaceId}`;

/** The secrets that sign an endpoint's deliveries now: its own, and the one before a rotation while the overlap lasts. */
export async function signingSecrets(encryptionKey: string | undefined, row: WebhookEndpointRow): Promise<string[]> {
  const sealed = row.previousSecret && row.previousExpiresAt !== null && row.previousExpiresAt > now() ? [row.secret, row.previousSecret] : [row.secret];
  return Promise.all(
    sealed.map(async (ciphertext) => {
      const secret = await decryptSecret(encryptionKey, secretContext(row.workspaceId), ciphertext);
      if (secret === null) throw new Error(`The secret of ${formatId('whk', row.id)} does not decrypt under its workspace`);
      return secret;
    }),
  );
}

/** Owners and admins manage a workspace's webhooks: they reach outside it and carry its events. */
function requireManager(principal: Principal) {
  if (principal.role === 'member') throw forbidden('Only owners and admins can manage webhooks');
}

/** An endpoint of the caller's workspace, or 404 (another workspace's id included). */
async function requireEndpoint(db: ShardDb, principal: Principal, rawId: string): Promise<WebhookEndpointRow> {
  requireManager(principal);
  return requireOwned(db, webhookEndpoints, principal, 'whk', rawId, 'Webhook endpoint');
}

export async function listWebhooks(db: ShardDb, principal: Principal, query: CursorQuery) {
  requireManager(principal);
  const page = await cursorPage(
    query,
    byIntegerId(webhookEndpoints.id, (where, orderBy, limit) => db.select().from(webhookEndpoints).where(where).orderBy(orderBy).limit(limit), 'whk'),
    eq(webhookEndpoints.workspaceId, principal.workspaceId),
  );
  return mapPage(page, presentEndpoint);
}

export async function getWebhook(db: ShardDb, principal: Principal, rawId: string) {
  return presentEndpoint(await requireEndpoint(db, principal, rawId));
}

export async function createWebhook(db: ShardDb, env: Env, principal: Principal, input: CreateWebhookBody) {
  requireManager(principal);
  outboundUrl(input.url, 'url', env);
  const secret = newWebhookSecret();
  const t = now();
  const [[row]] = await db.batch([
    db
      .insert(webhookEndpoints)
      .values({
        workspaceId: principal.workspaceId,
        url: input.url,
        events: unique(input.events),
        description: input.description || null,
        enabled: true,
        secret: await encryptSecret(env.ENCRYPTION_KEY, secretContext(principal.workspaceId), secret),
        createdBy: principal.userId,
        createdAt: t,
        updatedAt: t,
      })
      .returning(),
    ...recordChange(db, principal, {
      action: 'webhook.created',
      resourceType: 'webhook',
      // The newest endpoint of the workspace: the one this batch inserted.
      resourceId: sql`(SELECT 'whk_' || ${webhookEndpoints.id} FROM ${webhookEndpoints} WHERE ${webhookEndpoints.workspaceId} = ${principal.workspaceId} ORDER BY ${webhookEndpoints.id} DESC LIMIT 1)`,
      metadata: { url: input.url, events: input.events },
      activity: `Webhook endpoint ${input.url} was added`,
    }),
  ]);
  return { ...presentEndpoint(row!), secret };
}

export async function updateWebhook(db: ShardDb, env: Env, principal: Principal, rawId: string, patch: PatchWebhookBody) {
  const row = await requireEndpoint(db, principal, rawId);
  if (patch.url !== undefined) outboundUrl(patch.url, 'url', env);
  const set = {
    ...(patch.url === undefined ? {} : { url: patch.url }),
    ...(patch.events === undefined ? {} : { events: unique(patch.events) }),
    ...(patch.description === undefined ? {} : { description: patch.description || null }),
    // Enabling again forgets the failures that disabled it.
    ...(patch.enabled === undefined ? {} : { enabled: patch.enabled, disabledReason: null, ...(patch.enabled ? { failingSince: null } : {}) }),
    updatedAt: now(),
  };
  const [[updated]] = await db.batch([
    db.update(webhookEndpoints).set(set).where(eq(webhookEndpoints.id, row.id)).returning(),
    ...recordChange(db, principal, {
      action: 'webhook.updated',
      resourceType: 'webhook',
      resourceId: formatId('whk', row.id),
      metadata: { ...patch },
      activity:
        patch.enabled === false
          ? `Webhook endpoint ${row.url} was disabled`
          : patch.enabled === true && !row.enabled
            ? `Webhook endpoint ${row.url} was enabled`
            : `Webhook endpoint ${row.url} was updated`,
    }),
  ]);
  return presentEndpoint(updated!);
}

/** Its deliveries and their attempts go with it. */
export async function deleteWebhook(db: ShardDb, principal: Principal, rawId: string) {
  const row = await requireEndpoint(db, principal, rawId);
  await db.batch([
    db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, row.id)),
    ...recordChange(db, principal, {
      action: 'webhook.deleted',
      resourceType: 'webhook',
      resourceId: formatId('whk', row.id),
      metadata: { url: row.url },
      activity: `Webhook endpoint ${row.url} was deleted`,
    }),
  ]);
  return { success: true as const };
}

/** A new secret, answered once; the old one keeps signing beside it for ROTATION_OVERLAP_MS. */
export async function rotateWebhookSecret(db: ShardDb, env: Env, principal: Principal, rawId: string) {
  const row = await requireEndpoint(db, principal, rawId);
  const secret = newWebhookSecret();
  const t = now();
  const [[updated]] = await db.batch([
    db
      .update(webhookEndpoints)
      .set({
        secret: await encryptSecret(env.ENCRYPTION_KEY, secretContext(row.workspaceId), secret),
        previousSecret: row.secret,
        previousExpiresAt: t + ROTATION_OVERLAP_MS,
        updatedAt: t,
      })
      .where(eq(webhookEndpoints.id, row.id))
      .returning(),
    ...recordChange(db, principal, {
      action: 'webhook.secret_rotated',
      resourceType: 'webhook',
      resourceId: formatId('whk', row.id),
      activity: `The signing secret of webhook endpoint ${row.url} was rotated`,
    }),
  ]);
  return { ...presentEndpoint(updated!), secret };
}

export const DeliveryId = z.string().min(1).max(40).describe('The delivery id, dlv_<n>');

/** An endpoint's deliveries, newest first, each with its attempts. */
export async function listDeliveries(db: ShardDb, principal: Principal, rawId: string, query: CursorQuery) {
  const endpoint = await requireEndpoint(db, principal, rawId);
  const page = await cursorPage(
    query,
    byIntegerId(webhookDeliveries.id, (where, orderBy, limit) => db.select().from(webhookDeliveries).where(where).orderBy(orderBy).limit(limit), 'dlv'),
    and(eq(webhookDeliveries.workspaceId, principal.workspaceId), eq(webhookDeliveries.endpointId, endpoint.id)),
  );
  const ids = page.data.map((d) => d.id);
  const attempts =
    ids.length === 0
      ? []
      : await db
          .select({ attempt: webhookAttempts })
          .from(webhookAttempts)
          .innerJoin(webhookDeliveries, eq(webhookDeliveries.id, webhookAttempts.deliveryId))
          .where(and(eq(webhookDeliveries.endpointId, endpoint.id), between(webhookDeliveries.id, Math.min(...ids), Math.max(...ids))))
          .orderBy(asc(webhookAttempts.id));
  return mapPage(page, (d) =>
    presentDelivery(
      d,
      attempts.map((a) => a.attempt).filter((a) => a.deliveryId === d.id),
    ),
  );
}

/**
 * Sends a delivery again now, whatever became of it: one attempt, logged like the others, with
 * no retries of its own. The endpoint must be enabled.
 */
export async function redeliver(db: ShardDb, env: Env, principal: Principal, rawId: string, rawDeliveryId: string) {
  const endpoint = await requireEndpoint(db, principal, rawId);
  const deliveryId = parseId('dlv', rawDeliveryId);
  const [delivery] =
    deliveryId === null
      ? []
      : await db
          .select()
          .from(webhookDeliveries)
          .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpoint.id)))
          .limit(1);
  if (!delivery) throw notFound('Delivery');
  if (!endpoint.enabled) throw conflict('The endpoint is disabled: enable it to redeliver');
  const [updated] = await db
    .update(webhookDeliveries)
    .set({ status: 'pending', nextAttemptAt: now(), updatedAt: now() })
    .where(eq(webhookDeliveries.id, delivery.id))
    .returning();
  await env.WEBHOOK_DELIVERIES.send({
    kind: 'attempt',
    workspaceId: principal.workspaceId,
    shard: principal.shard,
    deliveryId: delivery.id,
    attempt: delivery.attempts + 1,
    manual: true,
  } satisfies WebhookMessage);
  const attempts = await db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, delivery.id)).orderBy(asc(webhookAttempts.id));
  return presentDelivery(updated!, attempts);
}

const unique = (types: WebhookEventType[]) => [...new Set(types)];
