import { and, eq, sql } from 'drizzle-orm';
import { executions } from '../../schema';
import type { ShardDb } from '../env';
import type { EvalCase } from '../lib/eval-cases';
import { formatId } from '../lib/ids';
import { passRate, type CheckResult, type ExpectationResult } from './eval-grading';

/** One ended run of an eval, graded: what the report shows of it. */
export interface UnitRun {
  stopReason: string;
  /** The start of its final text (the whole is the execution's). */
  output: string;
  outputChars: number;
  checks: CheckResult[];
  expectations: ExpectationResult[];
  /** Null when nothing of it was graded. */
  passed: boolean | null;
  note?: string;
}

/**
 * One run of a case in a job, with the skill or without it (`baseline`), as the job's object
 * keeps it: `starting` and `grader_starting` are stored before a start, so a restart knows one
 * may have happened.
 */
export interface EvalUnit {
  n: number;
  caseIndex: number;
  repetition: number;
  role: 'skill' | 'baseline';
  phase: 'pending' | 'starting' | 'running' | 'to_grade' | 'grader_starting' | 'grading' | 'done' | 'skipped';
  executionId?: number;
  graderExecutionId?: number;
  run?: UnitRun;
  /** The whole output, kept until it is graded. */
  output?: string;
}

const presentRun = (unit: EvalUnit | undefined) =>
  unit && {
    status: unit.phase === 'done' ? 'graded' : unit.phase === 'skipped' ? 'skipped' : unit.phase === 'pending' ? 'pending' : 'running',
    executionId: unit.executionId === undefined ? null : formatId('exec', unit.executionId),
    graderExecutionId: unit.graderExecutionId === undefined ? null : formatId('exec', unit.graderExecutionId),
    ...(unit.phase === 'done' && unit.run ? unit.run : {}),
  };

/** The per-case report and the overall pass rates with and without the skill (over graded runs). */
export function evalReport(cases: EvalCase[], units: EvalUnit[]) {
  const rate = (role: EvalUnit['role'], of: EvalUnit[]) => passRate(of.filter((u) => u.role === role && u.phase === 'done').map((u) => u.run!.passed));
  const report = cases.map((testCase, caseIndex) => {
    const mine = units.filter((u) => u.caseIndex === caseIndex);
    const repetitions = [...new Set(mine.map((u) => u.repetition))];
    return {
      id: testCase.id,
      prompt: testCase.prompt,
      ...(testCase.expected_output === undefined ? {} : { expected_output: testCase.expected_output }),
      passRateWith: rate('skill', mine),
      passRateWithout: rate('baseline', mine),
      runs: repetitions.map((repetition) => ({
        repetition,
        with: presentRun(mine.find((u) => u.repetition === repetition && u.role === 'skill')),
        without: presentRun(mine.find((u) => u.repetition === repetition && u.role === 'baseline')),
      })),
    };
  });
  return { cases: report, passRateWith: rate('skill', units), passRateWithout: rate('baseline', units) };
}

/** Past this, a report is stored trimmed: a D1 row holds at most 2 MB. */
const REPORT_MAX_CHARS = 1_000_000;
const TRIMMED_CHARS = 100;

type Report = ReturnType<typeof evalReport>['cases'];

/**
 * The report as stored: whole, or, when it would not fit a row (many cases, repetitions and
 * long answers), with its texts cut to their first TRIMMED_CHARS characters and `trimmed` set.
 */
export function reportText(cases: Report): string {
  const whole = JSON.stringify(cases);
  if (whole.length <= REPORT_MAX_CHARS) return whole;
  const cut = (text: string) => (text.length > TRIMMED_CHARS ? `${text.slice(0, TRIMMED_CHARS)}…` : text);
  const trimRun = (run: Report[number]['runs'][number]['with']) =>
    run && {
      ...run,
      ...('output' in run && run.output !== undefined ? { output: cut(run.output) } : {}),
      ...('expectations' in run && run.expectations !== undefined
        ? { expectations: run.expectations.map((e) => ({ ...e, expectation: cut(e.expectation), reasoning: cut(e.reasoning) })) }
        : {}),
      trimmed: true,
    };
  return JSON.stringify(
    cases.map((c) => ({
      ...c,
      prompt: cut(c.prompt),
      ...(c.expected_output === undefined ? {} : { expected_output: cut(c.expected_output) }),
      runs: c.runs.map((r) => ({ ...r, with: trimRun(r.with), without: trimRun(r.without) })),
    })),
  );
}

/** What every run of the job (grading runs included) was charged and used, from their executions. */
export async function evalTotals(db: ShardDb, workspaceId: string, evalId: number) {
  const [row] = await db
    .select({
      cost: sql<number>`COALESCE(SUM(${executions.cost}), 0)`,
      inputTokens: sql<number>`COALESCE(SUM(${executions.inputTokens}), 0)`,
      outputTokens: sql<number>`COALESCE(SUM(${executions.outputTokens}), 0)`,
      elapsedMs: sql<number>`COALESCE(SUM(${executions.executionTimeMs}), 0)`,
    })
    .from(executions)
    .where(and(eq(executions.workspaceId, workspaceId), eq(executions.evalId, evalId)));
  return row!;
}
