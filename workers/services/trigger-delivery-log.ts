import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import { z } from 'zod';
import { TRIGGER_DELIVERY_OUTCOMES, triggerDeliveries, type TriggerDeliveryRow, type WorkflowTriggerRow } from '../../schema/shard/workflows';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { now, toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import { byIntegerId, cursorPage, mapPage, type CursorQuery } from '../lib/pagination';
import { requireTrigger } from './workflow-triggers';

/**
 * A trigger's delivery log (docs/workflows.md, Delivery log): what each POST that reached the
 * trigger was named and what became of it. Never its body or headers, which may carry secrets.
 */

/** Entries a trigger keeps: recording one more deletes the oldest. */
export const TRIGGER_DELIVERIES_KEPT = 100;
/** What a sender names is cut to this: a header is the sender's to fill. */
const NAME_CHARS = 200;
const REASON_CHARS = 500;

export const TriggerDelivery = z.object({
  id: z.string().describe('The entry’s id (tdl_…)'),
  deliveryId: z
    .string()
    .nullable()
    .describe('The delivery id the sender gave (X-GitHub-Delivery, webhook-id or Idempotency-Key), as sent even when refused; null without one'),
  event: z.string().nullable().describe('A GitHub delivery’s event (`pull_request.opened`: the event and its action); null for a webhook trigger'),
  outcome: z
    .enum(TRIGGER_DELIVERY_OUTCOMES)
    .describe(
      'started: a run started; duplicate: a delivery id seen before, answered with its run; ignored: proven, no run meant (a ping, an event or repository not asked for); refused',
    ),
  status: z.number().int().describe('The HTTP status the sender was answered'),
  runId: z.string().nullable().describe('The run it started (or, a duplicate, started before)'),
  reason: z.string().nullable().describe('Why no run started: the answer’s message'),
  createdAt: z.string(),
});
export type TriggerDelivery = z.infer<typeof TriggerDelivery>;

/** One entry as the delivery's handling sees it. */
export type DeliveryEntry = Pick<TriggerDeliveryRow, 'deliveryId' | 'event' | 'outcome' | 'status' | 'runId' | 'reason'>;

const cut = (text: string | null, chars: number) => (text === null ? null : text.slice(0, chars));

const present = (row: TriggerDeliveryRow): TriggerDelivery => ({
  id: formatId('tdl', row.id),
  deliveryId: row.deliveryId,
  event: row.event,
  outcome: row.outcome,
  status: row.status,
  runId: row.runId,
  reason: row.reason,
  createdAt: toIso(row.createdAt),
});

/**
 * Records a delivery to `trigger`, and drops its entries beyond the last TRIGGER_DELIVERIES_KEPT.
 * A failure is logged, not thrown: the sender's answer stands without its entry.
 */
export async function recordDelivery(db: ShardDb, trigger: WorkflowTriggerRow, entry: DeliveryEntry): Promise<void> {
  const oldestKept = sql`(SELECT id FROM ${triggerDeliveries} WHERE ${triggerDeliveries.triggerId} = ${trigger.id} ORDER BY id DESC LIMIT 1 OFFSET ${TRIGGER_DELIVERIES_KEPT - 1})`;
  try {
    await db.batch([
      db.insert(triggerDeliveries).values({
        ...entry,
        workspaceId: trigger.workspaceId,
        triggerId: trigger.id,
        deliveryId: cut(entry.deliveryId, NAME_CHARS),
        event: cut(entry.event, NAME_CHARS),
        reason: cut(entry.reason, REASON_CHARS),
        createdAt: now(),
      }),
      db.delete(triggerDeliveries).where(and(eq(triggerDeliveries.triggerId, trigger.id), lt(triggerDeliveries.id, oldestKept))),
    ]);
  } catch (error) {
    console.error(JSON.stringify({ level: 'error', triggerId: trigger.id, error: `trigger delivery not recorded: ${String(error)}` }));
  }
}

/** Whether the trigger's log shows a run started for this delivery id: a delivery naming it again is a duplicate. */
export async function startedBefore(db: ShardDb, triggerId: string, deliveryId: string): Promise<boolean> {
  const [seen] = await db
    .select({ id: triggerDeliveries.id })
    .from(triggerDeliveries)
    .where(
      and(
        eq(triggerDeliveries.triggerId, triggerId),
        eq(triggerDeliveries.deliveryId, deliveryId.slice(0, NAME_CHARS)),
        inArray(triggerDeliveries.outcome, ['started', 'duplicate']),
      ),
    )
    .limit(1);
  return seen !== undefined;
}

/** A trigger's log, newest first; another workspace's trigger is 404. */
export async function listTriggerDeliveries(db: ShardDb, principal: Principal, slug: string, triggerId: string, query: CursorQuery) {
  const trigger = await requireTrigger(db, principal, slug, triggerId);
  const page = await cursorPage(
    query,
    byIntegerId(triggerDeliveries.id, (where, orderBy, limit) => db.select().from(triggerDeliveries).where(where).orderBy(orderBy).limit(limit), 'tdl'),
    and(eq(triggerDeliveries.workspaceId, principal.workspaceId), eq(triggerDeliveries.triggerId, trigger.id)),
  );
  return mapPage(page, present);
}
