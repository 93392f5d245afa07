import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { call, expectError, signUp, type TestUser } from '../helpers/api';
import { freezeClock, resetClock } from '../../workers/lib/clock';
import { seedArtifact, skillMd, zipOf } from '../helpers/skills';

/** A skill whose instructions the built-in local model shows in its answer (its heading and "Approach" steps). */
const SKILL = {
  name: 'Release Notes',
  description: 'Writes release notes.',
  category: 'productivity',
  prompt: '# Release Notes Writer\n1. Group the changes by kind.\n2. Name breaking changes first.',
};

const CASES = [
  {
    id: 1,
    prompt: 'Write release notes for: fixed login bug. Added dark mode.',
    expected_output: 'Release notes grouped by kind',
    checks: [
      { type: 'contains', value: 'approach', ignore_case: true },
      { type: 'regex', pattern: '^## Release Notes', flags: 'm' },
    ],
    expectations: ['The notes name the login fix'],
  },
  { id: 'no-lorem', prompt: 'Write release notes for: faster search.', checks: [{ type: 'not_contains', value: 'lorem ipsum' }] },
];

const author = (user: TestUser, slug: string, body: Record<string, unknown>) => call(`/api/v1/skills/${slug}`, { method: 'PUT', token: user.token, body });
const startEval = (user: TestUser, slug: string, body: Record<string, unknown> = {}) =>
  call(`/api/v1/skills/${slug}/evals/run`, { method: 'POST', token: user.token, body });

async function finished(user: TestUser, slug: string, id: string) {
  for (let i = 0; i < 150; i++) {
    const res = await call(`/api/v1/skills/${slug}/evals/${id}`, { token: user.token });
    expect(res.status).toBe(200);
    if (!['queued', 'running'].includes(res.body.status)) return res.body;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`eval ${id} never finished`);
}

describe('eval cases when authoring', () => {
  it('refuses cases that do not validate, pointing at the field', async () => {
    const user = await signUp();
    const bad = [CASES[0], { id: 2, prompt: 'x', checks: [{ type: 'regex', pattern: '(unclosed' }] }];
    const res = await author(user, 'release-notes', { ...SKILL, evals: bad });
    expectError(res, 400, 'INVALID_INPUT');
    expect(res.body.error.details.field).toBe('evals.1.checks.0.pattern');
    const none = await author(user, 'release-notes', { ...SKILL, evals: [{ id: 1, prompt: 'x' }] });
    expect(none.body.error.details.field).toBe('evals.0.expectations');
  });

  it('the skill says whether its active version carries cases', async () => {
    const user = await signUp();
    await author(user, 'release-notes', { ...SKILL, evals: CASES });
    expect((await call('/api/v1/skills/release-notes', { token: user.token })).body).toMatchObject({ versionNumber: 1, hasEvalCases: true, evals: [] });
    // A write that does not mention the cases keeps them; null leaves them out.
    await author(user, 'release-notes', { ...SKILL, prompt: `${SKILL.prompt}\n3. Keep it short.` });
    expect((await call('/api/v1/skills/release-notes', { token: user.token })).body).toMatchObject({ versionNumber: 2, hasEvalCases: true });
    await author(user, 'release-notes', { ...SKILL, evals: null });
    expect((await call('/api/v1/skills/release-notes', { token: user.token })).body).toMatchObject({ versionNumber: 3, hasEvalCases: false });
  });

  it('stores them in the bundle, versioned with the skill', async () => {
    const user = await signUp();
    const first = await author(user, 'release-notes', { ...SKILL, evals: CASES });
    expect(first.status).toBe(200);
    expect(first.body.filesCount).toBe(2);
    const manifest = (await (await env.BUCKET.get(first.body.storagePath))!.json()) as { files: { path: string; sha256: string }[] };
    const entry = manifest.files.find((f) => f.path === 'evals/evals.json')!;
    const stored = JSON.parse(await (await env.BUCKET.get(`blobs/${entry.sha256}`))!.text());
    expect(stored).toEqual({ skill_name: 'release-notes', evals: CASES });
    const second = await author(user, 'release-notes', { ...SKILL, evals: null });
    expect(second.body).toMatchObject({ versionNumber: 2, filesCount: 1 });
    // Version 2 has no cases; version 1 still has them.
    expectError(await startEval(user, 'release-notes'), 400, 'INVALID_INPUT');
    expect((await startEval(user, 'release-notes', { version: 1, budget: 0.01 })).status).toBe(202);
  });

  it('refuses a bundle whose evals.json does not validate, naming the field inside it', async () => {
    const user = await signUp();
    const evals = JSON.stringify({
      skill_name: 'bundled',
      evals: [{ id: 1, prompt: 'p', files: ['evals/files/missing.md'], checks: [{ type: 'contains', value: 'x' }] }],
    });
    const artifact = await seedArtifact(user.workspaceId, zipOf({ 'SKILL.md': skillMd('bundled'), 'evals/evals.json': evals }));
    const res = await call('/api/v1/skills/bundled/install', { method: 'POST', token: user.token, body: { artifactId: artifact.id } });
    expectError(res, 400, 'INVALID_INPUT');
    expect(res.body.error.details).toMatchObject({ field: 'evals.0.files.0', file: 'evals/evals.json' });
  });
});

