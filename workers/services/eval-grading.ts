import { z } from 'zod';
import { compileCheckPattern, type EvalCase, type EvalCheck } from '../lib/eval-cases';
import { valueProblem } from '../workflows/json-schema';

/** A machine check's verdict on one run; `detail` says what failed. */
export interface CheckResult {
  check: EvalCheck;
  passed: boolean;
  detail?: string;
}

/** The grading model's verdict on one expectation; `passed` null when it gave none. */
export interface ExpectationResult {
  expectation: string;
  passed: boolean | null;
  reasoning: string;
}

const quote = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);

/**
 * The JSON value an output holds: the whole output, else the body of its first fenced code
 * block, else the text from its first `{` or `[` to its last `}` or `]`; undefined when none parses.
 */
export function jsonIn(output: string): unknown {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/.exec(output)?.[1];
  const start = output.search(/[{[]/);
  const end = Math.max(output.lastIndexOf('}'), output.lastIndexOf(']'));
  for (const candidate of [output, fenced, start >= 0 && end > start ? output.slice(start, end + 1) : undefined]) {
    if (candidate === undefined) continue;
    try {
      return JSON.parse(candidate);
    } catch {
      // The next candidate.
    }
  }
  return undefined;
}

/** Grades one check against a run's final text and the names of the artifacts it wrote. */
export function gradeCheck(check: EvalCheck, output: string, artifacts: string[]): CheckResult {
  switch (check.type) {
    case 'contains':
    case 'not_contains': {
      const fold = (s: string) => (check.ignore_case ? s.toLowerCase() : s);
      const found = fold(output).includes(fold(check.value));
      const passed = check.type === 'contains' ? found : !found;
      return passed ? { check, passed } : { check, passed, detail: `${found ? 'contains' : 'does not contain'} ${quote(check.value)}` };
    }
    case 'regex': {
      const passed = compileCheckPattern(check.pattern, check.flags).matcher(output).find();
      return passed ? { check, passed } : { check, passed, detail: `no match for /${check.pattern}/${check.flags ?? ''}` };
    }
    case 'json_schema': {
      const value = jsonIn(output);
      if (value === undefined) return { check, passed: false, detail: 'the output holds no JSON value' };
      const problem = valueProblem(check.schema, value);
      return problem ? { check, passed: false, detail: `${problem.pointer || '/'} ${problem.message}` } : { check, passed: true };
    }
    case 'artifact': {
      const passed = artifacts.includes(check.name);
      return passed ? { check, passed } : { check, passed, detail: `no artifact named ${quote(check.name)}` };
    }
  }
}

/** The grading model's instructions (its system prompt). */
export const GRADER_SYSTEM = [
  'You grade the output of an AI assistant against a list of expectations, strictly and independently of style.',
  'For each numbered expectation, decide whether the output meets it, judging only from the output as given.',
  'Answer with only a JSON object, no prose and no code fence, of this form:',
  '{"verdicts":[{"expectation":1,"passed":true,"reasoning":"one or two sentences citing the output"}]}',
  'Give exactly one verdict per expectation, in order.',
].join('\n');

/** What the grading run is asked: the task, the reference answer, the output and the expectations. */
export function graderInput(testCase: EvalCase, output: string): string {
  return [
    '## The task the assistant was given',
    testCase.prompt,
    ...(testCase.expected_output ? ['', '## A reference answer (the output need not match it word for word)', testCase.expected_output] : []),
    '',
    "## The assistant's output",
    output || '(the assistant gave no output)',
    '',
    '## Expectations',
    ...(testCase.expectations ?? []).map((e, i) => `${i + 1}. ${e}`),
  ].join('\n');
}

const MAX_REASONING = 1_000;

const Verdicts = z.object({
  verdicts: z.array(
    z.object({
      expectation: z.coerce.number().int(),
      passed: z.boolean(),
      // Kept in the report: a long answer is cut rather than refused.
      reasoning: z
        .string()
        .default('')
        .transform((s) => s.slice(0, MAX_REASONING)),
    }),
  ),
});

/**
 * The grader's answer read as one verdict per expectation. An expectation the answer gives no
 * verdict for (or an answer that is not the JSON asked for) is left ungraded, saying why.
 */
export function readVerdicts(expectations: string[], answer: string): ExpectationResult[] {
  const parsed = Verdicts.safeParse(jsonIn(answer));
  return expectations.map((expectation, i) => {
    const verdict = parsed.success ? parsed.data.verdicts.find((v) => v.expectation === i + 1) : undefined;
    if (verdict) return { expectation, passed: verdict.passed, reasoning: verdict.reasoning };
    const reasoning = parsed.success
      ? 'The grader gave no verdict for this expectation'
      : `The grader did not answer with the verdicts asked for: ${quote(answer)}`;
    return { expectation, passed: null, reasoning };
  });
}

/**
 * A run passes when every check and every graded expectation passed; null when nothing of it
 * was graded (only expectations, and no grading model).
 */
export function runPassed(checks: CheckResult[], expectations: ExpectationResult[]): boolean | null {
  const verdicts = [...checks.map((c) => c.passed), ...expectations.flatMap((e) => (e.passed === null ? [] : [e.passed]))];
  return verdicts.length === 0 ? null : verdicts.every(Boolean);
}

/** The fraction of graded runs that passed, or null when none was graded. */
export function passRate(passed: (boolean | null)[]): number | null {
  const graded = passed.filter((p): p is boolean => p !== null);
  return graded.length === 0 ? null : graded.filter(Boolean).length / graded.length;
}
