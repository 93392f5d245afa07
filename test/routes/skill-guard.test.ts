import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { EvalJob } from '../../durable-objects/SkillEval';
import { skills, skillVersionGuards } from '../../schema';
import { actorToKeep } from '../../workers/auth/actor';
import { parseId } from '../../workers/lib/ids';
import { shardDbFor } from '../helpers/shards';
import { call, expectError, sessionPrincipal, signUp, type TestUser } from '../helpers/api';
import { join } from '../helpers/members';

/**
 * The version guard on the built-in local model, whose answer shows the skill's steps under
 * "### Approach": case 1 checks for them, so a version whose instructions have no steps fails
 * it and scores below one that has them.
 */
const GOOD = {
  name: 'Release Notes',
  description: 'Writes release notes.',
  category: 'productivity',
  prompt: '# Release Notes Writer\n1. Group the changes by kind.\n2. Name breaking changes first.',
};
const WORSE = { ...GOOD, prompt: 'Be brief.' };
const BETTER = { ...GOOD, prompt: '# Release Notes Writer\n1. Group the changes by kind.\n2. Name breaking changes first.\n3. Thank contributors.' };

const CASES = [
  { id: 1, prompt: 'Write release notes for: fixed login bug. Added dark mode.', checks: [{ type: 'contains', value: 'approach', ignore_case: true }] },
  { id: 2, prompt: 'Write release notes for: faster search.', checks: [{ type: 'not_contains', value: 'lorem ipsum' }] },
];

const author = (user: TestUser, body: Record<string, unknown>) =>
  call('/api/v1/skills/release-notes', { method: 'PUT', token: user.token, body: { ...body, evals: CASES } });
const setGuard = (user: TestUser, enabled: boolean) =>
  call(`/api/v1/workspaces/${user.workspaceId}/skill-guard`, { method: 'PUT', token: user.token, body: { enabled } });
const promote = (user: TestUser, version: number) => call(`/api/v1/skills/release-notes/versions/${version}/promote`, { method: 'POST', token: user.token });

/** The version's guard record once its evals ended. */
async function decided(user: TestUser, version: number) {
  for (let i = 0; i < 150; i++) {
    const versions = (await call('/api/v1/skills/release-notes/versions', { token: user.token })).body as {
      versionNumber: number;
      guard: { status: string };
    }[];
    const guard = versions.find((v) => v.versionNumber === version)!.guard;
    if (guard.status !== 'evaluating') return guard;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`version ${version} was never decided`);
}

const current = async (user: TestUser) => (await call('/api/v1/skills/release-notes', { token: user.token })).body;

