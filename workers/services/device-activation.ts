import { and, eq, isNull, lte, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import { apiKeys, deviceActivations, type DeviceActivationRow, workspaces } from '../../schema';
import { credentialHash, newApiKey } from '../auth/credentials';
import type { Principal, RequestOrigin } from '../auth/principal';
import { DEFAULT_KEY_SCOPES } from '../auth/scopes';
import type { GlobalDb } from '../env';
import { AppError, conflict, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { randomToken, sha256Hex } from '../lib/crypto';
import { isConstraintFailure } from '../lib/db-errors';
import { formatId } from '../lib/ids';
import { normalizeUserCode, userCodeHash } from '../lib/user-codes';
import { recordChange, type ChangeActor } from './audit';
import { decideOnce, withFreshCode } from './pending-decisions';

/** Spec 5.2 and 8: a device code lives 600 seconds and is polled every 2 seconds. */
export const DEVICE_CODE_TTL_SECONDS = 600;
export const DEVICE_POLL_INTERVAL_SECONDS = 2;
/** RFC 8628 section 3.5: every `slow_down` adds 5 seconds to the interval. */
export const SLOW_DOWN_STEP_SECONDS = 5;
/** How long a finished activation is kept, for the answers of late polls. */
const ACTIVATION_RETENTION_MS = 24 * 3600_000;

export const StartActivationBody = z.object({ client_label: z.string().trim().min(1).max(100) });
export type StartActivationBody = z.infer<typeof StartActivationBody>;

export const PollActivationBody = z.object({ device_code: z.string().min(1).max(200) });
export type PollActivationBody = z.infer<typeof PollActivationBody>;

export const UserCodeBody = z.object({ user_code: z.string().min(1).max(32) });
export type UserCodeBody = z.infer<typeof UserCodeBody>;

export const StartedActivation = z.object({
  device_code: z.string(),
  user_code: z.string(),
  verification_url: z.string(),
  verification_url_complete: z.string(),
  expires_in: z.number(),
  interval: z.number(),
});
export type StartedActivation = z.infer<typeof StartedActivation>;

export const ActivationPoll = z.discriminatedUnion('status', [
  z.object({ status: z.literal('pending'), interval: z.number() }),
  z.object({ status: z.literal('slow_down'), interval: z.number() }),
  z.object({ status: z.literal('denied') }),
  z.object({ status: z.literal('expired') }),
  z.object({
    status: z.literal('approved'),
    api_key: z.string(),
    api_key_id: z.string(),
    workspace_id: z.string(),
    scopes: z.array(z.string()),
  }),
]);
export type ActivationPoll = z.infer<typeof ActivationPoll>;

export const ActivationRecord = z.object({
  user_code: z.string(),
  client_label: z.string(),
  status: z.enum(['pending', 'approved', 'denied']),
  scopes: z.array(z.string()),
  workspace: z.object({ id: z.string(), name: z.string() }),
  created_at: z.string(),
  expires_at: z.string(),
});
export type ActivationRecord = z.infer<typeof ActivationRecord>;

const deviceCodeHash = (code: string) => sha256Hex(`device-code:${code}`);

/** `POST /activate` (no credential): starts a device authorization (RFC 8628 section 3.2). */
export async function startActivation(db: GlobalDb, input: StartActivationBody, baseUrl: string): Promise<StartedActivation> {
  const deviceCode = `dc_${randomToken(32)}`;
  const t = now();
  const hash = await deviceCodeHash(deviceCode);
  const { code: userCode } = await withFreshCode((codeHash) =>
    db.insert(deviceActivations).values({
      deviceCodeHash: hash,
      userCodeHash: codeHash,
      clientLabel: input.client_label,
      status: 'pending',
      intervalSeconds: DEVICE_POLL_INTERVAL_SECONDS,
      createdAt: t,
      expiresAt: t + DEVICE_CODE_TTL_SECONDS * 1000,
    }),
  );
  return {
    device_code: deviceCode,
    user_code: userCode,
    verification_url: `${baseUrl}/activate`,
    verification_url_complete: `${baseUrl}/activate?user_code=${userCode}`,
    expires_in: DEVICE_CODE_TTL_SECONDS,
    interval: DEVICE_POLL_INTERVAL_SECONDS,
  };
}

/**
 * The approved activation's key, minted as it is collected: the key exists in clear only in
 * this one answer, never at rest. The batch first marks the activation delivered, then inserts
 * the key with owner and workspace read back from the row *as delivered by this statement*; if
 * a racing poll delivered it first, those read NULL, the NOT NULL constraint fails and nothing
 * is written, so the key goes out exactly once.
 */
async function deliverKey(db: GlobalDb, row: DeviceActivationRow, origin: RequestOrigin): Promise<ActivationPoll | undefined> {
  const t = now();
  const { key, preview } = newApiKey();
  const keyHash = await credentialHash(key);
  const mine = (column: typeof deviceActivations.userId | typeof deviceActivations.workspaceId) =>
    sql`(SELECT ${column} FROM ${deviceActivations} WHERE ${deviceActivations.id} = ${row.id} AND ${deviceActivations.status} = 'delivered' AND ${deviceActivations.deliveredAt} = ${t})`;
  const keyId = sql`(SELECT ${apiKeys.id} FROM ${apiKeys} WHERE ${apiKeys.keyHash} = ${keyHash})`;
  // The confirming person is the actor: they approved the key; the poll only collected it.
  const actor: ChangeActor = { userId: row.userId!, workspaceId: row.workspaceId!, credential: { type: 'session', sessionId: 'device-flow' }, origin };
  try {
    await db.batch([
      db
        .update(deviceActivations)
        .set({ status: 'delivered', deliveredAt: t })
        .where(and(eq(deviceActivations.id, row.id), eq(deviceActivations.status, 'approved'))),
      db.insert(apiKeys).values({
        userId: mine(deviceActivations.userId),
        workspaceId: mine(deviceActivations.workspaceId),
        name: row.clientLabel,
        keyHash,
        keyPreview: preview,
        scopes: DEFAULT_KEY_SCOPES,
        status: 'active',
        createdAt: t,
      }),
      db.update(deviceActivations).set({ apiKeyId: keyId }).where(eq(deviceActivations.id, row.id)),
      ...recordChange(db, actor, {
        action: 'api_key.created',
        resourceType: 'api_key',
        resourceId: sql`(SELECT 'key_' || ${apiKeys.id} FROM ${apiKeys} WHERE ${apiKeys.keyHash} = ${keyHash})`,
        metadata: { name: row.clientLabel, scopes: DEFAULT_KEY_SCOPES, via: 'device_flow' },
        activity: `API key "${row.clientLabel}" was created through device activation`,
      }),
    ]);
  } catch (error) {
    if (isConstraintFailure(error, 'NOT NULL')) return undefined;
    throw error;
  }
  const [created] = await db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.keyHash, keyHash));
  return {
    status: 'approved',
    api_key: key,
    api_key_id: formatId('key', created!.id),
    workspace_id: row.workspaceId!,
    scopes: DEFAULT_KEY_SCOPES,
  };
}

