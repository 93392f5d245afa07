import type { BatchItem } from 'drizzle-orm/batch';
import { and, asc, eq, gte, inArray, isNull, lte, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { activityLog, auditLog, changeOutbox, workspaceShards, type ActivityRow, type AuditRow } from '../../schema';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { isShardDb, shardDbOf } from '../lib/db';
import { now, toIso } from '../lib/clock';
import { batchOnce } from './run-tool-calls';
import { formatId } from '../lib/ids';
import { byIntegerId, CursorQuery, cursorPage, mapPage } from '../lib/pagination';

/** Who made a change: the principal, or the person a flow acts for (sign-up, the device flow). */
export type ChangeActor = Pick<Principal, 'userId' | 'workspaceId' | 'credential' | 'origin'>;

/** A mutation to record. `activity` adds a line to the workspace change log as well. */
export interface Change {
  action: string;
  resourceType: string;
  /** SQL when the resource is inserted in the same batch and its id is not known yet. */
  resourceId: string | SQL;
  metadata?: Record<string, unknown>;
  activity?: string;
}

/**
 * The inserts that record a change; callers put them in the same D1 batch as the change
 * itself, so a mutation and its record land together or not at all. A change in the global
 * database is recorded in its outbox, from which `deliverChanges` moves it to the shard.
 */
export function recordChange(db: ShardDb | GlobalDb, principal: ChangeActor, change: Change): BatchItem<'sqlite'>[] {
  const actor = { actorUserId: principal.userId, actorApiKeyId: apiKeyIdOf(principal) };
  const at = now();
  const base = { workspaceId: principal.workspaceId, resourceType: change.resourceType, resourceId: change.resourceId };
  const audit = {
    ...base,
    ...actor,
    action: change.action,
    ip: principal.origin.ip,
    userAgent: principal.origin.userAgent,
    requestId: principal.origin.requestId,
    metadata: change.metadata ?? {},
    createdAt: at,
  };
  if (!isShardDb(db)) return [db.insert(changeOutbox).values({ ...audit, activity: change.activity ?? null })];
  const recorded = db.insert(auditLog).values(audit);
  if (change.activity === undefined) return [recorded];
  return [recorded, db.insert(activityLog).values({ ...base, ...actor, type: change.action, summary: change.activity, createdAt: at })];
}

/** Outbox records moved per batch. */
const DELIVERY_BATCH = 50;

/**
 * Moves a workspace's recorded global changes from the outbox to its shard, under their outbox
 * ids (so a delivery cut off and made again inserts nothing twice), then deletes them there.
 */
export async function deliverChanges(globalDb: GlobalDb, db: ShardDb, workspaceId: string): Promise<void> {
  for (;;) {
    const rows = await globalDb
      .select()
      .from(changeOutbox)
      .where(eq(changeOutbox.workspaceId, workspaceId))
      .orderBy(asc(changeOutbox.id))
      .limit(DELIVERY_BATCH);
    if (rows.length === 0) return;
    const copies = rows.flatMap(({ activity, ...row }): BatchItem<'sqlite'>[] => {
      const actor = { actorUserId: row.actorUserId, actorApiKeyId: row.actorApiKeyId };
      const audit = db.insert(auditLog).values(row).onConflictDoNothing();
      if (activity === null) return [audit];
      const line = {
        id: row.id,
        workspaceId,
        ...actor,
        type: row.action,
        summary: activity,
        resourceType: row.resourceType,
        resourceId: row.resourceId,
        createdAt: row.createdAt,
      };
      return [audit, db.insert(activityLog).values(line).onConflictDoNothing()];
    });
    await db.batch(copies as [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]]);
    await globalDb.delete(changeOutbox).where(
      inArray(
        changeOutbox.id,
        rows.map((row) => row.id),
      ),
    );
    if (rows.length < DELIVERY_BATCH) return;
  }
}

/**
 * Records a change whose work was done where no D1 batch reaches (a Durable Object, Stripe,
 * GitHub): in a batch of its own, once that work succeeded. For a run's tool call
 * (`toolCallKey`, kept on the shard), once however often the call is made.
 */
export async function recordChangeAfter(db: ShardDb | GlobalDb, principal: Principal, change: Change, toolCallKey?: string): Promise<void> {
  const [audit, ...activity] = recordChange(db, principal, change);
  await (isShardDb(db) ? batchOnce(db, [audit!, ...activity], toolCallKey) : db.batch([audit!, ...activity]));
}

/** Workspaces one housekeeping sweep delivers the outbox of, at most. */
const SWEEP_WORKSPACES = 200;