describe('POST /api/v1/skills/:slug/evals/run', () => {
  it('runs each case with and without the skill, grades the runs, and charges them as ordinary executions', async () => {
    const user = await signUp();
    await author(user, 'release-notes', { ...SKILL, evals: CASES });
    const before = (await call('/api/v1/billing/balance', { token: user.token })).body.balance;
    const started = await startEval(user, 'release-notes', { repetitions: 2 });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({ id: expect.stringMatching(/^eval_\d+$/), status: 'queued' });

    const job = await finished(user, 'release-notes', started.body.id);
    expect(job).toMatchObject({ status: 'succeeded', provider: 'local', model: 'local-1', local: true, casesCount: 2, repetitions: 2, versionNumber: 1 });
    // Case 1's checks pass only with the skill (the local model shows the skill's heading and steps); case 2's pass either way.
    const [first, second] = job.cases;
    for (const run of first.runs) {
      expect(run.with).toMatchObject({ status: 'graded', passed: true, stopReason: 'end_turn' });
      expect(run.with.output).toContain('## Release Notes Writer');
      expect(run.without).toMatchObject({ status: 'graded', passed: false });
      expect(run.without.output).not.toContain('Release Notes Writer');
      expect(run.without.checks.map((c: { passed: boolean }) => c.passed)).toEqual([false, false]);
      expect(run.without.checks[0].detail).toContain('does not contain');
      // The local model does not grade expectations: they are reported, not counted.
      expect(run.with.expectations).toEqual([{ expectation: 'The notes name the login fix', passed: null, reasoning: expect.stringContaining('local model') }]);
    }
    expect(first).toMatchObject({ passRateWith: 1, passRateWithout: 0 });
    expect(second).toMatchObject({ passRateWith: 1, passRateWithout: 1 });
    expect(job).toMatchObject({ passRateWith: 1, passRateWithout: 0.5, difference: 0.5 });

    // Every run is an ordinary execution tagged with the eval, and the job's cost is exactly what they were charged.
    const history = (await call('/api/v1/executions?limit=50', { token: user.token })).body.items;
    const runs = history.filter((e: { evalId: string | null }) => e.evalId === started.body.id);
    expect(runs).toHaveLength(8);
    expect(runs.filter((e: { evalRole: string }) => e.evalRole === 'baseline')).toHaveLength(4);
    expect(runs.every((e: { status: string; skillSlug: string }) => e.status === 'completed' && e.skillSlug === 'release-notes')).toBe(true);
    const ids = job.cases.flatMap((c: { runs: { with: { executionId: string }; without: { executionId: string } }[] }) =>
      c.runs.flatMap((r) => [r.with.executionId, r.without.executionId]),
    );
    expect(new Set(ids)).toEqual(new Set(runs.map((e: { executionId: string }) => e.executionId)));
    const charged = runs.reduce((sum: number, e: { cost: number }) => sum + e.cost * 100, 0);
    expect(job.cost * 100).toBe(charged);
    expect(charged).toBeGreaterThan(0);
    const after = (await call('/api/v1/billing/balance', { token: user.token })).body.balance;
    expect(Math.round((before - after) * 100)).toBe(charged);

    // The skill shows its latest eval, labelled as a local run, and the list has it.
    const details = await call('/api/v1/skills/release-notes', { token: user.token });
    expect(details.body.evals).toEqual([
      expect.objectContaining({ id: started.body.id, versionNumber: 1, casesCount: 2, passRateWith: 1, passRateWithout: 0.5, model: 'local-1', local: true }),
    ]);
    const list = await call('/api/v1/skills/release-notes/evals', { token: user.token });
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([started.body.id]);
  });

  it('stops cleanly at its budget', async () => {
    const user = await signUp();
    await author(user, 'release-notes', { ...SKILL, evals: CASES });
    const started = await startEval(user, 'release-notes', { repetitions: 5, budget: 0.05 });
    const job = await finished(user, 'release-notes', started.body.id);
    expect(job).toMatchObject({ status: 'stopped', stopReason: 'budget', budget: 0.05 });
    // Runs start one at a time while some budget is left: only the last may pass it, by its last request's cost.
    const history = (await call('/api/v1/executions?limit=50', { token: user.token })).body.items as { evalId: string; cost: number }[];
    const costs = history.filter((e) => e.evalId === started.body.id).map((e) => Math.round(e.cost * 100));
    expect(costs.reduce((a, b) => a + b, 0)).toBe(Math.round(job.cost * 100));
    expect(costs.slice(1).reduce((a, b) => a + b, 0)).toBeLessThan(5);
    expect(job.cost).toBeGreaterThanOrEqual(0.05);
    const runs = job.cases.flatMap((c: { runs: { with: { status: string }; without: { status: string } }[] }) => c.runs.flatMap((r) => [r.with, r.without]));
    expect(runs.some((r: { status: string }) => r.status === 'skipped')).toBe(true);
    expect(runs.every((r: { status: string }) => r.status === 'graded' || r.status === 'skipped')).toBe(true);
  });

  it('is one request of the user: its runs take none of the user’s run starts a minute, however many were spent', async () => {
    const user = await signUp();
    await author(user, 'release-notes', { ...SKILL, evals: CASES });
    // One minute throughout, so a count spent here stays spent.
    freezeClock();
    try {
      const runs = env.RATE_LIMITER.getByName(`runs:user:${user.user.id}`);
      for (let i = 0; i < 19; i++) await runs.hit(20, 60_000);
      const job = await finished(user, 'release-notes', (await startEval(user, 'release-notes')).body.id);
      // Every run started and was graded: none was refused a start (what it passed is not this test's).
      expect(job.status).toBe('succeeded');
      const evalRuns = job.cases.flatMap((c: { runs: { with: { status: string }; without: { status: string } }[] }) =>
        c.runs.flatMap((r) => [r.with, r.without]),
      );
      expect(evalRuns.map((r: { status: string }) => r.status)).toEqual(Array(CASES.length * 2).fill('graded'));
      // Its four runs took none of the minute: the user's own 20th start goes, the 21st does not.
      const own = await call('/api/v1/skills/release-notes/run', { token: user.token, body: { input: 'Write release notes for: faster search.' } });
      expect(own.status).toBe(200);
      const limited = await call('/api/v1/skills/release-notes/run', { token: user.token, body: { input: 'One too many.' } });
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ error: 'RATE_LIMITED' });
    } finally {
      resetClock();
    }
  });

  it('answers 404 for another workspace’s eval, and refuses a provider that is not the one runs use', async () => {
    const owner = await signUp();
    const other = await signUp();
    await author(owner, 'release-notes', { ...SKILL, evals: CASES });
    await author(other, 'release-notes', { ...SKILL, evals: CASES });
    const started = await startEval(owner, 'release-notes', { budget: 0.01 });
    expectError(await call(`/api/v1/skills/release-notes/evals/${started.body.id}`, { token: other.token }), 404, 'NOT_FOUND');
    expect((await call('/api/v1/skills/release-notes/evals', { token: other.token })).body.data).toEqual([]);
    const refused = await startEval(owner, 'release-notes', { provider: 'anthropic' });
    expectError(refused, 400, 'INVALID_INPUT');
    expect(refused.body.error.details.field).toBe('provider');
  });
});

