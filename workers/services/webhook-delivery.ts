import { and, eq, isNotNull, lt, lte, or, sql, type SQL } from 'drizzle-orm';
import { webhookAttempts, webhookDeliveries, webhookEndpoints, type WebhookDeliveryRow, type WebhookEndpointRow } from '../../schema';
import type { Env, ShardDb } from '../env';
import { now } from '../lib/clock';
import { formatId } from '../lib/ids';
import { OUTBOUND_TIMEOUT_MS, outboundUrl } from '../lib/outbound';
import { webhookHeaders } from '../lib/webhook-signing';
import { recordChange } from './audit';
import { publish } from './control-plane';
import type { WebhookEvent, WebhookMessage } from './webhook-events';
import { signingSecrets } from './webhooks';

/**
 * Delivering webhook events (docs/webhooks.md): an event becomes one delivery row per
 * subscribed endpoint, each attempted at once; a failed attempt is tried again on a schedule
 * the delivery's row counts (a new queue message delayed by it, so the schedule survives any
 * restart), and every attempt is logged. Each attempt is claimed on the delivery's row before
 * it is sent, so a queue message delivered twice sends it once. An endpoint that has failed
 * every attempt of a delivery's whole schedule, with no success in between, is disabled and its
 * workspace told. An attempt whose message the queue gave up on ends the delivery `failed`.
 */

/** Attempts of one delivery: at the default base, the last comes about 27.6 hours after the first. */
export const MAX_ATTEMPTS = 10;
/** The longest delay, under the 12 hours a queue message may be delayed. */
const MAX_DELAY_SECONDS = 36_000;
const DEFAULT_BASE_SECONDS = 5;

/** WEBHOOK_RETRY_BASE_SECONDS, or the default. */
export const retryBaseSeconds = (env: Pick<Env, 'WEBHOOK_RETRY_BASE_SECONDS'>) => {
  const base = Number(env.WEBHOOK_RETRY_BASE_SECONDS ?? DEFAULT_BASE_SECONDS);
  return Number.isInteger(base) && base >= 0 ? base : DEFAULT_BASE_SECONDS;
};

/** The wait after failed attempt `failed` (1-based): base × 4^(failed − 1), at most MAX_DELAY_SECONDS. */
export const retryDelaySeconds = (base: number, failed: number) => Math.min(MAX_DELAY_SECONDS, base * 4 ** (failed - 1));

type Target = { workspaceId: string; shard: number };

/** How long a claimed attempt may stay unrecorded before another consumer takes it over: its POST's timeout and the writes around it, well past. */
export const CLAIM_LEASE_MS = 60_000;

/** What became of a message's attempts: made or not to be made (`done`), or one claimed by a consumer still at it (`held`: try the message later). */
export type Handled = 'done' | 'held';

/** The delivery row's claim condition for attempt `n`: not yet taken up, or taken by a consumer that stopped before recording it. */
const claimable = (n: number, t: number) =>
  or(
    lt(webhookDeliveries.attempts, n),
    and(eq(webhookDeliveries.attempts, n), isNotNull(webhookDeliveries.claimedAt), lte(webhookDeliveries.claimedAt, t - CLAIM_LEASE_MS)),
  );

/** Claims attempt `n` of a delivery: the row when this caller may make it, `held` while another consumer makes it, undefined when it was made. */
async function claim(db: ShardDb, deliveryId: number, n: number): Promise<WebhookDeliveryRow | 'held' | undefined> {
  const t = now();
  const [claimed] = await db
    .update(webhookDeliveries)
    .set({ attempts: n, claimedAt: t, updatedAt: t })
    .where(and(eq(webhookDeliveries.id, deliveryId), claimable(n, t)))
    .returning();
  if (claimed) return claimed;
  const [current] = await db
    .select({ attempts: webhookDeliveries.attempts, claimedAt: webhookDeliveries.claimedAt })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.id, deliveryId));
  return current?.attempts === n && current.claimedAt !== null ? 'held' : undefined;
}

/** Claims attempt `n` and makes it. */
async function claimAndAttempt(
  db: ShardDb,
  env: Env,
  target: Target,
  endpoint: WebhookEndpointRow,
  deliveryId: number,
  how: { attempt: number; manual: boolean },
): Promise<Handled> {
  const claimed = await claim(db, deliveryId, how.attempt);
  if (claimed === 'held') return 'held';
  if (claimed) await attempt(db, env, target, endpoint, claimed, how);
  return 'done';
}

/**
 * Makes the event's deliveries to the workspace's enabled endpoints that subscribe to it, and
 * attempts each. The same event handled again (a redelivered message, the outbox's resend)
 * finds its deliveries made and their first attempts claimed, and sends nothing twice.
 */
