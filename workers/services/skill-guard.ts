import { and, desc, eq, inArray, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import { skillEvals, skillGuardSettings, skills, skillVersionGuards, skillVersions, type SkillEvalRow, type SkillVersionGuardRow } from '../../schema';
import { requireScope, type Actor } from '../auth/actor';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { conflict, forbidden } from '../errors';
import { now, toIso } from '../lib/clock';
import { globalDbOf } from '../lib/db';
import type { BundleFile } from '../lib/bundle';
import { loadBundle } from '../lib/bundle-store';
import { formatId } from '../lib/ids';
import { recordChange } from './audit';
import { evalCasesIn, insertEval, launchEval, providerOf, type EvalCasesOf, type EvalPlan } from './skill-evals';
import {
  getInstalledSkill,
  InstallRecord,
  installedQuery,
  requireSkill,
  sameContent,
  versionNumberOf,
  versionWithGuard,
  type NewContent,
  type WrittenVersion,
} from './skills';
import { HELD, presentGuard, VersionGuard } from './version-guard';
import { requireCurrentWorkspace, requireOwnedWorkspace } from './workspaces';

/**
 * The version guard (docs/skills.md, "Guarding a version"): with it on, a new version of a
 * skill whose current version carries eval cases (written, installed over it or restored:
 * skill-writes.ts) is written held back, measured on
 * those cases, and becomes current only if its pass rate with the skill is at least the current
 * version's on the same cases and model; otherwise it stays refused until the owner overrides.
 */

export const SkillGuardBody = z.object({
  enabled: z.boolean().describe('Whether a new version of an authored skill must score at least as well as the current one before it becomes current'),
});
export type SkillGuardBody = z.infer<typeof SkillGuardBody>;

export const SkillGuardSetting = SkillGuardBody.extend({ updatedAt: z.string().nullable() });

const readSetting = async (db: ShardDb, workspaceId: string) =>
  (await db.select().from(skillGuardSettings).where(eq(skillGuardSettings.workspaceId, workspaceId)).limit(1))[0];

const presentSetting = (row: Awaited<ReturnType<typeof readSetting>>): z.infer<typeof SkillGuardSetting> => ({
  enabled: row?.enabled ?? false,
  updatedAt: row ? toIso(row.updatedAt) : null,
});

export async function getSkillGuard(db: ShardDb, globalDb: GlobalDb, principal: Principal, workspace: string) {
  const ws = await requireCurrentWorkspace(globalDb, principal, workspace);
  return presentSetting(await readSetting(db, ws.id));
}

/** Turns the guard on or off (owners only); versions already held back are still decided by their evals. */
export async function setSkillGuard(db: ShardDb, globalDb: GlobalDb, principal: Principal, workspace: string, body: SkillGuardBody) {
  const ws = await requireOwnedWorkspace(globalDb, principal, workspace, 'Only the workspace owner can change the skill version guard');
  const t = now();
  await db.batch([
    db
      .insert(skillGuardSettings)
      .values({ workspaceId: ws.id, enabled: body.enabled, updatedAt: t })
      .onConflictDoUpdate({ target: skillGuardSettings.workspaceId, set: { enabled: body.enabled, updatedAt: t } }),
    ...recordChange(db, principal, {
      action: 'workspace.skill_guard_updated',
      resourceType: 'workspace',
      resourceId: ws.id,
      metadata: { enabled: body.enabled },
      activity: `The skill version guard was turned ${body.enabled ? 'on' : 'off'}`,
    }),
  ]);
  return presentSetting(await readSetting(db, ws.id));
}

export const AuthoredSkill = InstallRecord.extend({
  guard: VersionGuard.optional().describe(
    'Present when the workspace’s guard held the new version back (answer 202): the record above is still the current version',
  ),
});
export type AuthoredSkill = z.infer<typeof AuthoredSkill>;

/** Whether the workspace's guard is on. */
export const guardOn = async (db: ShardDb, workspaceId: string) => (await readSetting(db, workspaceId))?.enabled ?? false;

type Installed = Awaited<ReturnType<typeof installedQuery>>[number];

/** The bar a new version must reach: the version it would replace, with that version's cases. */
export type GuardBar = Installed & { cases: EvalCasesOf };

/** The bar of a write over `current`, whose bundle `files` the caller read: null when it carries no cases. */
export async function barOf(slug: string, current: Installed, files: BundleFile[] | null): Promise<GuardBar | null> {
  const cases = await evalCasesIn(files, slug, current.version);
  return cases && { ...current, cases };
}

/**
 * The bar a write of `content` over the current version must reach: null when the guard is off,
 * the skill is new, `content` is the current version's own (an unchanged install adds nothing),
 * or the current version carries no cases.
 */
export async function barFor(db: ShardDb, env: Env, principal: Principal, slug: string, content: NewContent): Promise<GuardBar | null> {
  if (!(await guardOn(db, principal.workspaceId))) return null;
  const [current] = await installedQuery(db, principal, slug);
  if (!current || sameContent(current.version, content)) return null;
  return barOf(slug, current, await loadBundle(env.BUCKET, current.version.storagePath));
}

/** The current version's latest eval that measured the same cases on the same model, which the new version must reach. */
async function baselineOf(db: ShardDb, principal: Principal, versionId: number, cases: EvalCasesOf, provider: { name: string; model: string }) {
  const [row] = await db
    .select()
    .from(skillEvals)
    .where(
      and(
        eq(skillEvals.workspaceId, principal.workspaceId),
        eq(skillEvals.skillVersionId, versionId),
        eq(skillEvals.status, 'succeeded'),
        eq(skillEvals.casesChecksum, cases.checksum),
        eq(skillEvals.provider, provider.name),
        eq(skillEvals.model, provider.model),
      ),
    )
    .orderBy(desc(skillEvals.id))
    .limit(1);
  return row;
}

/**
 * Writes a new version through the guard (`write` writes it, held back or not). Without a `bar`
 * it is current at once. With one it is written held back and its eval (and, when the current
 * version has no finished eval of those cases on this model, that version's too) is started,
 * charged to the writer, who must hold `tool:execute` as for any eval.
 */
export async function guardedWrite(
  db: ShardDb,
  env: Env,
  actor: Actor,
  slug: string,
  bar: GuardBar | null,
  grantToken: string | undefined,
  write: (hold: boolean) => Promise<WrittenVersion>,
): Promise<AuthoredSkill> {
  if (!bar) return (await write(false)).record;
  await requireScope(globalDbOf(env), actor, 'tool:execute', grantToken);
  const provider = await providerOf(env, actor, {});
  const baseline = await baselineOf(db, actor, bar.version.id, bar.cases, provider);
  const { record, version, created } = await write(true);
  // An install whose content a racing write made current meanwhile adds no version to hold.
  if (!created) return record;
  const plan = (measured: typeof version, repetitions: number): EvalPlan => ({
    skillId: bar.skill.id,
    slug,
    version: measured,
    cases: bar.cases,
    provider,
    repetitions,
    budget: null,
  });
  const mine = plan(version, baseline?.repetitions ?? 1);
  const theirs = baseline ? null : plan(bar.version, 1);
  const evalId = await insertEval(db, actor, mine);
  const baselineEvalId = baseline?.id ?? (await insertEval(db, actor, theirs!));
  const [guard] = await db
    .insert(skillVersionGuards)
    .values({
      skillVersionId: version.id,
      workspaceId: actor.workspaceId,
      previousVersionNumber: bar.version.versionNumber,
      status: 'evaluating',
      evalId,
      baselineEvalId,
    })
    .returning();
  try {
    await launchEval(db, env, actor, evalId, mine);
    if (theirs) await launchEval(db, env, actor, baselineEvalId, theirs);
  } catch (error) {
    const note = `The eval could not start: ${error instanceof Error ? error.message : String(error)}`;
    await db.update(skillVersionGuards).set({ status: 'refused', note, decidedAt: now() }).where(eq(skillVersionGuards.skillVersionId, version.id));
    throw error;
  }
  return { ...record, guard: presentGuard(guard!, version.versionNumber) };
}

/** Whether the eval of the new version reached its bar, and the numbers; a side that did not succeed refuses it. */
function verdict(guard: SkillVersionGuardRow, mine: SkillEvalRow | undefined, theirs: SkillEvalRow | undefined) {
  const passRate = mine?.passRateWith ?? null;
  const required = theirs?.passRateWith ?? null;
  const ended = (row: SkillEvalRow | undefined, of: string) =>
    !row
      ? `The eval of ${of} was removed`
      : row.status !== 'succeeded'
        ? `The eval of ${of} ${row.status}${row.stopReason ? ` (${row.stopReason})` : ''}`
        : null;
  const failure = ended(mine, 'the new version') ?? ended(theirs, `version ${guard.previousVersionNumber}`);
  if (failure) return { passed: false, passRate, required, note: failure };
  if (passRate === null || required === null) return { passed: false, passRate, required, note: 'No run was graded: there is nothing to compare' };
  const passed = passRate >= required;
  const percent = (rate: number) => `${Math.round(rate * 1000) / 10}%`;
  const note = passed ? null : `Its pass rate with the skill, ${percent(passRate)}, is below version ${guard.previousVersionNumber}'s ${percent(required)}`;
  return { passed, passRate, required, note };
}

/**
 * An eval ended (its object calls this): decides each version the guard held back on it once
 * both of its evals ended. A version that passed becomes current unless a newer one did
 * meanwhile; the decision is audited as the writer's, with the numbers.
 */
export async function settleGuards(db: ShardDb, actor: Actor, evalId: number): Promise<void> {
  const held = await db
    .select({ guard: skillVersionGuards, version: skillVersions })
    .from(skillVersionGuards)
    .innerJoin(skillVersions, eq(skillVersions.id, skillVersionGuards.skillVersionId))
    .where(
      and(
        eq(skillVersionGuards.workspaceId, actor.workspaceId),
        eq(skillVersionGuards.status, 'evaluating'),
        or(eq(skillVersionGuards.evalId, evalId), eq(skillVersionGuards.baselineEvalId, evalId)),
      ),
    );
  for (const { guard, version } of held) {
    const evals = await db
      .select()
      .from(skillEvals)
      .where(and(eq(skillEvals.workspaceId, actor.workspaceId), inArray(skillEvals.id, [guard.evalId, guard.baselineEvalId])));
    if (evals.some((e) => e.status === 'queued' || e.status === 'running')) continue;
    const result = verdict(
      guard,
      evals.find((e) => e.id === guard.evalId),
      evals.find((e) => e.id === guard.baselineEvalId),
    );
    // The one decision: an eval ending twice, or the owner's override meanwhile, finds it decided.
    const [decided] = await db
      .update(skillVersionGuards)
      .set({ status: result.passed ? 'accepted' : 'refused', passRate: result.passRate, required: result.required, note: result.note, decidedAt: now() })
      .where(and(eq(skillVersionGuards.skillVersionId, guard.skillVersionId), eq(skillVersionGuards.status, 'evaluating')))
      .returning();
    if (!decided) continue;
    const [slug] = await db.select({ slug: skills.slug }).from(skills).where(eq(skills.id, version.skillId)).limit(1);
    // Current unless a newer version became current meanwhile.
    const currentNumber = sql`(SELECT ${skillVersions.versionNumber} FROM ${skillVersions} WHERE ${skillVersions.id} = ${skills.activeVersionId})`;
    const active = sql`CASE WHEN ${currentNumber} < ${version.versionNumber} THEN ${version.id} ELSE ${skills.activeVersionId} END`;
    await db.batch([
      db
        .update(skills)
        .set({ updatedAt: now(), ...(result.passed ? { activeVersionId: active } : {}) })
        .where(eq(skills.id, version.skillId)),
      ...recordChange(db, actor, {
        action: result.passed ? 'skill.version_accepted' : 'skill.version_refused',
        resourceType: 'skill',
        resourceId: slug?.slug ?? String(version.skillId),
        metadata: {
          versionNumber: version.versionNumber,
          evalId: formatId('eval', decided.evalId),
          baselineEvalId: formatId('eval', decided.baselineEvalId),
          passRate: result.passRate,
          required: result.required,
        },
        activity: result.passed
          ? `Version ${version.versionNumber} of skill "${version.name}" passed its eval and became current`
          : `Version ${version.versionNumber} of skill "${version.name}" was refused: ${result.note}`,
      }),
    ]);
  }
}

export const PromotedSkill = AuthoredSkill.required({ guard: true });

/**
 * POST /skills/:slug/versions/:versionNumber/promote: the owner makes a version the guard holds
 * back (evaluating, or refused) current anyway; audited with its eval's numbers.
 */
export async function promoteVersion(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string, rawVersion: string) {
  const number = versionNumberOf(rawVersion);
  const skill = await requireSkill(db, globalDb, principal, slug);
  if (principal.role !== 'owner') throw forbidden('Only the workspace owner can make a version the guard held back current');
  const { version, guard } = await versionWithGuard(db, skill, slug, number);
  if (!guard || !HELD.includes(guard.status)) {
    throw conflict(
      `Version ${version.versionNumber} of "${slug}" is not held back by the guard: restore it with POST /api/v1/skills/${slug}/versions/${version.versionNumber}/restore`,
    );
  }
  const evals = await db
    .select()
    .from(skillEvals)
    .where(and(eq(skillEvals.workspaceId, principal.workspaceId), inArray(skillEvals.id, [guard.evalId, guard.baselineEvalId])));
  const numbers = (id: number) => {
    const e = evals.find((r) => r.id === id);
    return e ? { status: e.status, passRateWith: e.passRateWith } : null;
  };
  const note = `Made current by the owner over the guard (it was ${guard.status})`;
  const [, [overridden]] = await db.batch([
    db.update(skills).set({ activeVersionId: version.id, updatedAt: now() }).where(eq(skills.id, skill.id)),
    db.update(skillVersionGuards).set({ status: 'overridden', note, decidedAt: now() }).where(eq(skillVersionGuards.skillVersionId, version.id)).returning(),
    ...recordChange(db, principal, {
      action: 'skill.version_promoted',
      resourceType: 'skill',
      resourceId: slug,
      metadata: {
        versionNumber: version.versionNumber,
        was: guard.status,
        evalId: formatId('eval', guard.evalId),
        baselineEvalId: formatId('eval', guard.baselineEvalId),
        eval: numbers(guard.evalId),
        baseline: numbers(guard.baselineEvalId),
        passRate: guard.passRate,
        required: guard.required,
      },
      activity: `Version ${version.versionNumber} of skill "${version.name}" was made current by the owner over the guard`,
    }),
  ]);
  return { ...(await getInstalledSkill(db, principal, slug)), guard: presentGuard(overridden!, version.versionNumber) };
}
