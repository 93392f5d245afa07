import { describe, expect, it } from 'vitest';
import { BundleError, validateBundle } from '../../workers/lib/bundle';
import { EVAL_LIMITS, parseEvalsFile } from '../../workers/lib/eval-cases';
import { skillMd } from '../helpers/skills';

const file = (path: string, text: string) => ({ path, bytes: new TextEncoder().encode(text) });
const evalsJson = (evals: unknown[], skill_name = 'my-skill') => JSON.stringify({ skill_name, evals });
const parse = (evals: unknown[], paths: string[] = []) => parseEvalsFile(evalsJson(evals), 'my-skill', new Set(paths));
const problemOf = (evals: unknown[], paths: string[] = []) => {
  const parsed = parse(evals, paths);
  return parsed.ok ? null : parsed.problem;
};
const good = { id: 1, prompt: 'Summarise this', expected_output: 'A summary', expectations: ['The answer is short'] };

describe('eval cases', () => {
  it('accepts the skill-creator format with every kind of check', () => {
    const parsed = parse(
      [
        good,
        {
          id: 'two',
          prompt: 'Write a report',
          files: ['evals/files/input.md'],
          checks: [
            { type: 'contains', value: 'Summary', ignore_case: true },
            { type: 'not_contains', value: 'lorem' },
            { type: 'regex', pattern: '^## \\w+', flags: 'im' },
            { type: 'json_schema', schema: { type: 'object', required: ['title'] } },
            { type: 'artifact', name: 'report.md' },
          ],
        },
      ],
      ['evals/files/input.md'],
    );
    expect(parsed.ok && parsed.file.evals.map((c) => c.id)).toEqual([1, 'two']);
  });

  it.each([
    ['a regex that does not compile', [{ ...good, checks: [{ type: 'regex', pattern: '(unclosed' }] }], 'evals.0.checks.0.pattern'],
    ['a backreference (RE2 cannot run it)', [{ ...good, checks: [{ type: 'regex', pattern: '(a)\\1' }] }], 'evals.0.checks.0.pattern'],
    ['an unknown flag', [{ ...good, checks: [{ type: 'regex', pattern: 'a', flags: 'g' }] }], 'evals.0.checks.0.flags'],
    ['an unknown check type', [good, { ...good, id: 2, checks: [{ type: 'length', value: 3 }] }], 'evals.1.checks.0.type'],
    ['a schema that is not a JSON Schema', [{ ...good, checks: [{ type: 'json_schema', schema: { type: 'thing' } }] }], 'evals.0.checks.0.schema'],
    ['a case with neither expectations nor checks', [{ id: 1, prompt: 'x' }], 'evals.0.expectations'],
    ['a duplicate id (1 and "1")', [good, { ...good, id: '1' }], 'evals.1.id'],
    ['an id that is not positive', [{ ...good, id: 0 }], 'evals.0.id'],
    ['a prompt over the limit', [{ ...good, prompt: 'x'.repeat(EVAL_LIMITS.promptChars + 1) }], 'evals.0.prompt'],
    ['too many cases', Array.from({ length: EVAL_LIMITS.cases + 1 }, (_, i) => ({ ...good, id: i + 1 })), 'evals'],
    ['an input file the bundle lacks', [{ ...good, files: ['evals/files/missing.md'] }], 'evals.0.files.0'],
    ['an input file outside the bundle', [{ ...good, files: ['../etc/passwd'] }], 'evals.0.files.0'],
  ])('refuses %s, pointing at the field', (_what, evals, field) => {
    expect(problemOf(evals)?.field).toBe(field);
  });

  it('refuses cases written for another skill, and text that is not JSON', () => {
    expect(parseEvalsFile(evalsJson([good], 'other'), 'my-skill', new Set()).ok).toBe(false);
    expect(parseEvalsFile('{', 'my-skill', new Set()).ok).toBe(false);
  });

  it('are read from evals/evals.json of a bundle, which a problem inside refuses with its field', () => {
    const bundle = validateBundle([file('SKILL.md', skillMd('my-skill')), file('evals/evals.json', evalsJson([good]))], 'my-skill');
    expect(bundle.evals?.evals).toHaveLength(1);
    expect(validateBundle([file('SKILL.md', skillMd('my-skill'))], 'my-skill').evals).toBeNull();
    let error: unknown;
    try {
      validateBundle([file('SKILL.md', skillMd('my-skill')), file('evals/evals.json', evalsJson([{ ...good, checks: [{ type: 'regex', pattern: '[' }] }]))]);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(BundleError);
    expect((error as BundleError).field).toBe('evals.0.checks.0.pattern');
  });
});
