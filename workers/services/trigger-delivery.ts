import { and, eq } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { workflowTriggers, type WorkflowTriggerRow } from '../../schema/shard/workflows';
import type { Actor } from '../auth/actor';
import { credentialNow, LAUNCHED } from '../auth/launcher';
import type { RequestOrigin } from '../auth/principal';
import { hasScope } from '../auth/scopes';
import { covers, eventName, payloadOf, repositoryOf, runInputOf, verifyHubSignature, type GithubTriggerEvent } from '../connectors/github-events';
import type { Env, ShardDb } from '../env';
import { AppError, forbidden, invalidInput, notFound, unauthorized } from '../errors';
import { now } from '../lib/clock';
import { sha256Hex, timingSafeEqual } from '../lib/crypto';
import { decryptSecret } from '../lib/encryption';
import { hitRateLimit } from '../lib/rate-limit';
import { recordChangeAfter } from './audit';
import { recordDelivery, startedBefore, type DeliveryEntry } from './trigger-delivery-log';
import { storedActorOf, triggerRateSubject, triggerSecretContext } from './workflow-triggers';
import { launchWorkflow, type Launched } from './workflow-runs';

/**
 * A POST to a trigger URL (docs/workflows.md, Triggers): proven by the trigger's secret, it
 * launches a run of the workflow, once per delivery id. A `webhook` trigger's input is the JSON
 * body; a `github` trigger's is built from the GitHub event, and events it did not ask for start nothing.
 */

/** Deliveries one trigger takes per window: a sender looping on it stops here, not in the run queue. */
export const TRIGGER_RATE_LIMIT = 60;
const TRIGGER_RATE_WINDOW_MS = 60_000;
/** The scope a trigger's runs are launched under, as the launch route asks it. */
const RUN_SCOPE = 'workflow:run';

/** What a trigger URL was sent: the exact body bytes (the signature covers them) and the headers. */
export interface Delivery {
  body: string;
  headers: Headers;
  origin: RequestOrigin;
}

/** What a proven delivery starts no run for, answered 200 so the sender does not retry it: GitHub's ping, an event the trigger did not ask for. */
export const DeliveryIgnored = z.object({
  status: z.enum(['pong', 'ignored']),
  event: z.string().describe('The GitHub event (`pull_request.closed`: the event and its action)'),
  message: z.string().describe('Why no run started'),
});
export type DeliveryIgnored = z.infer<typeof DeliveryIgnored>;

/**
 * The delivery id the sender names, which the run is keyed on once the sender is proven: for a
 * signed POST its `webhook-id` (signed with the body), for a bearer one the `Idempotency-Key` it
 * may send, for GitHub's its `X-GitHub-Delivery`; without one (null) every POST launches.
 */
function namedDeliveryId(row: WorkflowTriggerRow, headers: Headers): string | null {
  const name = row.auth === 'github_signature' ? 'x-github-delivery' : row.auth === 'bearer' ? 'idempotency-key' : 'webhook-id';
  return headers.get(name) || null;
}

/** A 401 when the sender does not prove it holds the trigger's secret. */
async function proveSender(row: WorkflowTriggerRow, secret: string, delivery: Delivery): Promise<void> {
  if (row.auth === 'github_signature') {
    if (!(await verifyHubSignature(secret, delivery.body, delivery.headers.get('x-hub-signature-256'))))
      throw unauthorized('The X-Hub-Signature-256 header does not verify under this trigger’s secret (the Secret of the GitHub webhook)');
    return;
  }
  if (row.auth === 'bearer') {
    const given = /^Bearer (.+)$/i.exec(delivery.headers.get('authorization') ?? '')?.[1];
    if (given === undefined || !timingSafeEqual(given, secret)) throw unauthorized('The trigger’s secret is required as Authorization: Bearer <secret>');
    return;
  }
  const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, delivery.headers.get(name) ?? '']));
  try {
    // Checks the signature over `<webhook-id>.<webhook-timestamp>.<body>` and a timestamp within 5 minutes of now.
    new Webhook(secret).verify(delivery.body, headers);
  } catch {
    throw unauthorized('The Standard Webhooks signature (webhook-id, webhook-timestamp, webhook-signature) does not verify under this trigger’s secret');
  }
}

