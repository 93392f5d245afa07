import { RE2JS } from 're2js';
import { z } from 'zod';
import { schemaProblem } from '../workflows/json-schema';

/**
 * A skill's eval cases: `evals/evals.json` in its bundle, in the format of Anthropic's
 * skill-creator (`skill_name`, `evals[]` with `id`, `prompt`, `expected_output`, `files`,
 * `expectations`), extended with `checks` a machine grades without a model. Shared by the
 * catalog importer (Node) and the Worker, like the rest of the bundle format.
 */
export const EVALS_PATH = 'evals/evals.json';

export const EVAL_LIMITS = {
  cases: 50,
  promptChars: 8_000,
  expectedOutputChars: 8_000,
  expectations: 20,
  expectationChars: 1_000,
  checks: 20,
  checkValueChars: 1_000,
  patternChars: 500,
  files: 10,
  idChars: 100,
} as const;

/** Flags a `regex` check may set: case-insensitive, multi-line anchors, dot matches newlines. */
const REGEX_FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };

/**
 * A `regex` check's pattern, compiled for RE2 (linear time: the pattern runs on a model's
 * output, whatever the author wrote). A SyntaxError for a pattern that is not valid ECMAScript
 * or that RE2 cannot run (backreferences, lookaround).
 */
export function compileCheckPattern(pattern: string, flags = ''): RE2JS {
  new RegExp(pattern, `u${flags}`);
  try {
    return RE2JS.compile(
      RE2JS.translateRegExp(pattern),
      [...flags].reduce((bits, flag) => bits | (REGEX_FLAGS[flag] ?? 0), 0),
    );
  } catch (error) {
    throw new SyntaxError(error instanceof Error ? error.message : String(error));
  }
}

const Text = (max: number) => z.string().min(1).max(max);

const TextCheck = {
  value: Text(EVAL_LIMITS.checkValueChars),
  ignore_case: z.boolean().optional(),
};

export const EvalCheck = z.discriminatedUnion('type', [
  z.object({ type: z.literal('contains'), ...TextCheck }),
  z.object({ type: z.literal('not_contains'), ...TextCheck }),
  z
    .object({
      type: z.literal('regex'),
      pattern: Text(EVAL_LIMITS.patternChars),
      flags: z
        .string()
        .regex(/^(?!.*(.).*\1)[ims]*$/, 'at most one each of i, m and s')
        .optional(),
    })
    .superRefine((check, ctx) => {
      try {
        compileCheckPattern(check.pattern, check.flags);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['pattern'], message: `does not compile: ${(error as Error).message}` });
      }
    }),
  z.object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }).superRefine((check, ctx) => {
    const problem = schemaProblem(check.schema);
    if (problem) ctx.addIssue({ code: 'custom', path: ['schema'], message: `is not a JSON Schema: ${problem.pointer || '/'} ${problem.message}` });
  }),
  z.object({ type: z.literal('artifact'), name: Text(200).regex(/^[^/\\]+$/, 'a file name, without folders') }),
]);
export type EvalCheck = z.infer<typeof EvalCheck>;

/** A path inside the bundle: relative, no `..`, no hidden segments (the bundle's own path rule). */
const BundlePath = Text(200).regex(/^(?:[A-Za-z0-9_][A-Za-z0-9._-]*\/)*[A-Za-z0-9_][A-Za-z0-9._-]*$/, 'a relative path inside the bundle');

export const EvalCase = z
  .object({
    id: z.union([z.number().int().positive(), z.string().trim().min(1).max(EVAL_LIMITS.idChars)]),
    prompt: z.string().trim().min(1).max(EVAL_LIMITS.promptChars),
    expected_output: z.string().max(EVAL_LIMITS.expectedOutputChars).optional(),
    files: z.array(BundlePath).max(EVAL_LIMITS.files).optional(),
    expectations: z.array(z.string().trim().min(1).max(EVAL_LIMITS.expectationChars)).max(EVAL_LIMITS.expectations).optional(),
    checks: z.array(EvalCheck).max(EVAL_LIMITS.checks).optional(),
  })
  .refine((c) => (c.expectations?.length ?? 0) + (c.checks?.length ?? 0) > 0, {
    message: 'a case needs at least one expectation or check',
    path: ['expectations'],
  });
export type EvalCase = z.infer<typeof EvalCase>;

/** The cases of one skill: at least one, ids unique (1 and "1" are the same id). */
export const EvalCases = z
  .array(EvalCase)
  .min(1)
  .max(EVAL_LIMITS.cases)
  .superRefine((cases, ctx) => {
    const seen = new Set<string>();
    cases.forEach((c, i) => {
      const key = String(c.id);
      if (seen.has(key)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate id ${JSON.stringify(c.id)}` });
      seen.add(key);
    });
  });

export const EvalsFile = z.object({
  // Checked against the bundle's slug by parseEvalsFile.
  skill_name: z.string().min(1).max(64),
  evals: EvalCases,
});
export type EvalsFile = z.infer<typeof EvalsFile>;

/** One problem with a set of cases: `field` points inside the cases (`evals.2.checks.0.pattern`). */
export interface EvalsProblem {
  field: string;
  rule: string;
  message: string;
}

const problemOf = (error: z.ZodError): EvalsProblem => {
  const issue = error.issues[0]!;
  const field = issue.path.length ? issue.path.map(String).join('.') : 'evals';
  return { field, rule: issue.code, message: `${field}: ${issue.message}` };
};

/**
 * Parses `evals/evals.json` of a bundle for the skill `slug`, every `files` entry one of
 * `paths` (the bundle's files): the cases, or the first problem.
 */
export function parseEvalsFile(text: string, slug: string, paths: ReadonlySet<string>): { ok: true; file: EvalsFile } | { ok: false; problem: EvalsProblem } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: { field: 'evals', rule: 'json', message: `${EVALS_PATH} is not valid JSON: ${(error as Error).message}` } };
  }
  const parsed = EvalsFile.safeParse(data);
  if (!parsed.success) return { ok: false, problem: problemOf(parsed.error) };
  if (parsed.data.skill_name !== slug) {
    return { ok: false, problem: { field: 'skill_name', rule: 'name_mismatch', message: `skill_name is "${parsed.data.skill_name}", expected "${slug}"` } };
  }
  for (const [i, c] of parsed.data.evals.entries()) {
    const j = c.files?.findIndex((path) => !paths.has(path)) ?? -1;
    if (j >= 0) {
      const field = `evals.${i}.files.${j}`;
      return { ok: false, problem: { field, rule: 'missing_file', message: `${field}: ${c.files![j]} is not in the bundle` } };
    }
  }
  return { ok: true, file: parsed.data };
}

/** The evals.json text a bundle carries for `cases` (authoring writes it; a stable form, so the checksum is too). */
export const renderEvalsFile = (slug: string, cases: EvalCase[]): string => `${JSON.stringify({ skill_name: slug, evals: cases }, null, 2)}\n`;
