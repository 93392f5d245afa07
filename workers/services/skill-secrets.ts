import { and, asc, eq, sql, type SQLWrapper } from 'drizzle-orm';
import { z } from 'zod';
import { secrets, skillSecretBindings, skills } from '../../schema';
import { isLoopbackHost } from '../lib/addresses';
import type { Principal } from '../auth/principal';
import type { GlobalDb, ShardDb } from '../env';
import { AppError, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUniqueViolation } from '../lib/db-errors';
import { formatId } from '../lib/ids';
import { recordChange } from './audit';
import { EnvVarName, requireSecret, revealSecret } from './secrets';
import { requireSkill } from './skills';

/** A secret is for an API or a few, not for the web at large. */
const MAX_SECRET_ORIGINS = 10;

/** The origin `raw` names (`scheme://host[:port]`, nothing after but an optional `/`) as the URL parser spells it, or null. */
function originOf(raw: string): string | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]+\/?$/i.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.username || url.password) return null;
  const allowed = url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
  return allowed ? url.origin : null;
}

/**
 * A site a run may send the secret to: an https origin (plain http only to a loopback host, for
 * local development), without path, query or credentials. Stored as the URL parser spells it
 * (lower-case host, default port dropped), which is how each request's origin is compared.
 */
const SecretOrigin = z
  .string()
  .max(300)
  .transform((raw, ctx) => {
    const origin = originOf(raw.trim());
    if (origin === null) ctx.addIssue({ code: 'custom', message: 'an origin such as https://api.example.com: https (http only to a loopback host), no path' });
    return origin ?? '';
  })
  .describe('An origin, e.g. https://api.example.com');

/**
 * `secretId` is `sec_<n>` or `<n>`, as a string or a number (spec 2.1). `origins` (our addition)
 * are the sites a run may send the value to, in a request header; without them it is never sent.
 */
export const BindSecretBody = z.object({
  secretId: z.union([z.string().min(1).max(40), z.number().int().positive()]),
  envVar: EnvVarName,
  origins: z
    .array(SecretOrigin)
    .max(MAX_SECRET_ORIGINS)
    .optional()
    .transform((origins) => [...new Set(origins)])
    .describe('The origins a run may send the secret to, in a request header only; none: never sent'),
});
export type BindSecretBody = z.infer<typeof BindSecretBody>;

export const SecretBinding = z.object({
  id: z.number().int(),
  skillSlug: z.string(),
  secretId: z.string(),
  secretName: z.string(),
  envVar: z.string(),
  origins: z.array(z.string()),
  createdAt: z.string(),
});
export type SecretBinding = z.infer<typeof SecretBinding>;

const bindingsOf = (db: ShardDb, skillId: number) =>
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
  origins: row.binding.origins,
  createdAt: toIso(row.binding.createdAt),
});

/** A bare array, oldest first (the spec shows no shape; the list is short by nature). */
export async function listBindings(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string): Promise<SecretBinding[]> {
  const skill = await requireSkill(db, globalDb, principal, slug);
  return (await bindingsOf(db, skill.id)).map((row) => present(slug, row));
}

export async function bindSecret(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string, input: BindSecretBody): Promise<SecretBinding> {
  const skill = await requireSkill(db, globalDb, principal, slug);
  const secret = await requireSecret(db, principal, input.secretId).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'NOT_FOUND') throw new AppError('NOT_FOUND', 404, 'Secret not found', { field: 'secretId' });
    throw error;
  });
  try {
    const [[row]] = await db.batch([
      db
        .insert(skillSecretBindings)
        .values({
          workspaceId: principal.workspaceId,
          skillId: skill.id,
          secretId: secret.id,
          envVar: input.envVar,
          origins: input.origins,
          createdAt: now(),
        })
        .returning(),
      ...recordChange(db, principal, {
        action: 'skill_secret.bound',
        resourceType: 'skill_secret',
        resourceId: sql`(SELECT CAST(${skillSecretBindings.id} AS TEXT) FROM ${skillSecretBindings} WHERE ${skillSecretBindings.skillId} = ${skill.id} AND ${skillSecretBindings.envVar} = ${input.envVar})`,
        metadata: { skillSlug: slug, secretId: formatId('sec', secret.id), envVar: input.envVar, origins: input.origins },
        activity: `Secret ${secret.name} was bound to "${slug}" as ${input.envVar}${input.origins.length ? ` for ${input.origins.join(', ')}` : ''}`,
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

export async function unbindSecret(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string, rawId: string) {
  const skill = await requireSkill(db, globalDb, principal, slug);
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

/** A secret as a run sees it: the variable name it is bound as, its value, and the origins it may be sent to. */
export interface RunSecret {
  envVar: string;
  value: string;
  origins: readonly string[];
}

/**
 * The secrets bound to a workspace's skill as stored (encrypted), for the runtime only (never
 * for a response). Read when a turn starts, so a binding or rotation made meanwhile applies to
 * the next turn. `slug` may be a subquery: a run's start names the skill of the execution it
 * claims in the same D1 request.
 */
export const sealedRunSecrets = (db: ShardDb, workspaceId: string, slug: string | SQLWrapper) =>
  db
    .select({ envVar: skillSecretBindings.envVar, origins: skillSecretBindings.origins, secret: secrets })
    .from(skillSecretBindings)
    .innerJoin(skills, eq(skills.id, skillSecretBindings.skillId))
    .innerJoin(secrets, eq(secrets.id, skillSecretBindings.secretId))
    .where(and(eq(skills.workspaceId, workspaceId), eq(skills.slug, slug)))
    .orderBy(asc(skillSecretBindings.envVar));

/** Decrypts them for the run. */
export const openRunSecrets = (encryptionKey: string | undefined, rows: Awaited<ReturnType<typeof sealedRunSecrets>>): Promise<RunSecret[]> =>
  Promise.all(rows.map(async (row) => ({ envVar: row.envVar, value: await revealSecret(encryptionKey, row.secret), origins: row.origins })));
