import { and, asc, eq, sql, type SQLWrapper } from 'drizzle-orm';
import { z } from 'zod';
import { secrets, skillSecretBindings, skills } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { AppError, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUniqueViolation } from '../lib/db-errors';
import { formatId } from '../lib/ids';
import { recordChange } from './audit';
import { EnvVarName, requireSecret, revealSecret } from './secrets';
import { requireSkill } from './skills';

/** `secretId` is `sec_<n>` or `<n>`, as a string or a number (spec 2.1). */
export const BindSecretBody = z.object({
  secretId: z.union([z.string().min(1).max(40), z.number().int().positive()]),
  envVar: EnvVarName,
});
export type BindSecretBody = z.infer<typeof BindSecretBody>;

export const SecretBinding = z.object({
  id: z.number().int(),
  skillSlug: z.string(),
  secretId: z.string(),
  secretName: z.string(),
  envVar: z.string(),
  createdAt: z.string(),
});
export type SecretBinding = z.infer<typeof SecretBinding>;

const bindingsOf = (db: Db, skillId: number) =>
  db
    .select({ binding: skillSecretBindings, secretName: secrets.name })
    .from(skillSecretBindings)
    .innerJoin(secrets, eq(secrets.id, skillSecretBindings.secretId))
    .where(eq(skillSecretBindings.skillId, skillId))
    .orderBy(asc(skillSecretBindings.id));

const present = (slug: string, row: { binding: typeof skillSecretBindings.$inferSelect; secretName: string }): SecretBinding => ({
  id: row.binding.id,
  skillSlug: slug,
  secretId: formatId('sec', row.binding.secretId),
  secretName: row.secretName,
  envVar: row.binding.envVar,
  createdAt: toIso(row.binding.createdAt),
});

/** A bare array, oldest first (the spec shows no shape; the list is short by nature). */
export async function listBindings(db: Db, principal: Principal, slug: string): Promise<SecretBinding[]> {
  const skill = await requireSkill(db, principal, slug);
  return (await bindingsOf(db, skill.id)).map((row) => present(slug, row));
}

export async function bindSecret(db: Db, principal: Principal, slug: string, input: BindSecretBody): Promise<SecretBinding> {
  const skill = await requireSkill(db, principal, slug);
  const secret = await requireSecret(db, principal, input.secretId).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'NOT_FOUND') throw new AppError('NOT_FOUND', 404, 'Secret not found', { field: 'secretId' });
    throw error;
  });
  try {
    const [[row]] = await db.batch([
      db
        .insert(skillSecretBindings)
        .values({ workspaceId: principal.workspaceId, skillId: skill.id, secretId: secret.id, envVar: input.envVar, createdAt: now() })
        .returning(),
      ...recordChange(db, principal, {
        action: 'skill_secret.bound',
        resourceType: 'skill_secret',
        resourceId: sql`(SELECT CAST(${skillSecretBindings.id} AS TEXT) FROM ${skillSecretBindings} WHERE ${skillSecretBindings.skillId} = ${skill.id} AND ${skillSecretBindings.envVar} = ${input.envVar})`,
        metadata: { skillSlug: slug, secretId: formatId('sec', secret.id), envVar: input.envVar },
        activity: `Secret ${secret.name} was bound to "${slug}" as ${input.envVar}`,
      }),
    ]);
    return present(slug, { binding: row!, secretName: secret.name });
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError('ALREADY_EXISTS', 409, `"${slug}" already binds ${input.envVar}`, { field: 'envVar' });
    }
    throw error;
  }
}

export async function unbindSecret(db: Db, principal: Principal, slug: string, rawId: string) {
  const skill = await requireSkill(db, principal, slug);
  const id = /^[1-9][0-9]{0,15}$/.test(rawId) ? Number(rawId) : null;
  const [binding] =
    id === null
      ? []
      : await db
          .select()
          .from(skillSecretBindings)
          .where(and(eq(skillSecretBindings.skillId, skill.id), eq(skillSecretBindings.id, id)))
          .limit(1);
  if (!binding) throw notFound('Binding');
  await db.batch([
    db.delete(skillSecretBindings).where(eq(skillSecretBindings.id, binding.id)),
    ...recordChange(db, principal, {
      action: 'skill_secret.unbound',
      resourceType: 'skill_secret',
      resourceId: String(binding.id),
      metadata: { skillSlug: slug, secretId: formatId('sec', binding.secretId), envVar: binding.envVar },
      activity: `${binding.envVar} was unbound from "${slug}"`,
    }),
  ]);
  return { success: true as const };
}

/** A secret as a run sees it: the variable name it is bound as, and its value. */
export interface RunSecret {
  envVar: string;
  value: string;
}

/**
 * The secrets bound to a workspace's skill as stored (encrypted), for the runtime only (never
 * for a response). Read when a turn starts, so a binding or rotation made meanwhile applies to
 * the next turn. `slug` may be a subquery: a run's start names the skill of the execution it
 * claims in the same D1 request.
 */
export const sealedRunSecrets = (db: Db, workspaceId: string, slug: string | SQLWrapper) =>
  db
    .select({ envVar: skillSecretBindings.envVar, secret: secrets })
    .from(skillSecretBindings)
    .innerJoin(skills, eq(skills.id, skillSecretBindings.skillId))
    .innerJoin(secrets, eq(secrets.id, skillSecretBindings.secretId))
    .where(and(eq(skills.workspaceId, workspaceId), eq(skills.slug, slug)))
    .orderBy(asc(skillSecretBindings.envVar));

/** Decrypts them for the run. */
export const openRunSecrets = (encryptionKey: string | undefined, rows: Awaited<ReturnType<typeof sealedRunSecrets>>): Promise<RunSecret[]> =>
  Promise.all(rows.map(async (row) => ({ envVar: row.envVar, value: await revealSecret(encryptionKey, row.secret) })));
