import { and, desc, eq, inArray } from 'drizzle-orm';
import { z } from 'zod';
import { EVAL_STATUSES, skillEvals, skills, skillVersionGuards, skillVersions, type SkillEvalRow, type SkillVersionRow } from '../../schema';
import { actorToKeep } from '../auth/actor';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { invalidInput, notFound } from '../errors';
import { MAX_RUN_INPUT, withAttachedFiles } from '../lib/attached-input';
import { validateBundle, type BundleFile } from '../lib/bundle';
import { bundlePaths, loadBundle } from '../lib/bundle-store';
import { ShippedEvals } from '../lib/catalog-evals';
import { now, toIso } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';
import { globalDbOf } from '../lib/db';
import { EVALS_PATH, type EvalCase } from '../lib/eval-cases';
import { formatId, parseId } from '../lib/ids';
import { Credits, hundredthsOf } from '../lib/money';
import { byIntegerId, cursorEnvelope, CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { selectProvider } from '../runtime/providers/index';
import { openByokKey, sealedByokKey } from './byok';
import { findCatalogSkill, shippedEvalsOf } from './catalog';
import { getInstalledSkill, InstallRecord, requireSkill } from './skills';
import { HELD, presentGuard, VersionGuard } from './version-guard';

export const StartEvalBody = z.object({
  version: z.number().int().min(1).optional().describe('The version to evaluate (its number); the active one when omitted'),
  provider: z
    .enum(['anthropic', 'openai', 'local'])
    .optional()
    .describe('The provider the runs must use: refused unless it is the one runs use here (the service’s, or your own key’s)'),
  model: z.string().trim().min(1).max(100).optional().describe('The model to run, instead of the provider’s configured one (not for the built-in local model)'),
  repetitions: z.number().int().min(1).max(5).default(1).describe('Runs of each case with the skill, and as many without it (1 to 5)'),
  budget: Credits.optional().describe('The most the whole job may be charged, in Ds: it stops cleanly (status stopped, stopReason budget) when that is spent'),
});
export type StartEvalBody = z.infer<typeof StartEvalBody>;

export const StartedEval = z.object({ id: z.string(), status: z.enum(EVAL_STATUSES) });

/** One run of a case in the report (`with` the skill or `without` it). */
const ReportRun = z
  .object({
    status: z.enum(['pending', 'running', 'graded', 'skipped']),
    executionId: z.string().nullable(),
    graderExecutionId: z.string().nullable(),
    stopReason: z.string().optional(),
    output: z.string().optional().describe('The start of the run’s final text; the whole is the execution’s'),
    outputChars: z.number().optional(),
    checks: z.array(z.object({ check: z.record(z.string(), z.unknown()), passed: z.boolean(), detail: z.string().optional() })).optional(),
    expectations: z.array(z.object({ expectation: z.string(), passed: z.boolean().nullable(), reasoning: z.string() })).optional(),
    passed: z.boolean().nullable().optional(),
    note: z.string().optional(),
    trimmed: z.boolean().optional().describe('Its texts were cut to fit the stored report (a job with many cases and long answers)'),
  })
  .optional();

export const EvalCaseReport = z.object({
  id: z.union([z.number(), z.string()]),
  prompt: z.string(),
  expected_output: z.string().optional(),
  passRateWith: z.number().nullable(),
  passRateWithout: z.number().nullable(),
  runs: z.array(z.object({ repetition: z.number(), with: ReportRun, without: ReportRun })),
});

const EvalSummaryFields = {
  id: z.string(),
  skillSlug: z.string(),
  versionNumber: z.number(),
  status: z.enum(EVAL_STATUSES),
  stopReason: z.string().nullable(),
  provider: z.string(),
  model: z.string(),
  local: z.boolean().describe('Run on the built-in local model: the numbers say nothing of a hosted model'),
  repetitions: z.number(),
  casesCount: z.number(),
  passRateWith: z.number().nullable().describe('Fraction of graded runs with the skill that passed'),
  passRateWithout: z.number().nullable().describe('The same for the runs without it (the baseline)'),
  difference: z.number().nullable().describe('passRateWith minus passRateWithout'),
  budget: z.number().nullable(),
  cost: z.number().describe('Ds charged for every run of the job, grading runs included'),
  inputTokens: z.number(),
  outputTokens: z.number(),
  runTimeMs: z.number().describe('The runs’ time, summed'),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
};

export const EvalSummary = z.object(EvalSummaryFields);
export const SkillEval = EvalSummary.extend({ cases: z.array(EvalCaseReport) });
export const EvalPage = cursorEnvelope(EvalSummary);

/** What a skill's GET and `get-skill-details` show of an eval: the latest of each version, newest version first. */
const LatestEval = EvalSummary.pick({
  id: true,
  versionNumber: true,
  status: true,
  casesCount: true,
  passRateWith: true,
  passRateWithout: true,
  difference: true,
  model: true,
  local: true,
  completedAt: true,
});
export const LatestEvals = z.array(LatestEval);

const presentSummary = (row: SkillEvalRow): z.infer<typeof EvalSummary> => ({
  id: formatId('eval', row.id),
  skillSlug: row.skillSlug,
  versionNumber: row.versionNumber,
  status: row.status,
  stopReason: row.stopReason,
  provider: row.provider,
  model: row.model,
  local: row.provider === 'local',
  repetitions: row.repetitions,
  casesCount: row.casesCount,
  passRateWith: row.passRateWith,
  passRateWithout: row.passRateWithout,
  difference: row.passRateWith === null || row.passRateWithout === null ? null : row.passRateWith - row.passRateWithout,
  budget: row.budget === null ? null : row.budget / 100,
  cost: row.cost / 100,
  inputTokens: row.inputTokens,
  outputTokens: row.outputTokens,
  runTimeMs: row.elapsedMs,
  createdAt: toIso(row.createdAt),
  completedAt: row.completedAt === null ? null : toIso(row.completedAt),
});

/** A case's run input: its prompt, then each input file it names, as text. */
function runInput(testCase: EvalCase, files: BundleFile[], index: number): string {
  const decoder = new TextDecoder();
  const attached = (testCase.files ?? []).map((path) => ({ name: path, text: decoder.decode(files.find((f) => f.path === path)!.bytes) }));
  const input = withAttachedFiles(testCase.prompt, attached);
  if (input.length > MAX_RUN_INPUT) {
    throw invalidInput(`evals.${index}.files`, 'too_long', `Case ${index} with its input files is over ${MAX_RUN_INPUT} characters, more than a run takes`);
  }
  return input;
}

/** The version asked for (its number), else the active one; 404 when the skill has no such version. */
async function versionOf(db: ShardDb, skill: { id: number; activeVersionId: number | null; slug: string }, number: number | undefined) {
  const [version] = await db
    .select()
    .from(skillVersions)
    .where(
      and(
        eq(skillVersions.skillId, skill.id),
        number === undefined ? eq(skillVersions.id, skill.activeVersionId ?? -1) : eq(skillVersions.versionNumber, number),
      ),
    )
    .limit(1);
  if (!version) throw notFound(`Version ${number} of "${skill.slug}"`);
  return version;
}

/** The provider and model the job's runs use: those of the launcher's runs, and `model` if given. */
export async function providerOf(env: Env, principal: Principal, body: Pick<StartEvalBody, 'provider' | 'model'>) {
  const byok = await openByokKey(env.ENCRYPTION_KEY, (await sealedByokKey(globalDbOf(env), principal.userId))[0] ?? null);
  const provider = selectProvider(env, byok, body.model);
  if (body.provider !== undefined && body.provider !== provider.name) {
    throw invalidInput(
      'provider',
      'unavailable',
      `Runs here use ${provider.name}, not ${body.provider}: leave provider out, or set your own ${body.provider} key`,
    );
  }
  if (body.model !== undefined && provider.name === 'local') throw invalidInput('model', 'unavailable', 'The built-in local model runs one model only');
  return provider;
}

/** A version's eval cases and each one's run input, with the checksum that tells evals of the same cases apart. */
export interface EvalCasesOf {
  cases: EvalCase[];
  inputs: string[];
  checksum: string;
}

/** The cases `version` carries in its bundle, or null when it carries none. */
export const evalCasesOf = async (env: Env, slug: string, version: SkillVersionRow): Promise<EvalCasesOf | null> =>
  evalCasesIn(await loadBundle(env.BUCKET, version.storagePath), slug, version);

/** The cases in `files`, the bundle of `version` already read (null when missing: 404), or null when it carries none. */
export async function evalCasesIn(files: BundleFile[] | null, slug: string, version: SkillVersionRow): Promise<EvalCasesOf | null> {
  if (!files) throw notFound(`The bundle of version ${version.versionNumber} of "${slug}"`);
  const evals = validateBundle(files, slug).evals;
  if (!evals) return null;
  const inputs = evals.evals.map((c, i) => runInput(c, files, i));
  return { cases: evals.evals, inputs, checksum: await sha256Hex(JSON.stringify({ cases: evals.evals, inputs })) };
}

/** What one eval job runs: `version` measured on `cases` (its own, or those of the version it would replace). */
export interface EvalPlan {
  skillId: number;
  slug: string;
  version: SkillVersionRow;
  cases: EvalCasesOf;
  provider: { name: string; model: string };
  model?: string;
  repetitions: number;
  /** Hundredths of a Ds, or null for none. */
  budget: number | null;
}

/** The job's row, `queued`: written before its object starts, so what refers to it can be written first. */
export async function insertEval(db: ShardDb, principal: Principal, plan: EvalPlan): Promise<number> {
  const [row] = await db
    .insert(skillEvals)
    .values({
      workspaceId: principal.workspaceId,
      skillId: plan.skillId,
      skillSlug: plan.slug,
      skillVersionId: plan.version.id,
      versionNumber: plan.version.versionNumber,
      userId: principal.userId,
      status: 'queued',
      provider: plan.provider.name,
      model: plan.provider.model,
      repetitions: plan.repetitions,
      budget: plan.budget,
      casesCount: plan.cases.cases.length,
      casesChecksum: plan.cases.checksum,
      createdAt: now(),
    })
    .returning({ id: skillEvals.id });
  return row!.id;
}

/** Hands the job to its object (`SkillEval`), which runs it; a start that fails removes its row. */
export async function launchEval(db: ShardDb, env: Env, principal: Principal, evalId: number, plan: EvalPlan): Promise<void> {
  try {
    await env.SKILL_EVAL.getByName(formatId('eval', evalId)).start({
      evalId,
      actor: actorToKeep(principal),
      slug: plan.slug,
      name: plan.version.name,
      skillVersionId: plan.version.id,
      cases: plan.cases.cases,
      inputs: plan.cases.inputs,
      repetitions: plan.repetitions,
      budget: plan.budget,
      ...(plan.model === undefined ? {} : { model: plan.model }),
      grade: plan.provider.name !== 'local',
    });
  } catch (error) {
    await db.delete(skillEvals).where(eq(skillEvals.id, evalId));
    throw error;
  }
}

/**
 * POST /skills/:slug/evals/run: starts the job for a version that carries eval cases. Its
 * object runs it (`SkillEval`); the answer is at once, the job `queued`.
 */
export async function startEval(db: ShardDb, env: Env, principal: Principal, slug: string, body: StartEvalBody) {
  const skill = await requireSkill(db, globalDbOf(env), principal, slug);
  const version = await versionOf(db, skill, body.version);
  const cases = await evalCasesOf(env, slug, version);
  if (!cases) {
    throw invalidInput(
      'version',
      'no_evals',
      `Version ${version.versionNumber} of "${slug}" has no eval cases: write them with PUT /api/v1/skills/${slug} (evals) or ship ${EVALS_PATH} in its bundle`,
    );
  }
  const plan: EvalPlan = {
    skillId: skill.id,
    slug,
    version,
    cases,
    provider: await providerOf(env, principal, body),
    ...(body.model === undefined ? {} : { model: body.model }),
    repetitions: body.repetitions,
    budget: body.budget === undefined ? null : hundredthsOf(body.budget),
  };
  const id = await insertEval(db, principal, plan);
  await launchEval(db, env, principal, id, plan);
  return { id: formatId('eval', id), status: 'queued' as const };
}

const findEval = async (db: ShardDb, principal: Principal, skillId: number, rawId: string) => {
  const id = parseId('eval', rawId);
  const [row] =
    id === null
      ? []
      : await db
          .select()
          .from(skillEvals)
          .where(and(eq(skillEvals.workspaceId, principal.workspaceId), eq(skillEvals.skillId, skillId), eq(skillEvals.id, id)))
          .limit(1);
  if (!row) throw notFound('Eval');
  return row;
};

/** GET /skills/:slug/evals/:evalId: the job, its totals and per case each run with and without the skill, graded. */
export async function getEval(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string, rawId: string) {
  const skill = await requireSkill(db, globalDb, principal, slug);
  const row = await findEval(db, principal, skill.id, rawId);
  return { ...presentSummary(row), cases: JSON.parse(row.report) as z.infer<typeof EvalCaseReport>[] };
}

/** GET /skills/:slug/evals: the skill's eval jobs, newest first, in cursor pages. */
export async function listEvals(db: ShardDb, globalDb: GlobalDb, principal: Principal, slug: string, query: CursorQuery) {
  const skill = await requireSkill(db, globalDb, principal, slug);
  const page = await cursorPage(
    query,
    byIntegerId(skillEvals.id, (where, orderBy, limit) => db.select().from(skillEvals).where(where).orderBy(orderBy).limit(limit), 'eval'),
    and(eq(skillEvals.workspaceId, principal.workspaceId), eq(skillEvals.skillId, skill.id)),
  );
  return mapPage(page, presentSummary);
}

/** The latest finished eval of each version of the skill, newest version first (a skill's evals go with it, so its slug names them). */
export async function latestEvals(db: ShardDb, workspaceId: string, slug: string): Promise<z.infer<typeof LatestEvals>> {
  const rows = await db
    .select()
    .from(skillEvals)
    .where(and(eq(skillEvals.workspaceId, workspaceId), eq(skillEvals.skillSlug, slug), inArray(skillEvals.status, ['succeeded', 'stopped'])))
    .orderBy(desc(skillEvals.versionNumber), desc(skillEvals.id));
  const seen = new Set<number>();
  return rows.filter((r) => !seen.has(r.versionNumber) && seen.add(r.versionNumber)).map((r) => LatestEval.parse(presentSummary(r)));
}

export const SkillDetails = InstallRecord.extend({
  hasEvalCases: z.boolean().describe(`The active version carries eval cases (${EVALS_PATH}): POST /skills/:slug/evals/run can evaluate it`),
  evals: LatestEvals,
  heldVersions: z
    .array(VersionGuard)
    .describe('Versions the workspace’s version guard holds back (being evaluated, or refused with their numbers), newest first'),
  catalogEvals: ShippedEvals.nullable().describe(
    'For a skill installed from the catalog: the eval results the catalog ships for its versions (as the marketplace detail’s `evals`); null for any other skill',
  ),
});

/** The skill's versions the guard holds back, newest first. */
async function heldVersions(db: ShardDb, workspaceId: string, slug: string) {
  const rows = await db
    .select({ guard: skillVersionGuards, versionNumber: skillVersions.versionNumber })
    .from(skillVersionGuards)
    .innerJoin(skillVersions, eq(skillVersions.id, skillVersionGuards.skillVersionId))
    .innerJoin(skills, eq(skills.id, skillVersions.skillId))
    .where(and(eq(skills.workspaceId, workspaceId), eq(skills.slug, slug), inArray(skillVersionGuards.status, [...HELD])))
    .orderBy(desc(skillVersions.versionNumber));
  return rows.map((r) => presentGuard(r.guard, r.versionNumber));
}

/** One installed skill with its live version's storage fields, the latest eval of each version and the versions held back (`get-skill-details`). */
export async function getSkillDetails(
  db: ShardDb,
  globalDb: GlobalDb,
  bucket: R2Bucket,
  principal: Principal,
  slug: string,
): Promise<z.infer<typeof SkillDetails>> {
  const [record, evals, held] = await Promise.all([
    getInstalledSkill(db, principal, slug),
    latestEvals(db, principal.workspaceId, slug),
    heldVersions(db, principal.workspaceId, slug),
  ]);
  const [paths, catalog] = await Promise.all([bundlePaths(bucket, record.storagePath), record.source === 'catalog' ? findCatalogSkill(globalDb, slug) : null]);
  return {
    ...record,
    hasEvalCases: paths?.includes(EVALS_PATH) ?? false,
    evals,
    heldVersions: held,
    catalogEvals: catalog ? shippedEvalsOf(catalog) : null,
  };
}
