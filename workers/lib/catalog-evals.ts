import { z } from 'zod';

/**
 * The eval results a catalog ships (`catalog/evals/<slug>.json`, written by `npm run
 * catalog:eval`, carried by catalog:build and catalog:load into the marketplace): per version of
 * the skill (its content checksum), the latest eval the deployer ran, newest first. Shared by
 * the scripts (Node) and the Worker.
 */
export const EVAL_RESULTS_DIR = 'catalog/evals';

/** At most this many versions' results are kept per skill: the marketplace shows the recent ones. */
export const MAX_SHIPPED_EVALS = 10;

const Rate = z.number().min(0).max(1).nullable();

export const ShippedEval = z.object({
  version: z.string().max(100).describe('The skill’s version (its `metadata.version`) when it was evaluated'),
  contentChecksum: z.string().max(64).describe('The content evaluated: the marketplace detail’s `contentChecksum` when it is the current version'),
  provider: z.string().max(40),
  model: z.string().max(100),
  local: z.boolean().describe('Run on the built-in local model: only the checks were graded, and its answers are not a model’s'),
  repetitions: z.number().int().min(1),
  casesCount: z.number().int().min(0),
  passRateWith: Rate.describe('Fraction of graded runs with the skill that passed'),
  passRateWithout: Rate.describe('The same for the runs without it (the baseline)'),
  difference: z.number().min(-1).max(1).nullable().describe('passRateWith minus passRateWithout'),
  completedAt: z.iso.datetime().describe('When the eval ended'),
  cases: z
    .array(z.object({ id: z.union([z.number(), z.string()]), passRateWith: Rate, passRateWithout: Rate }))
    .describe('Per case, its pass rates with and without the skill'),
});
export type ShippedEval = z.infer<typeof ShippedEval>;

export const ShippedEvals = z.array(ShippedEval).max(MAX_SHIPPED_EVALS);

/** One skill's results file. */
export const EvalResultsFile = z.object({ slug: z.string(), evals: ShippedEvals });
export type EvalResultsFile = z.infer<typeof EvalResultsFile>;

/** The fields of a finished eval job (`GET /api/v1/skills/:slug/evals/:id`) a shipped result keeps. */
export const FinishedEvalJob = z.object({
  provider: z.string(),
  model: z.string(),
  local: z.boolean(),
  repetitions: z.number(),
  casesCount: z.number(),
  passRateWith: z.number().nullable(),
  passRateWithout: z.number().nullable(),
  difference: z.number().nullable(),
  completedAt: z.string(),
  cases: z.array(z.object({ id: z.union([z.number(), z.string()]), passRateWith: z.number().nullable(), passRateWithout: z.number().nullable() })),
});

/** What the catalog ships of an eval job of the version `version` with content `contentChecksum`. */
export const shippedEvalOf = (job: z.infer<typeof FinishedEvalJob>, version: string, contentChecksum: string): ShippedEval =>
  ShippedEval.parse({
    version,
    contentChecksum,
    provider: job.provider,
    model: job.model,
    local: job.local,
    repetitions: job.repetitions,
    casesCount: job.casesCount,
    passRateWith: job.passRateWith,
    passRateWithout: job.passRateWithout,
    difference: job.difference,
    completedAt: job.completedAt,
    cases: job.cases.map((c) => ({ id: c.id, passRateWith: c.passRateWith, passRateWithout: c.passRateWithout })),
  });

/**
 * A results file with `result` recorded: it replaces the result of the same content (the latest
 * eval of a version wins), the newest first, the oldest beyond MAX_SHIPPED_EVALS dropped.
 */
export function withShippedEval(file: EvalResultsFile | null, slug: string, result: ShippedEval): EvalResultsFile {
  const others = (file?.evals ?? []).filter((e) => e.contentChecksum !== result.contentChecksum);
  const evals = [result, ...others].sort((a, b) => b.completedAt.localeCompare(a.completedAt)).slice(0, MAX_SHIPPED_EVALS);
  return { slug, evals };
}

/** The file's text: two-space JSON ending in a newline, so a new result is a small diff. */
export const evalResultsText = (file: EvalResultsFile) => `${JSON.stringify(file, null, 2)}\n`;