/**
 * The run's id is made from (trigger, delivery id) through launch's `toolCallKey`: a replayed
 * delivery starts the same run, which its object takes once, and answers its id.
 */
const deliveryKey = async (triggerId: string, deliveryId: string) => (await sha256Hex(`trigger:${triggerId}:${deliveryId}`)).slice(0, 32);

function bodyInput(body: string): Record<string, unknown> {
  if (body.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw invalidInput('body', 'json', 'The request body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalidInput('body', 'type', 'The body must be a JSON object: the run’s input');
  return parsed as Record<string, unknown>;
}

/** Stops the trigger, recording why, as its credential's holder (audit `workflow.trigger_stopped`); its URL answers 403 from then on. */
async function stopTrigger(db: ShardDb, row: WorkflowTriggerRow, stored: Actor, reason: string): Promise<void> {
  await db
    .update(workflowTriggers)
    .set({ state: 'stopped', stoppedReason: reason, updatedAt: now() })
    .where(and(eq(workflowTriggers.id, row.id), eq(workflowTriggers.state, 'active')));
  await recordChangeAfter(db, stored, {
    action: 'workflow.trigger_stopped',
    resourceType: 'workflow_trigger',
    resourceId: row.id,
    metadata: { workflowId: row.workflowSlug, reason },
    activity: `A trigger of workflow ${row.workflowSlug} stopped: ${reason}`,
  });
}

/**
 * The actor the trigger's run acts for, as its credential stands now, or why it no longer can:
 * revoked, signed out, expired, rebound to another workspace, its holder gone, or without `workflow:run`.
 */
async function actorNow(env: Env, stored: Actor): Promise<Actor | string> {
  const held = await credentialNow(env, stored);
  if (!held.ok) return held.reason.replace(LAUNCHED, 'The credential this trigger acts for');
  if (!hasScope(held.actor.scopes, RUN_SCOPE)) return `The credential this trigger acts for no longer holds "${RUN_SCOPE}"`;
  return held.actor;
}

const stopped = (reason: string) => forbidden(`This trigger is stopped: ${reason}`, { reason });

type Planned = { input: Record<string, unknown>; event: string | null } | { ignored: DeliveryIgnored };

/** What the delivery log records of a delivery, filled in as its handling learns it. */
interface Seen {
  deliveryId: string | null;
  event: string | null;
}

/** A GitHub delivery's run input, or why it starts nothing: a ping, an event or a repository the trigger did not ask for. */
function githubInput(row: WorkflowTriggerRow, deliveryId: string | null, delivery: Delivery): Planned {
  const asked = JSON.parse(row.events ?? '[]') as GithubTriggerEvent[];
  const event = delivery.headers.get('x-github-event') ?? '';
  if (event === 'ping') return { ignored: { status: 'pong', event, message: `This trigger’s URL and secret work; it starts a run on ${asked.join(', ')}` } };
  const payload = payloadOf(delivery.body, delivery.headers.get('content-type'));
  if (payload === null) throw invalidInput('body', 'json', 'The delivery carries no JSON object, as the body or as the form field payload');
  const name = eventName(event, payload.action);
  if ((event !== 'push' && event !== 'pull_request') || !asked.some((a) => covers(a, name)))
    return {
      ignored: {
        status: 'ignored',
        event: name,
        message: `This trigger starts runs on ${asked.join(', ')}, not ${name || 'a delivery without X-GitHub-Event'}`,
      },
    };
  const repository = repositoryOf(payload);
  if (row.repository !== null && repository?.toLowerCase() !== row.repository.toLowerCase())
    return {
      ignored: {
        status: 'ignored',
        event: name,
        message: `This trigger takes events of ${row.repository} only, not ${repository ?? 'an event without a repository'}`,
      },
    };
  return { input: runInputOf(event, deliveryId, payload), event: name };
}

/**
 * Receives one POST to trigger `triggerId` of the workspace `db` holds; answers the run it
 * launched (or launched before, for a replay), or why a proven GitHub delivery starts none. What
 * became of it goes into the trigger's delivery log, a refusal too.
 */
export async function receiveDelivery(db: ShardDb, env: Env, workspaceId: string, triggerId: string, delivery: Delivery): Promise<Launched | DeliveryIgnored> {
  const [row] = await db
    .select()
    .from(workflowTriggers)
    .where(and(eq(workflowTriggers.workspaceId, workspaceId), eq(workflowTriggers.id, triggerId)))
    .limit(1);
  if (!row) throw notFound('Trigger');
  const seen: Seen = {
    deliveryId: namedDeliveryId(row, delivery.headers),
    event: row.source === 'github' ? delivery.headers.get('x-github-event') || null : null,
  };
  try {
    const handled = await handle(db, env, row, delivery, seen);
    await recordDelivery(db, row, { deliveryId: seen.deliveryId, event: seen.event, ...handled.entry });
    return handled.answer;
  } catch (error) {
    await recordDelivery(db, row, {
      deliveryId: seen.deliveryId,
      event: seen.event,
      outcome: 'refused',
      status: error instanceof AppError ? error.status : 500,
      runId: null,
      reason: error instanceof AppError ? error.message : 'The service failed to handle the delivery',
    });
    throw error;
  }
}

type Handled = { answer: Launched | DeliveryIgnored; entry: Pick<DeliveryEntry, 'outcome' | 'status' | 'runId' | 'reason'> };

/** Proves, checks and launches a delivery: its answer and what the log records; `seen` learns the GitHub event on the way. */
async function handle(db: ShardDb, env: Env, row: WorkflowTriggerRow, delivery: Delivery, seen: Seen): Promise<Handled> {
  const secret = await decryptSecret(env.ENCRYPTION_KEY, triggerSecretContext(row.workspaceId, row.id), row.secret);
  if (secret === null) throw new Error(`The secret of trigger ${row.id} does not decrypt under its workspace`);
  await proveSender(row, secret, delivery);
  if (row.state === 'stopped') throw stopped(row.stoppedReason ?? 'stopped');
  const planned: Planned = row.source === 'github' ? githubInput(row, seen.deliveryId, delivery) : { input: bodyInput(delivery.body), event: null };
  if ('ignored' in planned) {
    seen.event = planned.ignored.event || seen.event;
    return { answer: planned.ignored, entry: { outcome: 'ignored', status: 200, runId: null, reason: planned.ignored.message } };
  }
  seen.event = planned.event;
  // Counted once the secret is proven and the delivery is meant to start a run: pings and a repository's other events cost nothing.
  const count = await hitRateLimit(env, triggerRateSubject(row.id), TRIGGER_RATE_LIMIT, TRIGGER_RATE_WINDOW_MS);
  if (!count.allowed) {
    throw new AppError('RATE_LIMITED', 429, `A trigger takes at most ${TRIGGER_RATE_LIMIT} deliveries a minute`, {
      retryAfterSeconds: Math.ceil(count.resetMs / 1000),
    });
  }
  const stored = storedActorOf(row);
  const actor = await actorNow(env, stored);
  if (typeof actor === 'string') {
    await stopTrigger(db, row, stored, actor);
    throw stopped(actor);
  }
  const replayed = seen.deliveryId !== null && (await startedBefore(db, row.id, seen.deliveryId));
  const launched = await launchWorkflow(
    db,
    env,
    { ...actor, origin: delivery.origin },
    {
      workflowId: row.workflowSlug,
      inputs: planned.input,
      ...(seen.deliveryId === null ? {} : { toolCallKey: await deliveryKey(row.id, seen.deliveryId) }),
    },
  );
  await db.update(workflowTriggers).set({ lastDeliveryAt: now() }).where(eq(workflowTriggers.id, row.id));
  return { answer: launched, entry: { outcome: replayed ? 'duplicate' : 'started', status: 202, runId: launched.runId, reason: null } };
}
