import { and, asc, count, desc, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import {
  artifacts,
  executions,
  SKILL_SOURCES,
  skills,
  skillVersionGuards,
  skillVersions,
  type SkillRow,
  type SkillVersionGuardRow,
  type SkillVersionRow,
} from '../../schema';
import { globalDbOf } from '../lib/db';
import type { Principal } from '../auth/principal';
import type { GlobalDb, ShardDb, Env } from '../env';
import { AppError, invalidInput, notFound } from '../errors';
import { authoredFiles } from '../lib/authored-bundle';
import { BUNDLE_TYPE, BundleError, type BundleFile, type ParsedBundle, SKILL_SLUG, validateBundle } from '../lib/bundle';
import { storeBundle, type StoredBundle } from '../lib/bundle-store';
import { CategoryId } from '../lib/categories';
import { EvalCases, EVALS_PATH } from '../lib/eval-cases';
import { now, toIso } from '../lib/clock';
import { readArchive } from '../lib/archive';
import { recordChange } from './audit';
import { requireOwned } from './tenant';
import { findCatalogSkill } from './catalog';
import { presentGuard, VersionGuard } from './version-guard';
import { fetchRegistryBundle } from './registry';

export const SkillSlug = z.string().regex(SKILL_SLUG, 'lower-case letters, digits and single hyphens, at most 64 characters');

/** The skill installed (or authored) in the caller's workspace under `slug`, or 404 (which says whether the marketplace has it). */
export async function requireSkill(db: ShardDb, catalog: GlobalDb, principal: Principal, slug: string): Promise<SkillRow> {
  const row = await findSkill(db, principal, slug);
  if (!row) throw await notInstalled(catalog, slug);
  return row;
}

const findSkill = async (db: ShardDb, principal: Principal, slug: string): Promise<SkillRow | undefined> =>
  (
    await db
      .select()
      .from(skills)
      .where(and(eq(skills.workspaceId, principal.workspaceId), eq(skills.slug, slug)))
      .limit(1)
  )[0];

/**
 * Why a slug is not usable here: a marketplace skill says how to install it (the install route
 * in `details.install`); anything else is plainly not found.
 */
async function notInstalled(catalog: GlobalDb, slug: string): Promise<AppError> {
  if (!(await findCatalogSkill(catalog, slug)))
    return new AppError('NOT_FOUND', 404, `Skill "${slug}" not found: it is not installed in this workspace and the marketplace has no such skill`, { slug });
  const path = `/api/v1/skills/${slug}/install`;
  return new AppError('NOT_FOUND', 404, `Skill "${slug}" is not installed in this workspace: install it from the marketplace with POST ${path}, then run it`, {
    slug,
    reason: 'not_installed',
    install: { method: 'POST', path },
  });
}

/** Spec 7.3: install and uninstall answer 429 while an execution runs in the workspace. */
async function refuseWhileRunning(db: ShardDb, principal: Principal): Promise<void> {
  const [running] = await db
    .select({ id: executions.id })
    .from(executions)
    .where(and(eq(executions.workspaceId, principal.workspaceId), eq(executions.status, 'working')))
    .limit(1);
  if (running) {
    throw new AppError('EXECUTION_RUNNING', 429, 'An execution is running in this workspace; try again when it ends', undefined, {
      isRunning: true,
    });
  }
}

export const InstalledSkill = z.object({
  name: z.string(),
  slug: z.string(),
  description: z.string(),
  category: z.string(),
  prompt: z.string(),
  repository: z.string().optional(),
  commitHash: z.string().optional(),
  source: z.string(),
  versionNumber: z.number().int(),
  contentChecksum: z.string(),
});
export type InstalledSkill = z.infer<typeof InstalledSkill>;

export const InstallRecord = InstalledSkill.extend({
  bundleType: z.string(),
  storagePath: z.string(),
  filesCount: z.number().int(),
});
export type InstallRecord = z.infer<typeof InstallRecord>;

/**
 * The skill as its current `version` holds it, provenance included (a version the guard holds
 * back shows nowhere here). `repository` and `commitHash` are absent (not null) for skills the
 * user authored (spec 2.3).
 */
function presentInstalled(skill: SkillRow, version: SkillVersionRow): InstallRecord {
  return {
    name: version.name,
    slug: skill.slug,
    description: version.description,
    category: version.category,
    prompt: version.prompt,
    ...(version.repository === null ? {} : { repository: version.repository }),
    ...(version.commitHash === null ? {} : { commitHash: version.commitHash }),
    source: version.source,
    versionNumber: version.versionNumber,
    contentChecksum: version.contentChecksum,
    bundleType: version.bundleType,
    storagePath: version.storagePath,
    filesCount: version.filesCount,
  };
}

const withoutStorage = ({ bundleType: _b, storagePath: _s, filesCount: _f, ...rest }: InstallRecord): InstalledSkill => rest;

/** The workspace's installed skills with their live versions; `slug` narrows it to one. */
export const installedQuery = (db: ShardDb, principal: Principal, slug?: string) =>
  db
    .select({ skill: skills, version: skillVersions })
    .from(skills)
    .innerJoin(skillVersions, eq(skillVersions.id, skills.activeVersionId))
    .where(and(eq(skills.workspaceId, principal.workspaceId), slug === undefined ? undefined : eq(skills.slug, slug)))
    .orderBy(asc(skills.slug));

export const ListSkillsInput = z.object({
  limit: z.number().int().min(1).max(100).optional(),
  offset: z.number().int().min(0).max(100_000).default(0),
});
export type ListSkillsInput = z.infer<typeof ListSkillsInput>;

/** The REST query: the same fields as numbers in a query string. */
export const ListSkillsQuery = ListSkillsInput.extend({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
});

/** Spec 4.2: a bare array without `limit`; `{items, total, limit, offset, hasMore}` with it. */
export async function listSkills(db: ShardDb, principal: Principal, query: ListSkillsInput) {
  if (query.limit === undefined) {
    return (await installedQuery(db, principal)).map((r) => withoutStorage(presentInstalled(r.skill, r.version)));
  }
  const [rows, [total]] = await Promise.all([
    installedQuery(db, principal).limit(query.limit).offset(query.offset),
    db.select({ n: count() }).from(skills).where(eq(skills.workspaceId, principal.workspaceId)),
  ]);
  return {
    items: rows.map((r) => withoutStorage(presentInstalled(r.skill, r.version))),
    total: total!.n,
    limit: query.limit,
    offset: query.offset,
    hasMore: query.offset + rows.length < total!.n,
  };
}

/** One installed skill with its live version's storage fields (the MCP `get-skill-details` tool). */
export async function getInstalledSkill(db: ShardDb, principal: Principal, slug: string): Promise<InstallRecord> {
  const [row] = await installedQuery(db, principal, slug).limit(1);
  if (!row) throw notFound(`Skill "${slug}"`);
  return presentInstalled(row.skill, row.version);
}

/** Content for a new version: where it came from and what it holds. */
export interface NewContent {
  source: SkillVersionRow['source'];
  repository: string | null;
  commitHash: string | null;
  name: string;
  description: string;
  category: string;
  prompt: string;
  stored: StoredBundle;
  note: string | null;
}

/** Whether `content` is what `version` holds already (same files and display fields): an install of it adds no version. */
export const sameContent = (version: SkillVersionRow, content: NewContent) =>
  version.contentChecksum === content.stored.contentChecksum &&
  version.name === content.name &&
  version.description === content.description &&
  version.category === content.category;

/**
 * Writes `content` as the skill's active version: creates the skill at version 1, or adds the
 * next version unless the active one already has this checksum and these fields (`force`
 * adds one anyway: authoring and restores always make a version). One D1 batch; the version
 * number is computed in SQL, and the unique (skill, number) index makes racing writers fail
 * rather than share a number. A version the guard holds back (`hold`) is written without
 * becoming active (skill-guard.ts makes it so once its eval passes).
 */
export async function writeVersion(db: ShardDb, principal: Principal, slug: string, content: NewContent, force: boolean, action: string, hold = false) {
  const t = now();
  const [existing] = await db
    .select({ skill: skills, version: skillVersions })
    .from(skills)
    .leftJoin(skillVersions, eq(skillVersions.id, skills.activeVersionId))
    .where(and(eq(skills.workspaceId, principal.workspaceId), eq(skills.slug, slug)))
    .limit(1);
  const active = existing?.version;
  if (existing && active && sameContent(active, content) && !force)
    return { record: presentInstalled(existing.skill, active), created: false, version: active };

  const skillId = sql`(SELECT ${skills.id} FROM ${skills} WHERE ${skills.workspaceId} = ${principal.workspaceId} AND ${skills.slug} = ${slug})`;
  const nextNumber = sql`(SELECT COALESCE(MAX(${skillVersions.versionNumber}), 0) + 1 FROM ${skillVersions} WHERE ${skillVersions.skillId} = ${skillId})`;
  const activate = db
    .update(skills)
    .set({
      activeVersionId: sql`(SELECT ${skillVersions.id} FROM ${skillVersions} WHERE ${skillVersions.skillId} = ${skills.id} ORDER BY ${skillVersions.versionNumber} DESC LIMIT 1)`,
    })
    .where(and(eq(skills.workspaceId, principal.workspaceId), eq(skills.slug, slug)));
  const [, [written]] = await db.batch([
    db
      .insert(skills)
      .values({ workspaceId: principal.workspaceId, slug, activeVersionId: null, createdAt: t, updatedAt: t })
      .onConflictDoUpdate({ target: [skills.workspaceId, skills.slug], set: { updatedAt: t } }),
    db
      .insert(skillVersions)
      .values({
        workspaceId: principal.workspaceId,
        skillId: sql`${skillId}`,
        versionNumber: sql`${nextNumber}`,
        source: content.source,
        repository: content.repository,
        commitHash: content.commitHash,
        contentChecksum: content.stored.contentChecksum,
        storagePath: content.stored.storagePath,
        bundleType: content.stored.bundleType,
        filesCount: content.stored.filesCount,
        name: content.name,
        description: content.description,
        category: content.category,
        prompt: content.prompt,
        createdBy: principal.userId,
        note: content.note,
        createdAt: t,
      })
      .returning(),
    ...(hold ? [] : [activate]),
    ...recordChange(db, principal, {
      action,
      resourceType: 'skill',
      resourceId: slug,
      metadata: { source: content.source, contentChecksum: content.stored.contentChecksum, note: content.note, ...(hold ? { held: true } : {}) },
      activity: existing ? `Skill "${content.name}" was updated` : `Skill "${content.name}" was added`,
    }),
  ]);
  // Just written in this batch.
  const skill = (await findSkill(db, principal, slug))!;
  const [version] = await db.select().from(skillVersions).where(eq(skillVersions.id, skill.activeVersionId!)).limit(1);
  return { record: presentInstalled(skill, version!), created: true, version: written! };
}

/** What writing a version answers: the record of the current version, whether a version was added, and the version written (or the active one). */
export type WrittenVersion = Awaited<ReturnType<typeof writeVersion>>;

export const InstallBody = z.object({
  artifactId: z.string().min(1).max(40).optional(),
  name: z.string().trim().min(1).max(100).optional(),
  description: z.string().trim().min(1).max(1024).optional(),
  category: CategoryId.optional(),
  registry: z
    .url({ protocol: /^https?$/ })
    .max(500)
    .optional(),
});
export type InstallBody = z.infer<typeof InstallBody>;

/**
 * Validates a bundle from a caller; its problems are the caller's input errors (400, field
 * `bundle`). A bundle fetched from `fetchedFrom` (an origin) is refused by its rule alone: the
 * detailed messages quote paths and text from the bundle, and the service never hands back
 * what another host served.
 */
export function validated(read: () => BundleFile[], slug?: string, fetchedFrom?: string): ParsedBundle {
  try {
    return validateBundle(read(), slug);
  } catch (error) {
    if (!(error instanceof BundleError)) throw error;
    const message = fetchedFrom ? `What ${fetchedFrom} served is not an acceptable skill bundle (${error.rule})` : error.message;
    // A problem inside the bundle's eval cases points at its field there, naming the file.
    if (error.field !== undefined && !fetchedFrom) throw invalidInput(error.field, error.rule, message, { file: EVALS_PATH });
    throw invalidInput('bundle', error.rule, message);
  }
}

/** A validated bundle from an artifact of this workspace (a zip or tar archive of the skill folder). */
async function bundleFromArtifact(db: ShardDb, bucket: R2Bucket, principal: Principal, rawId: string, slug: string) {
  const artifact = await requireOwned(db, artifacts, principal, 'art', rawId, 'Artifact');
  const object = await bucket.get(artifact.r2Key);
  if (!object) throw notFound('Artifact');
  const bytes = new Uint8Array(await object.arrayBuffer());
  return validated(() => readArchive(bytes), slug);
}

/** The content of a bundle already validated as `parsed`, stored, with the caller's display overrides. */
export async function bundleContent(
  bucket: R2Bucket,
  parsed: ParsedBundle,
  provenance: Pick<NewContent, 'source' | 'repository' | 'commitHash'>,
  overrides: Pick<InstallBody, 'name' | 'description' | 'category'> = {},
): Promise<NewContent> {
  return {
    ...provenance,
    name: overrides.name ?? parsed.name,
    description: overrides.description ?? parsed.description,
    category: overrides.category ?? parsed.category,
    prompt: parsed.prompt,
    stored: await storeBundle(bucket, parsed.files),
    note: null,
  };
}

/**
 * What POST /skills/:slug/install installs: from the catalog by default, from an artifact
 * bundle with `artifactId`, or from another instance of this API with `registry`
 * (skill-writes.ts writes it).
 */
export async function installContent(db: ShardDb, env: Env, principal: Principal, slug: string, body: InstallBody): Promise<NewContent> {
  await refuseWhileRunning(db, principal);
  const bucket = env.BUCKET;
  const overrides = { name: body.name, description: body.description, category: body.category };
  if (body.artifactId !== undefined) {
    const bundle = await bundleFromArtifact(db, bucket, principal, body.artifactId, slug);
    return bundleContent(bucket, bundle, { source: 'artifact', repository: null, commitHash: null }, overrides);
  }
  if (body.registry !== undefined) {
    const remote = await fetchRegistryBundle(body.registry, slug, env);
    const bundle = validated(() => remote.files, slug, new URL(body.registry).origin);
    return bundleContent(bucket, bundle, { source: 'registry', repository: remote.repository, commitHash: remote.commitHash }, overrides);
  }
  const entry = await findCatalogSkill(globalDbOf(env), slug);
  if (!entry) throw notFound(`Skill "${slug}" in the marketplace`);
  return {
    source: 'catalog',
    repository: entry.repository,
    commitHash: entry.commitHash,
    name: overrides.name ?? entry.name,
    description: overrides.description ?? entry.description,
    category: overrides.category ?? entry.category,
    prompt: entry.prompt,
    stored: { contentChecksum: entry.contentChecksum, storagePath: entry.storagePath, bundleType: BUNDLE_TYPE, filesCount: entry.filesCount },
    note: null,
  };
}

export async function uninstallSkill(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string) {
  const skill = await requireSkill(db, globalDb, principal, slug);
  await refuseWhileRunning(db, principal);
  await db.batch([
    db.delete(skills).where(eq(skills.id, skill.id)),
    ...recordChange(db, principal, {
      action: 'skill.uninstalled',
      resourceType: 'skill',
      resourceId: slug,
      activity: `Skill "${slug}" was removed`,
    }),
  ]);
  return { success: true as const };
}

export const AuthorSkillBody = z.object({
  name: z.string().trim().min(1).max(100),
  description: z.string().trim().min(1).max(1024),
  category: CategoryId,
  prompt: z.string().trim().min(1).max(100_000),
  note: z.string().trim().max(500).optional(),
  evals: EvalCases.nullable()
    .optional()
    .describe(
      `The skill's eval cases (the \`evals\` array of ${EVALS_PATH}), stored in its bundle and versioned with it. Omitted: the new version keeps the current version's cases; null: it has none`,
    ),
});
export type AuthorSkillBody = z.infer<typeof AuthorSkillBody>;

/**
 * PUT /skills/:slug: the user's own content. Every write is a new version. A catalog skill
 * written this way becomes the user's (no repository or commit any more). `current` is the
 * current version's files (read by the caller, who may need them for the guard too): the new
 * version keeps all but what the write replaces (authored-bundle.ts), so saving new
 * instructions loses nothing, and the result must still fit a bundle's limits.
 */
export async function authorSkill(
  db: ShardDb,
  bucket: R2Bucket,
  principal: Principal,
  slug: string,
  body: AuthorSkillBody,
  current: BundleFile[],
  hold = false,
) {
  const bundle = withKeptFiles(() => validated(() => authoredFiles(slug, principal.userId, body, current), slug));
  return writeVersion(
    db,
    principal,
    slug,
    {
      source: 'authored',
      repository: null,
      commitHash: null,
      name: body.name,
      description: body.description,
      category: body.category,
      prompt: bundle.prompt,
      stored: await storeBundle(bucket, bundle.files),
      note: body.note ?? null,
    },
    true,
    'skill.authored',
    hold,
  );
}

/** A write over the bundle's limits only with the files it keeps: the refusal says so, and how to drop some. */
function withKeptFiles(validate: () => ParsedBundle): ParsedBundle {
  try {
    return validate();
  } catch (error) {
    const rule = error instanceof AppError ? error.details?.rule : undefined;
    if (rule !== 'bundle_too_large' && rule !== 'too_many_files') throw error;
    throw invalidInput(
      'bundle',
      rule,
      `${(error as AppError).message} with the files the new version keeps from the current one; install a bundle without some of them to remove them`,
    );
  }
}

export const SkillVersion = z.object({
  id: z.number().int(),
  workspaceId: z.string(),
  skillId: z.number().int(),
  versionNumber: z.number().int(),
  source: z.enum(SKILL_SOURCES).describe('Where this version came from; the skill shows its current version’s'),
  repository: z.string().nullable(),
  commitHash: z.string().nullable(),
  contentChecksum: z.string(),
  storagePath: z.string(),
  bundleType: z.string(),
  filesCount: z.number().int(),
  prompt: z.string(),
  name: z.string(),
  description: z.string(),
  createdBy: z.string(),
  note: z.string().nullable(),
  createdAt: z.string(),
  active: z.boolean(),
  guard: VersionGuard.nullable().describe('Set when the workspace’s version guard held this version back when it was written: its eval and outcome'),
});
export type SkillVersion = z.infer<typeof SkillVersion>;

const presentVersion = (row: SkillVersionRow, activeId: number | null, guard: SkillVersionGuardRow | null): SkillVersion => ({
  id: row.id,
  workspaceId: row.workspaceId,
  skillId: row.skillId,
  versionNumber: row.versionNumber,
  source: row.source,
  repository: row.repository,
  commitHash: row.commitHash,
  contentChecksum: row.contentChecksum,
  storagePath: row.storagePath,
  bundleType: row.bundleType,
  filesCount: row.filesCount,
  prompt: row.prompt,
  name: row.name,
  description: row.description,
  createdBy: row.createdBy,
  note: row.note,
  createdAt: toIso(row.createdAt),
  active: row.id === activeId,
  guard: guard && presentGuard(guard, row.versionNumber),
});

/** Newest first; exactly one is `active`. */
export async function listVersions(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string): Promise<SkillVersion[]> {
  const skill = await requireSkill(db, globalDb, principal, slug);
  const rows = await db
    .select({ version: skillVersions, guard: skillVersionGuards })
    .from(skillVersions)
    .leftJoin(skillVersionGuards, eq(skillVersionGuards.skillVersionId, skillVersions.id))
    .where(eq(skillVersions.skillId, skill.id))
    .orderBy(desc(skillVersions.versionNumber));
  return rows.map((r) => presentVersion(r.version, skill.activeVersionId, r.guard));
}

export const RestoreResult = z.object({
  success: z.literal(true),
  restoredFrom: z.number().int(),
  skill: z
    .object({ slug: z.string(), contentChecksum: z.string() })
    .describe('The current version: the restored one, or the one it would replace while the guard holds it back'),
  guard: VersionGuard.optional().describe('Present when the workspace’s guard held the restored version back (answer 202)'),
});

/** A `:versionNumber` path parameter: a positive integer, else 400 naming it. */
export function versionNumberOf(raw: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) throw invalidInput('versionNumber', 'positive_integer', 'versionNumber must be a positive integer');
  return Number(raw);
}

/** Version `number` of the skill with the guard's record of it (null when written without the guard), or 404. */
export async function versionWithGuard(db: ShardDb, skill: { id: number }, slug: string, number: number) {
  const [found] = await db
    .select({ version: skillVersions, guard: skillVersionGuards })
    .from(skillVersions)
    .leftJoin(skillVersionGuards, eq(skillVersionGuards.skillVersionId, skillVersions.id))
    .where(and(eq(skillVersions.skillId, skill.id), eq(skillVersions.versionNumber, number)))
    .limit(1);
  if (!found) throw notFound(`Version ${number} of "${slug}"`);
  return found;
}

/** A restore's content: `old`'s, provenance included (skill-writes.ts writes it as a new version). */
export const restoredContent = (old: SkillVersionRow): NewContent => ({
  source: old.source,
  repository: old.repository,
  commitHash: old.commitHash,
  name: old.name,
  description: old.description,
  category: old.category,
  prompt: old.prompt,
  stored: { contentChecksum: old.contentChecksum, storagePath: old.storagePath, bundleType: BUNDLE_TYPE, filesCount: old.filesCount },
  note: `Restored from version ${old.versionNumber}`,
});
