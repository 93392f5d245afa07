import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { secrets, type SecretRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { AppError, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUniqueViolation } from '../lib/db-errors';
import { encryptSecret } from '../lib/encryption';
import { formatId, parseId } from '../lib/ids';
import { byIntegerId, type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { recordChange } from './audit';

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

/** Ciphertext is bound to its workspace and its creation nonce, so it is useless in any other row. */
export const secretContext = (workspaceId: string, nonce: number) => `secret:${workspaceId}:${nonce}`;

const duplicateName = (name: string) =>
  new AppError('ALREADY_EXISTS', 409, `A secret named ${name} already exists`, { field: 'name' });

/** A secret of the caller's workspace, or 404 (another workspace's id included). */
export async function requireSecret(db: Db, principal: Principal, rawId: string | number): Promise<SecretRow> {
  const id = typeof rawId === 'number' ? rawId : parseId('sec', rawId);
  const [row] =
    id === null ? [] : await db.select().from(secrets).where(and(eq(secrets.workspaceId, principal.workspaceId), eq(secrets.id, id))).limit(1);
  if (!row) throw notFound('Secret');
  return row;
}

export async function listSecrets(db: Db, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    byIntegerId(secrets.id, (where, orderBy, limit) => db.select().from(secrets).where(where).orderBy(orderBy).limit(limit), 'sec'),
    eq(secrets.workspaceId, principal.workspaceId),
  );
  return mapPage(page, presentSecret);
}

export async function createSecret(db: Db, principal: Principal, encryptionKey: string | undefined, input: CreateSecretBody) {
  const t = now();
  const ciphertext = await encryptSecret(encryptionKey, secretContext(principal.workspaceId, t), input.value);
  try {
    const [[row]] = await db.batch([
      db
        .insert(secrets)
        .values({ workspaceId: principal.workspaceId, name: input.name, ciphertext, createdBy: principal.userId, createdAt: t, updatedAt: t })
        .returning(),
      ...recordChange(db, principal, {
        action: 'secret.created',
        resourceType: 'secret',
        resourceId: input.name,
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

/** Renames and/or rotates: a new value gets a new IV under the same binding context. */
export async function updateSecret(db: Db, principal: Principal, encryptionKey: string | undefined, rawId: string, input: PatchSecretBody) {
  const row = await requireSecret(db, principal, rawId);
  const ciphertext =
    input.value === undefined ? undefined : await encryptSecret(encryptionKey, secretContext(row.workspaceId, row.createdAt), input.value);
  try {
    const [[updated]] = await db.batch([
      db
        .update(secrets)
        .set({ name: input.name ?? row.name, ...(ciphertext ? { ciphertext } : {}), updatedAt: now() })
        .where(eq(secrets.id, row.id))
        .returning(),
      ...recordChange(db, principal, {
        action: 'secret.updated',
        resourceType: 'secret',
        resourceId: formatId('sec', row.id),
        metadata: { renamedFrom: input.name && input.name !== row.name ? row.name : undefined, rotated: ciphertext !== undefined },
        activity: `Secret ${input.name ?? row.name} was updated`,
      }),
    ]);
    return presentSecret(updated!);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(input.name!);
    throw error;
  }
}

/** Also removes the secret's skill bindings (foreign key cascade). */
export async function deleteSecret(db: Db, principal: Principal, rawId: string) {
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

export const parseSecretRef = (raw: string) => {
  const id = parseId('sec', raw);
  if (id === null) throw invalidInput('secretId', 'id', 'secretId must be sec_<n> or <n>');
  return id;
};
