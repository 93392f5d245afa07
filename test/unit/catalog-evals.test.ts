import { describe, expect, it } from 'vitest';
import { EvalResultsFile, evalResultsText, MAX_SHIPPED_EVALS, shippedEvalOf, withShippedEval } from '../../workers/lib/catalog-evals';

/** A finished job as `GET /api/v1/skills/:slug/evals/:id` answers it (the fields catalog:eval reads, and more). */
const job = (completedAt: string, passRateWith = 1, passRateWithout = 0.5) => ({
  id: 'eval_1',
  status: 'succeeded',
  provider: 'local',
  model: 'local-1',
  local: true,
  repetitions: 1,
  casesCount: 2,
  passRateWith,
  passRateWithout,
  difference: passRateWith - passRateWithout,
  cost: 0.4,
  completedAt,
  cases: [
    { id: 1, prompt: 'First', passRateWith: 1, passRateWithout: 1, runs: [{ repetition: 1, with: { output: 'a long answer' }, without: {} }] },
    { id: 'two', prompt: 'Second', passRateWith: 1, passRateWithout: 0, runs: [] },
  ],
});

describe('shipped eval results (catalog/evals/<slug>.json)', () => {
  it('keeps of a job its model, local label, rates, date and per-case rates, and names the version and content measured', () => {
    expect(shippedEvalOf(job('2026-05-01T10:00:00.000Z'), '1.2.0', 'c'.repeat(64))).toEqual({
      version: '1.2.0',
      contentChecksum: 'c'.repeat(64),
      provider: 'local',
      model: 'local-1',
      local: true,
      repetitions: 1,
      casesCount: 2,
      passRateWith: 1,
      passRateWithout: 0.5,
      difference: 0.5,
      completedAt: '2026-05-01T10:00:00.000Z',
      cases: [
        { id: 1, passRateWith: 1, passRateWithout: 1 },
        { id: 'two', passRateWith: 1, passRateWithout: 0 },
      ],
    });
  });

  it('records the latest eval of each version, newest first: a new run of the same content replaces its result', () => {
    const v1 = shippedEvalOf(job('2026-05-01T10:00:00.000Z'), '1.0.0', 'a'.repeat(64));
    const v2 = shippedEvalOf(job('2026-05-02T10:00:00.000Z'), '1.1.0', 'b'.repeat(64));
    const v2again = shippedEvalOf(job('2026-05-03T10:00:00.000Z', 0.5, 0.5), '1.1.0', 'b'.repeat(64));
    const file = withShippedEval(withShippedEval(withShippedEval(null, 'okr-drafter', v1), 'okr-drafter', v2), 'okr-drafter', v2again);
    expect(file).toEqual({ slug: 'okr-drafter', evals: [v2again, v1] });
    // What is written reads back as a results file, two-space JSON ending in a newline (a small diff per result).
    const text = evalResultsText(file);
    expect(EvalResultsFile.parse(JSON.parse(text))).toEqual(file);
    expect(text).toMatch(/^\{\n {2}"slug": "okr-drafter",\n/);
    expect(text.endsWith('}\n')).toBe(true);
  });

  it(`keeps the ${MAX_SHIPPED_EVALS} newest versions`, () => {
    let file = null;
    for (let i = 0; i < MAX_SHIPPED_EVALS + 2; i++) {
      file = withShippedEval(file, 's', shippedEvalOf(job(`2026-05-${String(i + 1).padStart(2, '0')}T00:00:00.000Z`), `1.${i}.0`, String(i).padStart(64, '0')));
    }
    expect(file!.evals.map((e) => e.version)).toEqual(Array.from({ length: MAX_SHIPPED_EVALS }, (_, i) => `1.${MAX_SHIPPED_EVALS + 1 - i}.0`));
  });

  it('refuses a results file that is not one', () => {
    expect(EvalResultsFile.safeParse({ slug: 's', evals: [{ version: '1', passRateWith: 2 }] }).success).toBe(false);
  });
});