export async function fanOut(db: ShardDb, env: Env, target: Target, event: WebhookEvent): Promise<Handled> {
  const endpoints = (
    await db
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.workspaceId, target.workspaceId), eq(webhookEndpoints.enabled, true)))
  ).filter((e) => e.events.includes(event.type));
  if (endpoints.length === 0) return 'done';
  const payload = JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
  const t = now();
  const [first, ...rest] = endpoints.map((endpoint) =>
    db
      .insert(webhookDeliveries)
      .values({
        workspaceId: target.workspaceId,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        payload,
        status: 'pending',
        nextAttemptAt: t,
        createdAt: t,
        updatedAt: t,
      })
      // The same event queued twice is one delivery per endpoint.
      .onConflictDoNothing(),
  );
  await db.batch([first!, ...rest]);
  const deliveries = await db
    .select({ id: webhookDeliveries.id, endpointId: webhookDeliveries.endpointId })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.workspaceId, target.workspaceId), eq(webhookDeliveries.eventId, event.id)));
  const handled = await Promise.all(
    deliveries.flatMap((delivery) => {
      const endpoint = endpoints.find((e) => e.id === delivery.endpointId);
      return endpoint ? [claimAndAttempt(db, env, target, endpoint, delivery.id, { attempt: 1, manual: false })] : [];
    }),
  );
  return handled.includes('held') ? 'held' : 'done';
}

/** Makes attempt `message.attempt` of a delivery, unless that attempt was made (a duplicate message) or the delivery is gone. */
export async function attemptDelivery(db: ShardDb, env: Env, message: Extract<WebhookMessage, { kind: 'attempt' }>): Promise<Handled> {
  const [row] = await db
    .select({ delivery: webhookDeliveries, endpoint: webhookEndpoints })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(and(eq(webhookDeliveries.id, message.deliveryId), eq(webhookDeliveries.workspaceId, message.workspaceId)))
    .limit(1);
  if (!row) return 'done';
  if (!row.endpoint.enabled) {
    await db
      .update(webhookDeliveries)
      .set({ status: 'failed', nextAttemptAt: null, updatedAt: now() })
      .where(and(eq(webhookDeliveries.id, row.delivery.id), lt(webhookDeliveries.attempts, message.attempt)));
    return 'done';
  }
  return claimAndAttempt(db, env, message, row.endpoint, row.delivery.id, { attempt: message.attempt, manual: message.manual === true });
}

/** Why a delivery's attempt was never made: the queue dead-lettered its message. */
export const DEAD_LETTERED = 'not attempted: its queue message could not be handled through all its retries';

/**
 * A message the queue dead-lettered (its handling failed through all its retries): the
 * attempt it carried, still unmade, is logged as failed with why, and its delivery ends
 * `failed` instead of staying `pending` with nothing left to attempt it. For an event message,
 * that is the first attempt of each delivery made for it.
 */
export async function failDeadLettered(db: ShardDb, message: WebhookMessage): Promise<void> {
  const [which, n]: [SQL | undefined, number] =
    message.kind === 'event' ? [eq(webhookDeliveries.eventId, message.event.id), 1] : [eq(webhookDeliveries.id, message.deliveryId), message.attempt];
  const unmade = and(
    which,
    eq(webhookDeliveries.workspaceId, message.workspaceId),
    eq(webhookDeliveries.status, 'pending'),
    or(lt(webhookDeliveries.attempts, n), and(eq(webhookDeliveries.attempts, n), isNotNull(webhookDeliveries.claimedAt))),
  );
  const deliveries = await db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(unmade);
  const t = now();
  await Promise.all(
    deliveries.map(({ id }) =>
      db.batch([
        db
          .insert(webhookAttempts)
          .values({ workspaceId: message.workspaceId, deliveryId: id, attempt: n, statusCode: null, latencyMs: 0, error: DEAD_LETTERED, createdAt: t }),
        db
          .update(webhookDeliveries)
          .set({ status: 'failed', attempts: n, claimedAt: null, nextAttemptAt: null, updatedAt: t })
          .where(and(eq(webhookDeliveries.id, id), unmade)),
      ]),
    ),
  );
}