const alreadyDelivered = () => conflict('This device code was already used: its key was delivered once and is not shown again', { status: 'delivered' });

/**
 * `POST /activate/poll` (RFC 8628 section 3.4-3.5, as statuses): `pending`, `slow_down` (polled
 * sooner than `interval` after the previous poll; the interval grows by 5 s), `denied`,
 * `expired`, and `approved` with the key, once. A spent device code is 409 `CONFLICT`.
 */
export async function pollActivation(db: GlobalDb, input: PollActivationBody, origin: RequestOrigin): Promise<ActivationPoll> {
  const hash = await deviceCodeHash(input.device_code);
  const [row] = await db.select().from(deviceActivations).where(eq(deviceActivations.deviceCodeHash, hash)).limit(1);
  if (!row) throw notFound('Device code');
  if (row.status === 'delivered') throw alreadyDelivered();
  const t = now();
  if (row.expiresAt <= t) return { status: 'expired' };
  if (row.status === 'denied') return { status: 'denied' };

  // One conditional UPDATE takes the poll slot, so concurrent polls cannot both pass.
  const [slot] = await db
    .update(deviceActivations)
    .set({ lastPolledAt: t })
    .where(
      and(
        eq(deviceActivations.id, row.id),
        or(isNull(deviceActivations.lastPolledAt), lte(sql`${deviceActivations.lastPolledAt} + ${deviceActivations.intervalSeconds} * 1000`, t)),
      ),
    )
    .returning();
  if (!slot) {
    const [slowed] = await db
      .update(deviceActivations)
      .set({ lastPolledAt: t, intervalSeconds: sql`${deviceActivations.intervalSeconds} + ${SLOW_DOWN_STEP_SECONDS}` })
      .where(eq(deviceActivations.id, row.id))
      .returning({ interval: deviceActivations.intervalSeconds });
    return { status: 'slow_down', interval: slowed!.interval };
  }
  if (slot.status === 'pending') return { status: 'pending', interval: slot.intervalSeconds };
  if (slot.status === 'denied') return { status: 'denied' };
  if (slot.status === 'approved') {
    const delivered = await deliverKey(db, slot, origin);
    if (delivered) return delivered;
  }
  throw alreadyDelivered();
}