describe('grading expectations with a model', () => {
  it('keeps the grader’s verdict and reasoning for each expectation, and grades both sides the same way', async () => {
    const user = await signUp();
    // The user's own OpenAI key reaches the fixture's scripted model (test/setup/eval-model.ts).
    expect((await call('/api/v1/byok', { method: 'PUT', token: user.token, body: { key: inject('modelKeys').byok } })).status).toBe(200);
    const cases = [
      {
        id: 'steps',
        prompt: '[eval] list the release steps',
        checks: [{ type: 'contains', value: 'Checklist' }],
        expectations: ["The answer says 'Checklist'", "The answer names the 'release steps'"],
      },
      { id: 'greeting', prompt: '[eval] say hi', expectations: ["It says 'hi'"] },
    ];
    await author(user, 'release-notes', { ...SKILL, evals: cases });
    const started = await startEval(user, 'release-notes');
    const job = await finished(user, 'release-notes', started.body.id);
    expect(job).toMatchObject({ status: 'succeeded', provider: 'openai', local: false, passRateWith: 1, passRateWithout: 0.5, difference: 0.5 });

    const [steps, greeting] = job.cases;
    expect(steps.runs[0].with).toMatchObject({
      output: 'Checklist: list the release steps',
      passed: true,
      expectations: [
        { expectation: "The answer says 'Checklist'", passed: true, reasoning: "The output contains 'Checklist'." },
        { expectation: "The answer names the 'release steps'", passed: true, reasoning: "The output contains 'release steps'." },
      ],
    });
    expect(steps.runs[0].without).toMatchObject({
      output: 'Sure: list the release steps',
      passed: false,
      checks: [{ passed: false, detail: 'does not contain "Checklist"' }],
      expectations: [
        { passed: false, reasoning: "The output lacks 'Checklist'." },
        { passed: true, reasoning: "The output contains 'release steps'." },
      ],
    });
    expect(greeting).toMatchObject({ passRateWith: 1, passRateWithout: 1 });

    // Each graded run had its own grading run, an execution tagged as the eval's grader.
    const history = (await call('/api/v1/executions?limit=50', { token: user.token })).body.items as {
      executionId: string;
      evalId: string;
      evalRole: string;
    }[];
    const graders = history.filter((e) => e.evalId === started.body.id && e.evalRole === 'grader').map((e) => e.executionId);
    expect(graders.sort()).toEqual(
      [steps.runs[0].with, steps.runs[0].without, greeting.runs[0].with, greeting.runs[0].without].map((r) => r.graderExecutionId).sort(),
    );
  });
});