describe('the skill version guard', () => {
  it('is off until the owner turns it on; only the owner may', async () => {
    const owner = await signUp();
    const member = await join(owner, await signUp(), 'admin');
    expect((await call(`/api/v1/workspaces/${owner.workspaceId}/skill-guard`, { token: member.token })).body).toEqual({ enabled: false, updatedAt: null });
    expectError(await setGuard(member, true), 403, 'FORBIDDEN');
    // Off: a write is current at once.
    await author(owner, GOOD);
    const write = await author(owner, WORSE);
    expect(write.status).toBe(200);
    expect(write.body).toMatchObject({ versionNumber: 2 });
    expect(write.body.guard).toBeUndefined();
    const on = await setGuard(owner, true);
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ enabled: true, updatedAt: expect.any(String) });
  });

  it('refuses a version scoring below its predecessor and accepts one that does not', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    // The first version has no predecessor: it is current at once.
    expect((await author(owner, GOOD)).status).toBe(200);

    const worse = await author(owner, WORSE);
    expect(worse.status).toBe(202);
    // The record is still the current version; the new one waits for its eval.
    expect(worse.body).toMatchObject({ versionNumber: 1, prompt: GOOD.prompt });
    expect(worse.body.guard).toEqual({
      version: 2,
      status: 'evaluating',
      evalId: expect.stringMatching(/^eval_\d+$/),
      baselineEvalId: expect.stringMatching(/^eval_\d+$/),
      previousVersion: 1,
      passRate: null,
      required: null,
      note: null,
      decidedAt: null,
    });
    // Version 1 had no eval: the guard evaluates both, on version 1's cases.
    const { evalId, baselineEvalId } = worse.body.guard;
    expect(baselineEvalId).not.toBe(evalId);

    const refused = await decided(owner, 2);
    expect(refused).toMatchObject({ status: 'refused', passRate: 0.5, required: 1, note: "Its pass rate with the skill, 50%, is below version 1's 100%" });
    const mine = (await call(`/api/v1/skills/release-notes/evals/${evalId}`, { token: owner.token })).body;
    const theirs = (await call(`/api/v1/skills/release-notes/evals/${baselineEvalId}`, { token: owner.token })).body;
    expect(mine).toMatchObject({ versionNumber: 2, status: 'succeeded', passRateWith: 0.5 });
    expect(theirs).toMatchObject({ versionNumber: 1, status: 'succeeded', passRateWith: 1 });
    const details = await current(owner);
    expect(details.versionNumber).toBe(1);
    expect(details.heldVersions).toEqual([expect.objectContaining({ version: 2, status: 'refused', passRate: 0.5, required: 1 })]);
    // A restore would make it current without passing.
    expectError(await call('/api/v1/skills/release-notes/versions/2/restore', { method: 'POST', token: owner.token }), 409, 'CONFLICT');

    // Version 1's eval of these cases is reused: only the new version is evaluated.
    const better = await author(owner, BETTER);
    expect(better.status).toBe(202);
    expect(better.body.guard).toMatchObject({ version: 3, previousVersion: 1, baselineEvalId });
    expect(await decided(owner, 3)).toMatchObject({ status: 'accepted', passRate: 1, required: 1, note: null });
    expect(await current(owner)).toMatchObject({ versionNumber: 3, prompt: BETTER.prompt });

    const audit = (await call('/api/v1/audit-logs?resource_type=skill', { token: owner.token })).body.data as { action: string; metadata: object }[];
    expect(audit.find((e) => e.action === 'skill.version_refused')?.metadata).toEqual({ versionNumber: 2, evalId, baselineEvalId, passRate: 0.5, required: 1 });
    expect(audit.find((e) => e.action === 'skill.version_accepted')?.metadata).toMatchObject({ versionNumber: 3, passRate: 1, required: 1 });
  });

  it('lets the owner make a refused version current, audited with its numbers; not a member', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    await author(owner, GOOD);
    const member = await join(owner, await signUp(), 'member');
    const worse = await author(member, WORSE);
    expect(worse.status).toBe(202);
    await decided(owner, 2);

    expectError(await promote(member, 2), 403, 'FORBIDDEN');
    expectError(await promote(owner, 1), 409, 'CONFLICT');
    expectError(await promote(owner, 9), 404, 'NOT_FOUND');
    const promoted = await promote(owner, 2);
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ versionNumber: 2, prompt: WORSE.prompt, guard: { version: 2, status: 'overridden', passRate: 0.5, required: 1 } });
    expect((await current(owner)).heldVersions).toEqual([]);
    const [entry] = (await call('/api/v1/audit-logs?action=skill.version_promoted', { token: owner.token })).body.data;
    expect(entry.metadata).toMatchObject({
      versionNumber: 2,
      was: 'refused',
      evalId: worse.body.guard.evalId,
      eval: { status: 'succeeded', passRateWith: 0.5 },
      baseline: { status: 'succeeded', passRateWith: 1 },
      passRate: 0.5,
      required: 1,
    });
  });

  it('answers 404 to another workspace', async () => {
    const owner = await signUp();
    const other = await signUp();
    await setGuard(owner, true);
    await author(owner, GOOD);
    await author(owner, WORSE);
    await decided(owner, 2);
    expectError(await promote(other, 2), 404, 'NOT_FOUND');
    expectError(await call(`/api/v1/workspaces/${owner.workspaceId}/skill-guard`, { token: other.token }), 404, 'NOT_FOUND');
    expectError(await setGuard({ ...other, workspaceId: owner.workspaceId }, false), 404, 'NOT_FOUND');
    expect((await current(owner)).versionNumber).toBe(1);
  });

  it('decides a held version from the eval object’s alarm when the decision at the end did not save', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    await author(owner, GOOD);
    const { evalId } = (await author(owner, BETTER)).body.guard;
    expect((await decided(owner, 2)).status).toBe('accepted');
    // As if saving the decision had failed: the version is still evaluating, the job ended, its object kept it.
    const db = await shardDbFor(owner.workspaceId);
    await db.update(skillVersionGuards).set({ status: 'evaluating', decidedAt: null }).where(eq(skillVersionGuards.workspaceId, owner.workspaceId));
    await db
      .update(skills)
      .set({ activeVersionId: sql`(SELECT id FROM skill_versions WHERE skill_id = ${skills.id} AND version_number = 1)` })
      .where(eq(skills.workspaceId, owner.workspaceId));
    const job: Partial<EvalJob> = { evalId: parseId('eval', evalId)!, actor: actorToKeep(sessionPrincipal(owner)) };
    const stub = env.SKILL_EVAL.getByName(evalId);
    await runInDurableObject(stub, (_, state) => state.storage.put({ job, ended: true }).then(() => state.storage.setAlarm(Date.now())));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await decided(owner, 2)).toMatchObject({ status: 'accepted' });
    expect((await current(owner)).versionNumber).toBe(2);
    expect(await runInDurableObject(stub, (_, state) => state.storage.list().then((m) => m.size))).toBe(0);
  });
});
