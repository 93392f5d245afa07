import { eq, exists, getTableColumns, sql } from 'drizzle-orm';
import { z } from 'zod';
import { BYOK_PROVIDERS, byokKeys, type ByokKeyRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { GlobalDb } from '../env';
import { AppError, invalidInput } from '../errors';
import { now } from '../lib/clock';
import { isConstraintFailure } from '../lib/db-errors';
import { decryptSecret, encryptSecret } from '../lib/encryption';
import { headerToken } from '../lib/outbound';
import { recordChange } from './audit';

/** Provider keys are long single tokens. */
export const PutByokBody = z.object({ key: headerToken(20, 512) });
export type PutByokBody = z.infer<typeof PutByokBody>;

export const ByokStatus = z.object({ hasKey: z.boolean(), keyPreview: z.string().nullable(), provider: z.enum(BYOK_PROVIDERS).nullable() });
export type ByokStatus = z.infer<typeof ByokStatus>;

const NO_KEY: ByokStatus = { hasKey: false, keyPreview: null, provider: null };

/** Spec 4.9 rule 6: `sk-ant-` is tested first (it also starts with `sk-`). */
export function byokProvider(key: string): ByokKeyRow['provider'] | null {
  if (key.startsWith('sk-ant-')) return 'anthropic';
  if (key.startsWith('sk-')) return 'openai';
  return null;
}

/** The provider's own prefix and the last four characters: enough to recognise a key, too little to use it. */
const preview = (key: string, provider: ByokKeyRow['provider']) => `${provider === 'anthropic' ? 'sk-ant-' : 'sk-'}…${key.slice(-4)}`;

/** The GCM additional data: a ciphertext copied to another user's row does not decrypt. */
const byokContext = (userId: string) => `byok:${userId}`;

export async function getByok(db: GlobalDb, principal: Principal): Promise<ByokStatus> {
  const [row] = await db.select().from(byokKeys).where(eq(byokKeys.userId, principal.userId)).limit(1);
  return row ? { hasKey: true, keyPreview: row.keyPreview, provider: row.provider } : NO_KEY;
}

/** Stores (or replaces) the caller's key, encrypted; the tier becomes `byokmode` unless a subscription or licence outranks it. */
export async function putByok(db: GlobalDb, principal: Principal, encryptionKey: string | undefined, input: PutByokBody): Promise<ByokStatus> {
  const provider = byokProvider(input.key);
  if (!provider) throw invalidInput('key', 'prefix', 'The key must start with sk-ant- (Anthropic) or sk- (OpenAI-compatible)');
  const ciphertext = await encryptSecret(encryptionKey, byokContext(principal.userId), input.key);
  const keyPreview = preview(input.key, provider);
  const t = now();
  try {
    await db.batch([
      db
        .insert(byokKeys)
        .values({ userId: principal.userId, provider, ciphertext, keyPreview, createdAt: t, updatedAt: t })
        .onConflictDoUpdate({ target: byokKeys.userId, set: { provider, ciphertext, keyPreview, updatedAt: t } }),
      ...recordChange(db, principal, {
        action: 'byok.set',
        resourceType: 'byok',
        resourceId: principal.userId,
        metadata: { provider, keyPreview },
        activity: `A ${provider} key (${keyPreview}) now pays for this user's runs`,
      }),
    ]);
  } catch (error) {
    // Spec 4.9 rule 7: the user record is gone (deleted while its credential was in flight).
    if (isConstraintFailure(error, 'FOREIGN KEY')) throw new AppError('NOT_FOUND', 404, 'User not found');
    throw error;
  }
  return { hasKey: true, keyPreview, provider };
}

/** Removes the caller's key (a no-op without one, which records nothing); the tier reverts. */
export async function deleteByok(db: GlobalDb, principal: Principal): Promise<Pick<ByokStatus, 'hasKey' | 'keyPreview'>> {
  if (await hasByokKey(db, principal.userId)) {
    await db.batch([
      db.delete(byokKeys).where(eq(byokKeys.userId, principal.userId)),
      ...recordChange(db, principal, {
        action: 'byok.deleted',
        resourceType: 'byok',
        resourceId: principal.userId,
        activity: "This user's own model key was removed",
      }),
    ]);
  }
  return { hasKey: false, keyPreview: null };
}

/** Whether the user has a key, as a condition of another statement (the credit hold a run on it needs none of). */
export const byokKeyExists = (db: GlobalDb, userId: string) => exists(db.select({ userId: byokKeys.userId }).from(byokKeys).where(eq(byokKeys.userId, userId)));

/** The key that pays for a user's runs as stored (encrypted): none or one row. */
export const sealedByokKey = (db: GlobalDb, userId: string) => db.select().from(byokKeys).where(eq(byokKeys.userId, userId)).limit(1);

/**
 * The same row as one JSON value (or NULL), for another statement to answer beside its own
 * (a run's credit hold answers the key that waived it): `byokKeyFromJson` reads it back.
 */
export const sealedByokKeyJson = (userId: string) =>
  sql<string | null>`(SELECT json_object(${sql.join(
    Object.entries(getTableColumns(byokKeys)).map(([name, column]) => sql`${name}, ${column}`),
    sql`, `,
  )}) FROM ${byokKeys} WHERE ${eq(byokKeys.userId, userId)})`;

export const byokKeyFromJson = (json: string | null): ByokKeyRow | null => (json === null ? null : (JSON.parse(json) as ByokKeyRow));

/** A user's own key, opened: replaces the service's key for the model calls of their runs. */
export interface ByokKey {
  provider: ByokKeyRow['provider'];
  apiKey: string;
}

/**
 * The key for the runtime, or null. A key that no longer decrypts (ENCRYPTION_KEY rotated) is
 * treated as absent, so runs fall back to the service's provider.
 */
export async function openByokKey(encryptionKey: string | undefined, row: typeof byokKeys.$inferSelect | null): Promise<ByokKey | null> {
  if (!row) return null;
  const apiKey = await decryptSecret(encryptionKey, byokContext(row.userId), row.ciphertext);
  return apiKey === null ? null : { provider: row.provider, apiKey };
}

/** Whether the user's runs ride on their own key (they cost 0 Ds and need no credits held). */
export async function hasByokKey(db: GlobalDb, userId: string): Promise<boolean> {
  const [row] = await db.select({ userId: byokKeys.userId }).from(byokKeys).where(eq(byokKeys.userId, userId)).limit(1);
  return row !== undefined;
}