/** A pending, unexpired activation by user code; 404 unknown, 410 expired, 409 already used. */
async function pendingByUserCode(db: GlobalDb, rawCode: string): Promise<DeviceActivationRow> {
  const code = normalizeUserCode(rawCode);
  const [row] =
    code === null
      ? []
      : await db
          .select()
          .from(deviceActivations)
          .where(eq(deviceActivations.userCodeHash, await userCodeHash(code)))
          .limit(1);
  if (!row) throw notFound('User code');
  if (row.status !== 'pending') throw conflict('This code was already used', { status: row.status === 'delivered' ? 'approved' : row.status });
  if (row.expiresAt <= now()) throw new AppError('EXPIRED', 410, 'This code has expired: start the activation again');
  return row;
}

const formatUserCode = (raw: string) => {
  const code = normalizeUserCode(raw)!;
  return `${code.slice(0, 4)}-${code.slice(4)}`;
};

async function currentWorkspace(db: GlobalDb, principal: Principal) {
  const [ws] = await db.select({ id: workspaces.id, name: workspaces.name }).from(workspaces).where(eq(workspaces.id, principal.workspaceId));
  return ws!;
}

const present = (
  row: DeviceActivationRow,
  userCode: string,
  workspace: { id: string; name: string },
  status: ActivationRecord['status'],
): ActivationRecord => ({
  user_code: formatUserCode(userCode),
  client_label: row.clientLabel,
  status,
  scopes: DEFAULT_KEY_SCOPES,
  workspace,
  created_at: toIso(row.createdAt),
  expires_at: toIso(row.expiresAt),
});

/** `GET /activate/lookup`: what the person is about to approve, and in which workspace. */
export async function lookupActivation(db: GlobalDb, principal: Principal, userCode: string): Promise<ActivationRecord> {
  const row = await pendingByUserCode(db, userCode);
  return present(row, userCode, await currentWorkspace(db, principal), 'pending');
}

/**
 * Confirm or deny by user code, once (the code is single use). A racing decision that won is
 * reported as for a used code.
 */
async function decide(db: GlobalDb, principal: Principal, userCode: string, approve: boolean): Promise<ActivationRecord> {
  const row = await pendingByUserCode(db, userCode);
  const status = approve ? ('approved' as const) : ('denied' as const);
  await decideOnce(db, {
    table: deviceActivations,
    id: row.id,
    what: 'activation',
    status,
    t: now(),
    set: approve ? { userId: principal.userId, workspaceId: principal.workspaceId } : {},
    audit: (resourceId) =>
      recordChange(db, principal, {
        action: approve ? 'device_activation.approved' : 'device_activation.denied',
        resourceType: 'device_activation',
        resourceId,
        metadata: { clientLabel: row.clientLabel },
        activity: approve ? `"${row.clientLabel}" was approved for an API key` : undefined,
      }),
    lost: async () => {
      await pendingByUserCode(db, userCode);
      throw conflict('This code was already used');
    },
  });
  return present(row, userCode, await currentWorkspace(db, principal), status);
}

/** `POST /activate/confirm`: binds the person and their current workspace to the key to be minted. */
/**
 * Hourly housekeeping: activations a day past their expiry go. Until then a late poll still
 * reads `expired` (or 409 for a delivered key) rather than 404.
 */
export async function deleteExpiredActivations(db: GlobalDb): Promise<void> {
  await db.delete(deviceActivations).where(lte(deviceActivations.expiresAt, now() - ACTIVATION_RETENTION_MS));
}

export const confirmActivation = (db: GlobalDb, principal: Principal, userCode: string) => decide(db, principal, userCode, true);

export const denyActivation = (db: GlobalDb, principal: Principal, userCode: string) => decide(db, principal, userCode, false);