/** The hourly sweep: every workspace's recorded global changes delivered to its shard. */
export async function deliverAllChanges(globalDb: GlobalDb, env: Env): Promise<void> {
  const pending = await globalDb
    .selectDistinct({ workspaceId: changeOutbox.workspaceId, shard: workspaceShards.shard })
    .from(changeOutbox)
    .innerJoin(workspaceShards, eq(workspaceShards.workspaceId, changeOutbox.workspaceId))
    // A workspace a move fences is delivered once it is on its new shard.
    .where(isNull(workspaceShards.movingTo))
    .limit(SWEEP_WORKSPACES);
  for (const { workspaceId, shard } of pending) await deliverChanges(globalDb, shardDbOf(env, shard), workspaceId);
}

const Actor = z.object({
  type: z.enum(['user', 'api_key']),
  userId: z.string(),
  apiKeyId: z.string().nullable(),
});

export const AuditEntry = z.object({
  id: z.number().int(),
  action: z.string(),
  resourceType: z.string(),
  resourceId: z.string(),
  actor: Actor,
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
  requestId: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

export const ActivityEntry = z.object({
  id: z.number().int(),
  type: z.string(),
  summary: z.string(),
  resourceType: z.string(),
  resourceId: z.string(),
  actor: Actor,
  createdAt: z.string(),
});
export type ActivityEntry = z.infer<typeof ActivityEntry>;

const presentActor = (row: { actorUserId: string; actorApiKeyId: number | null }) => ({
  type: row.actorApiKeyId === null ? ('user' as const) : ('api_key' as const),
  userId: row.actorUserId,
  apiKeyId: row.actorApiKeyId === null ? null : formatId('key', row.actorApiKeyId),
});

const presentAudit = (row: AuditRow): AuditEntry => ({
  id: row.id,
  action: row.action,
  resourceType: row.resourceType,
  resourceId: row.resourceId,
  actor: presentActor(row),
  ip: row.ip,
  userAgent: row.userAgent,
  requestId: row.requestId,
  metadata: row.metadata,
  createdAt: toIso(row.createdAt),
});

const presentActivity = (row: ActivityRow): ActivityEntry => ({
  id: row.id,
  type: row.type,
  summary: row.summary,
  resourceType: row.resourceType,
  resourceId: row.resourceId,
  actor: presentActor(row),
  createdAt: toIso(row.createdAt),
});

export const AuditQuery = CursorQuery.extend({
  action: z.string().min(1).max(100).optional(),
  resource_type: z.string().min(1).max(100).optional(),
  start_date: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
  end_date: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
});
export type AuditQuery = z.infer<typeof AuditQuery>;

/** A bare date as an end bound means the whole of that day. */
const dateBound = (value: string, end: boolean): number =>
  /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) + (end ? 86_400_000 - 1 : 0) : Date.parse(value);

export async function listAuditLogs(db: ShardDb, globalDb: GlobalDb, principal: Principal, query: AuditQuery) {
  await deliverChanges(globalDb, db, principal.workspaceId);
  const where = and(
    eq(auditLog.workspaceId, principal.workspaceId),
    query.action === undefined ? undefined : eq(auditLog.action, query.action),
    query.resource_type === undefined ? undefined : eq(auditLog.resourceType, query.resource_type),
    query.start_date === undefined ? undefined : gte(auditLog.createdAt, dateBound(query.start_date, false)),
    query.end_date === undefined ? undefined : lte(auditLog.createdAt, dateBound(query.end_date, true)),
  );
  const page = await cursorPage(
    query,
    byIntegerId(auditLog.id, (w, orderBy, limit) => db.select().from(auditLog).where(w).orderBy(orderBy).limit(limit)),
    where,
  );
  return mapPage(page, presentAudit);
}

export const ActivityQuery = CursorQuery.extend({
  type: z.string().min(1).max(100).optional(),
});
export type ActivityQuery = z.infer<typeof ActivityQuery>;

export async function listActivity(db: ShardDb, globalDb: GlobalDb, principal: Principal, query: ActivityQuery) {
  await deliverChanges(globalDb, db, principal.workspaceId);
  const where = and(eq(activityLog.workspaceId, principal.workspaceId), query.type === undefined ? undefined : eq(activityLog.type, query.type));
  const page = await cursorPage(
    query,
    byIntegerId(activityLog.id, (w, orderBy, limit) => db.select().from(activityLog).where(w).orderBy(orderBy).limit(limit)),
    where,
  );
  return mapPage(page, presentActivity);
}
