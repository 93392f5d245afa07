import { describe, expect, it } from 'vitest';
import { call, expectError, signUp, type TestUser } from '../helpers/api';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

/** Resume data checked against the suspended step's resumeSchema; what branches do with a missing value. */

const approve = (metadata: Record<string, unknown>) => ({
  type: 'tool',
  id: 'approve',
  toolId: 'human-input',
  options: { metadata: { prompt: 'Ship it?', ...metadata } },
});
const at = (path: string) => ({ path });
const lit = (literal: unknown) => ({ literal });

/** One branch per operator on `stepResults.approve.approved`: each branch's step id says which held. */
const branches = {
  type: 'conditional',
  id: 'decide',
  steps: ['when-eq', 'when-ne', 'when-lt', 'when-in', 'when-not-in', 'when-exists', 'when-not-exists', 'when-falsy'].map((id) => ({
    type: 'sleep',
    id,
    duration: 0,
  })),
  predicates: [
    { op: 'eq', left: at('stepResults.approve.approved'), right: lit(true) },
    { op: 'ne', left: at('stepResults.approve.approved'), right: lit(true) },
    { op: 'lt', left: at('stepResults.approve.approved'), right: lit(1) },
    { op: 'in', value: at('stepResults.approve.approved'), set: lit([true, false]) },
    { op: 'notIn', value: at('stepResults.approve.approved'), set: lit([true, false]) },
    { op: 'exists', path: 'stepResults.approve.approved' },
    { op: 'notExists', path: 'stepResults.approve.approved' },
    { op: 'falsy', value: at('stepResults.approve.approved') },
  ],
};

async function suspended(user: TestUser, metadata: Record<string, unknown> = {}) {
  await install(user, 'ship', definition('ship', [approve(metadata), branches, mapping('done', { ok: { value: true } })]));
  const runId = await launch(user, 'ship');
  await waitForRun(user, runId, ['suspended']);
  return runId;
}

const resume = (user: TestUser, runId: string, body: unknown) => call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body });
const ranBranches = (steps: Record<string, unknown>) =>
  Object.keys(steps)
    .filter((id) => id.startsWith('when-'))
    .sort();

describe('resume data and the resumeSchema of a human-input step', () => {
  const resumeSchema = { type: 'object', required: ['approved'], properties: { approved: { type: 'boolean' }, note: { type: 'string' } } };

  it('refuses data that does not satisfy it with 400 INVALID_INPUT naming the field, and the run stays suspended', async () => {
    const user = await signUp();
    const runId = await suspended(user, { resumeSchema });
    for (const [body, field] of [
      [{}, 'resumeData'],
      [{ resumeData: {} }, 'resumeData.approved'],
      [{ resumeData: { approved: 'yes' } }, 'resumeData.approved'],
      [{ resumeData: { approved: true, note: 7 } }, 'resumeData.note'],
    ] as const) {
      const error = expectError(await resume(user, runId, body), 400, 'INVALID_INPUT');
      expect({ body, field: error.details?.field, rule: error.details?.rule, stepId: error.details?.stepId }).toEqual({
        body,
        field,
        rule: 'resume_schema',
        stepId: 'approve',
      });
    }
    expect((await call(`/api/v1/workflows/runs/${runId}`, { token: user.token })).body.run.status).toBe('suspended');

    expect((await resume(user, runId, { resumeData: { approved: true } })).body).toEqual({ runId, status: 'running' });
    const { run, steps } = await waitForRun(user, runId, ['success', 'failed']);
    expect(run.status).toBe('success');
    expect(ranBranches(steps)).toEqual(['when-eq', 'when-exists', 'when-in']);
  });

  it('shows the schema in the suspended snapshot, and refuses one that is not a JSON Schema at install', async () => {
    const user = await signUp();
    const runId = await suspended(user, { resumeSchema });
    const { run } = await waitForRun(user, runId, ['suspended']);
    expect(run.snapshot.suspended.approve.metadata.resumeSchema).toEqual(resumeSchema);
    const refused = await call('/api/v1/workflows/bad/install', {
      token: user.token,
      body: definition('bad', [approve({ resumeSchema: { type: 'nonsense' } })]),
    });
    expect(expectError(refused, 400, 'INVALID_INPUT').details?.field).toMatch(/^graph\.0\.options\.metadata\.resumeSchema/);
  });

  it('the same refusal through the AI SDK stream route', async () => {
    const user = await signUp();
    const runId = await suspended(user, { resumeSchema });
    const res = await call('/api/v1/workflows/ship/stream', { token: user.token, body: { runId, resumeData: { approved: 1 } } });
    expect(expectError(res, 400, 'INVALID_INPUT').details?.field).toBe('resumeData.approved');
  });
});

describe('a missing value in branch predicates (resumed without the field, no resumeSchema)', () => {
  it('makes every comparison false, eq and ne alike, and notIn, notExists and falsy true', async () => {
    const user = await signUp();
    const runId = await suspended(user);
    expect((await resume(user, runId, {})).status).toBe(200);
    const { run, steps } = await waitForRun(user, runId, ['success', 'failed']);
    expect(run.status).toBe('success');
    expect(ranBranches(steps)).toEqual(['when-falsy', 'when-not-exists', 'when-not-in']);
  });
});
