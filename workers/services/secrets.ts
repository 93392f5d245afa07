import { eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { secrets, type SecretRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { AppError } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUniqueViolation } from '../lib/db-errors';
import { decryptSecret, encryptSecret } from '../lib/encryption';
import { formatId } from '../lib/ids';
import { byIntegerId, type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { recordChange } from './audit';
import { requireOwned } from './tenant';

/** Environment-variable shaped: how a run will receive it. */
export const EnvVarName = z.string().regex(/^[A-Z_][A-Z0-9_]{0,127}$/, 'upper-case letters, digits and underscores, not starting with a digit');
const SecretValue = z.string().min(1).max(65_536);

export const CreateSecretBody = z.object({ name: EnvVarName, value: SecretValue });
export type CreateSecretBody = z.infer<typeof CreateSecretBody>;

export const PatchSecretBody = z
  .object({ name: EnvVarName.optional(), value: SecretValue.optional() })
  .refine((b) => b.name !== undefined || b.value !== undefined, { message: 'send name, value or both', path: [] });
export type PatchSecretBody = z.infer<typeof PatchSecretBody>;

/** Never carries the value: it is write-only (spec 2.9). */
export const SecretRecord = z.object({ id: z.string(), name: z.string(), createdAt: z.string(), updatedAt: z.string() });
export type SecretRecord = z.infer<typeof SecretRecord>;

const presentSecret = (row: SecretRow): SecretRecord => ({
  id: formatId('sec', row.id),
  name: row.name,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
});

/**
 * The GCM additional data of a secret: its workspace and its name (unique in the workspace), so
 * a ciphertext copied to another row does not decrypt. A rename re-encrypts under the new name.
 */
export const secretContext = (workspaceId: string, name: string) => `secret:${workspaceId}:${name}`;

/**
 * The value of a stored secret, for the runtime to hand to a run. Throws 503 without a usable
 * ENCRYPTION_KEY; a ciphertext that does not decrypt under its row is a server fault (500).
 */
export async function revealSecret(encryptionKey: string | undefined, row: SecretRow): Promise<string> {
  const value = await decryptSecret(encryptionKey, secretContext(row.workspaceId, row.name), row.ciphertext);
  if (value === null) throw new Error(`Secret ${formatId('sec', row.id)} does not decrypt under its workspace and name`);
  return value;
}

const duplicateName = (name: string) => new AppError('ALREADY_EXISTS', 409, `A secret named ${name} already exists`, { field: 'name' });

/** A secret of the caller's workspace, or 404 (another workspace's id included). */
export const requireSecret = (db: ShardDb, principal: Principal, rawId: string | number): Promise<SecretRow> =>
  requireOwned(db, secrets, principal, 'sec', String(rawId), 'Secret');

export async function listSecrets(db: ShardDb, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    byIntegerId(secrets.id, (where, orderBy, limit) => db.select().from(secrets).where(where).orderBy(orderBy).limit(limit), 'sec'),
    eq(secrets.workspaceId, principal.workspaceId),
  );
  return mapPage(page, presentSecret);
}

export async function createSecret(db: ShardDb, principal: Principal, encryptionKey: string | undefined, input: CreateSecretBody) {
  const ciphertext = await encryptSecret(encryptionKey, secretContext(principal.workspaceId, input.name), input.value);
  const t = now();
  try {
    const [[row]] = await db.batch([
      db
        .insert(secrets)
        .values({ workspaceId: principal.workspaceId, name: input.name, ciphertext, createdBy: principal.userId, createdAt: t, updatedAt: t })
        .returning(),
      ...recordChange(db, principal, {
        action: 'secret.created',
        resourceType: 'secret',
        resourceId: sql`(SELECT 'sec_' || ${secrets.id} FROM ${secrets} WHERE ${secrets.workspaceId} = ${principal.workspaceId} AND ${secrets.name} = ${input.name})`,
        metadata: { name: input.name },
        activity: `Secret ${input.name} was added`,
      }),
    ]);
    return presentSecret(row!);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(input.name);
    throw error;
  }
}

/**
 * Renames and/or rotates. Either re-encrypts with a fresh IV: a new value, or the old one under
 * the new name (the name is part of the ciphertext's context), so a rename needs the key too.
 */
export async function updateSecret(db: ShardDb, principal: Principal, encryptionKey: string | undefined, rawId: string, input: PatchSecretBody) {
  const row = await requireSecret(db, principal, rawId);
  const name = input.name ?? row.name;
  const renamed = name !== row.name;
  const ciphertext =
    input.value !== undefined || renamed
      ? await encryptSecret(encryptionKey, secretContext(row.workspaceId, name), input.value ?? (await revealSecret(encryptionKey, row)))
      : undefined;
  try {
    const [[updated]] = await db.batch([
      db
        .update(secrets)
        // Name and ciphertext are written together, so concurrent patches never leave a row
        // whose ciphertext was sealed under another name (the last writer wins).
        .set({ ...(ciphertext ? { name, ciphertext } : {}), updatedAt: now() })
        .where(eq(secrets.id, row.id))
        .returning(),
      ...recordChange(db, principal, {
        action: 'secret.updated',
        resourceType: 'secret',
        resourceId: formatId('sec', row.id),
        metadata: { name, ...(renamed ? { renamedFrom: row.name } : {}), rotated: input.value !== undefined },
        activity: renamed ? `Secret ${row.name} was renamed to ${name}` : `Secret ${name} was updated`,
      }),
    ]);
    return presentSecret(updated!);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(name);
    throw error;
  }
}

/** Also removes the secret's skill bindings (foreign key cascade). */
export async function deleteSecret(db: ShardDb, principal: Principal, rawId: string) {
  const row = await requireSecret(db, principal, rawId);
  await db.batch([
    db.delete(secrets).where(eq(secrets.id, row.id)),
    ...recordChange(db, principal, {
      action: 'secret.deleted',
      resourceType: 'secret',
      resourceId: formatId('sec', row.id),
      metadata: { name: row.name },
      activity: `Secret ${row.name} was deleted`,
    }),
  ]);
  return { success: true as const };
}
