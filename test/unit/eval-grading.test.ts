import { describe, expect, it } from 'vitest';
import { gradeCheck, readVerdicts, runPassed } from '../../workers/services/eval-grading';
import { evalReport, reportText, type EvalUnit } from '../../workers/services/eval-report';

describe('machine checks', () => {
  it('grade the output and say what failed', () => {
    expect(gradeCheck({ type: 'contains', value: 'DONE', ignore_case: true }, 'all done', []).passed).toBe(true);
    expect(gradeCheck({ type: 'contains', value: 'DONE' }, 'all done', [])).toMatchObject({ passed: false, detail: 'does not contain "DONE"' });
    expect(gradeCheck({ type: 'not_contains', value: 'lorem' }, 'Lorem ipsum', []).passed).toBe(true);
    expect(gradeCheck({ type: 'regex', pattern: '^## \\w+', flags: 'm' }, 'intro\n## Notes', []).passed).toBe(true);
    expect(gradeCheck({ type: 'regex', pattern: '^## \\w+' }, 'intro\n## Notes', [])).toMatchObject({ passed: false, detail: 'no match for /^## \\w+/' });
    expect(gradeCheck({ type: 'artifact', name: 'report.md' }, '', ['notes.md'])).toMatchObject({ passed: false, detail: 'no artifact named "report.md"' });
  });

  it('read JSON from the output, its first code block or its outermost braces, against the schema', () => {
    const check = { type: 'json_schema' as const, schema: { type: 'object', required: ['title'] } };
    expect(gradeCheck(check, 'Here it is:\n```json\n{"title": "x"}\n```', []).passed).toBe(true);
    expect(gradeCheck(check, 'Result: {"title": "x"} — done', []).passed).toBe(true);
    expect(gradeCheck(check, '{"name": "x"}', [])).toMatchObject({ passed: false, detail: expect.stringContaining('title') });
    expect(gradeCheck(check, 'no json here', [])).toMatchObject({ passed: false, detail: 'the output holds no JSON value' });
  });
});

describe("the grader's answer", () => {
  it('gives each expectation its verdict and reasoning, and leaves ungraded what it does not answer', () => {
    const answer = '{"verdicts":[{"expectation":1,"passed":true,"reasoning":"It names it."}]}';
    expect(readVerdicts(['names the fix', 'is short'], answer)).toEqual([
      { expectation: 'names the fix', passed: true, reasoning: 'It names it.' },
      { expectation: 'is short', passed: null, reasoning: 'The grader gave no verdict for this expectation' },
    ]);
    expect(readVerdicts(['names the fix'], 'I think it passes.')[0]).toMatchObject({ passed: null, reasoning: expect.stringContaining('did not answer') });
  });

  it('makes a run pass only when every check and graded expectation passed', () => {
    expect(runPassed([{ check: { type: 'contains', value: 'a' }, passed: true }], [{ expectation: 'e', passed: null, reasoning: '' }])).toBe(true);
    expect(runPassed([], [{ expectation: 'e', passed: false, reasoning: '' }])).toBe(false);
    expect(runPassed([], [{ expectation: 'e', passed: null, reasoning: '' }])).toBeNull();
  });
});

describe('the stored report', () => {
  it('is trimmed, and says so, when it would not fit a row', () => {
    const long = 'x'.repeat(20_000);
    const cases = Array.from({ length: 50 }, (_, i) => ({ id: i + 1, prompt: long, checks: [{ type: 'contains' as const, value: 'x' }] }));
    const units: EvalUnit[] = cases.flatMap((_, caseIndex) =>
      (['skill', 'baseline'] as const).map((role, k) => ({
        n: caseIndex * 2 + k,
        caseIndex,
        repetition: 1,
        role,
        phase: 'done' as const,
        executionId: 1,
        run: { stopReason: 'end_turn', output: long, outputChars: long.length, checks: [], expectations: [], passed: true },
      })),
    );
    const { cases: report } = evalReport(cases, units);
    expect(JSON.stringify(report).length).toBeGreaterThan(1_000_000);
    const stored = JSON.parse(reportText(report));
    expect(JSON.stringify(stored).length).toBeLessThan(100_000);
    expect(stored[0].runs[0].with).toMatchObject({ trimmed: true, passed: true, output: `${'x'.repeat(100)}…` });
    const small = evalReport(cases.slice(0, 1), units.slice(0, 2)).cases;
    expect(JSON.parse(reportText(small))[0].runs[0].with.trimmed).toBeUndefined();
  });
});