interface Outcome {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/** POSTs the delivery's payload, signed with the endpoint's secrets, under the service's rules for outbound URLs. */
async function post(env: Env, endpoint: WebhookEndpointRow, delivery: WebhookDeliveryRow): Promise<Outcome> {
  let url: URL;
  try {
    url = outboundUrl(endpoint.url, 'url', env);
  } catch (error) {
    return { statusCode: null, latencyMs: 0, error: error instanceof Error ? error.message : String(error) };
  }
  const headers = webhookHeaders(await signingSecrets(env.ENCRYPTION_KEY, endpoint), delivery.eventId, new Date(now()), delivery.payload);
  const started = Date.now();
  try {
    // Redirects are not followed: a 3xx is an answer other than success, like any non-2xx.
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: delivery.payload,
      redirect: 'manual',
      signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return { statusCode: response.status, latencyMs: Date.now() - started, error: response.ok ? null : `HTTP ${response.status}` };
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    return {
      statusCode: null,
      latencyMs: Date.now() - started,
      error: timedOut ? `no answer within ${OUTBOUND_TIMEOUT_MS / 1000} s` : 'the endpoint could not be reached',
    };
  }
}

async function attempt(
  db: ShardDb,
  env: Env,
  target: Target,
  endpoint: WebhookEndpointRow,
  delivery: WebhookDeliveryRow,
  { attempt: n, manual }: { attempt: number; manual: boolean },
): Promise<void> {
  const outcome = await post(env, endpoint, delivery);
  const succeeded = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
  const retry = !succeeded && !manual && n < MAX_ATTEMPTS;
  const delay = retry ? retryDelaySeconds(retryBaseSeconds(env), n) : 0;
  // The next attempt is queued before this one is recorded: a failure in between repeats an attempt rather than losing the rest.
  if (retry) {
    const next: WebhookMessage = { kind: 'attempt', workspaceId: target.workspaceId, shard: target.shard, deliveryId: delivery.id, attempt: n + 1 };
    await env.WEBHOOK_DELIVERIES.send(next, { delaySeconds: delay });
  }
  const t = now();
  await db.batch([
    db.insert(webhookAttempts).values({ workspaceId: target.workspaceId, deliveryId: delivery.id, attempt: n, ...outcome, createdAt: t }),
    // A later attempt claimed meanwhile (a manual redelivery) has the last word on the delivery.
    db
      .update(webhookDeliveries)
      .set({
        status: succeeded ? 'succeeded' : retry ? 'pending' : 'failed',
        claimedAt: null,
        nextAttemptAt: retry ? t + delay * 1000 : null,
        updatedAt: t,
      })
      .where(and(eq(webhookDeliveries.id, delivery.id), eq(webhookDeliveries.attempts, n))),
    db
      .update(webhookEndpoints)
      .set({ failingSince: succeeded ? null : sql`COALESCE(${webhookEndpoints.failingSince}, ${t})` })
      .where(eq(webhookEndpoints.id, endpoint.id)),
  ]);
  if (!succeeded && !manual && !retry) await disableIfFailing(db, env, target, endpoint, delivery);
}

/**
 * After a delivery's last scheduled attempt failed: the endpoint is disabled when nothing was
 * delivered to it since that delivery's first attempt (its failures began no later), that is
 * for the whole schedule, over a day. The workspace's activity says so and its control plane
 * is told to refresh its webhooks.
 */
async function disableIfFailing(db: ShardDb, env: Env, target: Target, endpoint: WebhookEndpointRow, delivery: WebhookDeliveryRow) {
  const firstAttempt = sql`(SELECT MIN(${webhookAttempts.createdAt}) FROM ${webhookAttempts} WHERE ${webhookAttempts.deliveryId} = ${delivery.id})`;
  const reason = `Every attempt of delivery ${formatId('dlv', delivery.id)} failed (${MAX_ATTEMPTS} attempts) and nothing was delivered meanwhile`;
  const [disabled] = await db
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, updatedAt: now() })
    .where(
      and(
        eq(webhookEndpoints.id, endpoint.id),
        eq(webhookEndpoints.enabled, true),
        sql`${webhookEndpoints.failingSince} IS NOT NULL AND ${webhookEndpoints.failingSince} <= ${firstAttempt}`,
      ),
    )
    .returning({ id: webhookEndpoints.id });
  if (!disabled) return;
  const id = formatId('whk', endpoint.id);
  // Recorded as the service acting for the endpoint's creator: no request made this change.
  const actor = {
    userId: endpoint.createdBy,
    workspaceId: target.workspaceId,
    credential: { type: 'session' as const, sessionId: 'webhook-deliveries' },
    origin: { requestId: `webhook-delivery:${delivery.id}`, ip: null, userAgent: null },
  };
  const [audit, ...activity] = recordChange(db, actor, {
    action: 'webhook.disabled',
    resourceType: 'webhook',
    resourceId: id,
    metadata: { reason },
    activity: `Webhook endpoint ${endpoint.url} was disabled: ${reason}`,
  });
  await db.batch([audit!, ...activity]);
  await publish(env, target.workspaceId, [{ type: 'cache-invalidate', resource: 'webhooks', method: 'PATCH', path: `/api/v1/webhooks/${id}` }]);
}
