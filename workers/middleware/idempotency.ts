import { and, eq, lt } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { idempotencyRecords } from '../../schema';
import type { AppEnv, ShardDb } from '../env';
import { AppError, conflict, invalidInput } from '../errors';
import { decryptSecret, encryptSecret } from '../lib/encryption';
import { now } from '../lib/clock';
import { hmacSha256Hex } from '../lib/crypto';
import { principalOf } from '../auth/principal';

/** Spec 8: idempotency keys live 24 hours, per workspace. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Responses a retry should see again. 5xx and 429 are transient: the key is released instead. */
const isReplayable = (status: number) => status < 500 && status !== 429;

/**
 * For POSTs that honour `idempotency-key` (spec 8). The first request claims the key with a
 * pending row (an atomic insert, so two racing requests cannot both run); its response is
 * stored and replayed to later requests with `idempotency-replayed: true`. The same key from
 * another caller, or with a different method, path or body, is 409 CONFLICT, as is a retry
 * while the first is in flight.
 */
export const idempotent = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return next();
  if (!KEY_PATTERN.test(key)) {
    throw invalidInput('idempotency-key', 'format', 'idempotency-key must be 1..255 printable ASCII characters');
  }
  const principal = principalOf(c);
  const { workspaceId } = principal;
  const db = c.var.db;
  // The caller is part of the fingerprint: a replay returns what that request created (a new
  // API key, say), so another credential reusing the key must get a conflict, never the answer.
  const caller = principal.credential.type === 'api_key' ? `key:${principal.credential.apiKeyId}` : `user:${principal.userId}`;
  // Keyed, because bodies can hold secrets (POST /secrets): a plain hash of a weak value could be guessed back.
  const requestHash = await hmacSha256Hex(c.env.SIGNING_SECRET, `${caller} ${c.req.method} ${c.req.path}\n${await c.req.text()}`);
  const record = and(eq(idempotencyRecords.workspaceId, workspaceId), eq(idempotencyRecords.key, key));

  const claimed = await claim(db, workspaceId, key, requestHash);
  if (!claimed) {
    const [existing] = await db.select().from(idempotencyRecords).where(record).limit(1);
    if (!existing || existing.requestHash !== requestHash) {
      throw conflict('This idempotency-key was used with a different request', { field: 'idempotency-key' });
    }
    if (existing.status === null) {
      throw conflict('A request with this idempotency-key is still in progress', { field: 'idempotency-key' });
    }
    c.header('content-type', existing.contentType ?? 'application/json');
    c.header('idempotency-replayed', 'true');
    const body = await openBody(c.env.ENCRYPTION_KEY, replayContext(workspaceId, key), existing.body ?? '');
    return c.body(body, existing.status as ContentfulStatusCode);
  }

  await next();
  if (isReplayable(c.res.status)) {
    const body = await sealBody(c.env.ENCRYPTION_KEY, replayContext(workspaceId, key), await c.res.clone().text());
    await db
      .update(idempotencyRecords)
      .set({ status: c.res.status, body, contentType: c.res.headers.get('content-type') })
      .where(record);
  } else {
    await db.delete(idempotencyRecords).where(record);
  }
});

/**
 * Stored answers can hold secrets shown once (a new API key), so they are kept encrypted under
 * ENCRYPTION_KEY, bound to the workspace and idempotency key. Without a usable key they are
 * kept as they are, as the README says.
 */
const SEALED = 'enc:';
const replayContext = (workspaceId: string, key: string) => `idempotency:${workspaceId}:${key}`;

async function sealBody(encryptionKey: string | undefined, context: string, body: string): Promise<string> {
  try {
    return SEALED + (await encryptSecret(encryptionKey, context, body));
  } catch (error) {
    if (error instanceof AppError && error.code === 'SERVICE_UNAVAILABLE') return body;
    throw error;
  }
}

async function openBody(encryptionKey: string | undefined, context: string, stored: string): Promise<string> {
  if (!stored.startsWith(SEALED)) return stored;
  const body = await decryptSecret(encryptionKey, context, stored.slice(SEALED.length));
  if (body === null) throw new Error('A stored idempotent answer does not decrypt under ENCRYPTION_KEY');
  return body;
}

/** Inserts the pending row, taking over a record older than the TTL. True if this request owns the key. */
async function claim(db: ShardDb, workspaceId: string, key: string, requestHash: string): Promise<boolean> {
  const t = now();
  const rows = await db
    .insert(idempotencyRecords)
    .values({ workspaceId, key, requestHash, status: null, body: null, contentType: null, createdAt: t })
    .onConflictDoUpdate({
      target: [idempotencyRecords.workspaceId, idempotencyRecords.key],
      set: { requestHash, status: null, body: null, contentType: null, createdAt: t },
      setWhere: lt(idempotencyRecords.createdAt, t - IDEMPOTENCY_TTL_MS),
    })
    .returning({ key: idempotencyRecords.key });
  return rows.length > 0;
}

/** Housekeeping: forget keys past their lifetime. */
export const deleteExpiredIdempotencyRecords = (db: ShardDb) =>
  db.delete(idempotencyRecords).where(lt(idempotencyRecords.createdAt, now() - IDEMPOTENCY_TTL_MS));
