import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { EvalJob } from '../../durable-objects/SkillEval';
import { skills, skillVersionGuards } from '../../schema';
import { actorToKeep } from '../../workers/auth/actor';
import { parseId } from '../../workers/lib/ids';
import { writeAuthoredSkill } from '../../workers/services/skill-writes';
import { AuthorSkillBody } from '../../workers/services/skills';
import { shardDbFor } from '../helpers/shards';
import { call, expectError, sessionPrincipal, signUp, type TestUser } from '../helpers/api';
import { join } from '../helpers/members';
import { catalogEntry, seedArtifact, seedCatalog, skillMd, zipOf } from '../helpers/skills';

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
const restore = (user: TestUser, version: number) => call(`/api/v1/skills/release-notes/versions/${version}/restore`, { method: 'POST', token: user.token });

/** The version's guard record once its evals ended. */
async function decided(user: TestUser, version: number, slug = 'release-notes') {
  for (let i = 0; i < 150; i++) {
    const versions = (await call(`/api/v1/skills/${slug}/versions`, { token: user.token })).body as {
      versionNumber: number;
      guard: { status: string };
    }[];
    const guard = versions.find((v) => v.versionNumber === version)!.guard;
    if (guard.status !== 'evaluating') return guard;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`version ${version} was never decided`);
}

const current = async (user: TestUser, slug = 'release-notes') => (await call(`/api/v1/skills/${slug}`, { token: user.token })).body;

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

  it('holds a restore of a version that did not pass its eval like a write, and restores one that passed at once', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    await author(owner, GOOD);
    await author(owner, WORSE);
    // Being evaluated: its eval decides it, not a restore.
    expectError(await restore(owner, 2), 409, 'CONFLICT');
    expect((await decided(owner, 2)).status).toBe('refused');
    await author(owner, BETTER);
    expect((await decided(owner, 3)).status).toBe('accepted');
    const three = await current(owner);

    // Version 2 failed its eval: restoring it is measured again, against the current version.
    const again = await restore(owner, 2);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({
      restoredFrom: 2,
      skill: { slug: 'release-notes', contentChecksum: three.contentChecksum },
      guard: { version: 4, status: 'evaluating', previousVersion: 3 },
    });
    expect(await decided(owner, 4)).toMatchObject({ status: 'refused', passRate: 0.5, required: 1 });
    expect(await current(owner)).toMatchObject({ versionNumber: 3, prompt: BETTER.prompt });

    // Version 1 was never measured by the guard: held too, and accepted, as it scores as well.
    const first = await restore(owner, 1);
    expect(first.status).toBe(202);
    expect(first.body.guard).toMatchObject({ version: 5, previousVersion: 3 });
    expect(await decided(owner, 5)).toMatchObject({ status: 'accepted', passRate: 1, required: 1 });
    expect(await current(owner)).toMatchObject({ versionNumber: 5, prompt: GOOD.prompt });

    // Version 3 passed its eval: it is restored at once.
    const passed = await restore(owner, 3);
    expect(passed.status).toBe(200);
    expect(passed.body.guard).toBeUndefined();
    expect(await current(owner)).toMatchObject({ versionNumber: 6, prompt: BETTER.prompt });

    // With the guard off nothing is measured, and a refused version stays the owner's to promote.
    await setGuard(owner, false);
    expectError(await restore(owner, 4), 409, 'CONFLICT');
  });

  it('restores a refused version whose content is current already at once, as a new version, guard on or off', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    await author(owner, GOOD);
    await author(owner, WORSE);
    expect((await decided(owner, 2)).status).toBe('refused');
    // The same content written again with the guard off is current as version 3.
    await setGuard(owner, false);
    await author(owner, WORSE);
    for (const [guardEnabled, version] of [
      [true, 4],
      [false, 5],
    ] as const) {
      await setGuard(owner, guardEnabled);
      const res = await restore(owner, 2);
      expect({ status: res.status, body: res.body }, `guard ${guardEnabled}`).toEqual({
        status: 200,
        body: { success: true, restoredFrom: 2, skill: { slug: 'release-notes', contentChecksum: expect.any(String) } },
      });
      expect(await current(owner)).toMatchObject({ versionNumber: version, prompt: WORSE.prompt });
    }
  });

  it('holds an update from the marketplace or a bundle over a guarded version until its eval passes', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    const slug = `guarded-${crypto.randomUUID().slice(0, 8)}`;
    const extra = { 'evals/evals.json': JSON.stringify({ skill_name: slug, evals: CASES }) };
    const install = (body?: object) => call(`/api/v1/skills/${slug}/install`, { method: 'POST', token: owner.token, ...(body ? { body } : {}) });
    await seedCatalog([catalogEntry(slug, { body: GOOD.prompt, extra })]);
    // The first install has nothing to replace; installing it again changes nothing.
    expect(await install()).toMatchObject({ status: 200, body: { versionNumber: 1 } });
    expect(await install()).toMatchObject({ status: 200, body: { versionNumber: 1 } });

    const OLD = 'c0ffee0000000000000000000000000000000000';
    const NEW = 'c0ffee1111111111111111111111111111111111';
    await seedCatalog([catalogEntry(slug, { body: WORSE.prompt, extra, commitHash: NEW })]);
    const update = await install();
    expect(update.status).toBe(202);
    // The skill shows the current version's commit; the held one carries its own.
    expect(update.body).toMatchObject({
      versionNumber: 1,
      prompt: GOOD.prompt,
      commitHash: OLD,
      guard: { version: 2, status: 'evaluating', previousVersion: 1 },
    });
    expect(await current(owner, slug)).toMatchObject({ versionNumber: 1, commitHash: OLD });
    const listed = (await call(`/api/v1/skills/${slug}/versions`, { token: owner.token })).body;
    expect(listed.map((v: { versionNumber: number; commitHash: string }) => [v.versionNumber, v.commitHash])).toEqual([
      [2, NEW],
      [1, OLD],
    ]);
    expect(await decided(owner, 2, slug)).toMatchObject({ status: 'refused', passRate: 0.5, required: 1 });
    expect(await current(owner, slug)).toMatchObject({ versionNumber: 1, prompt: GOOD.prompt, commitHash: OLD });

    // A bundle of a version as good, uploaded as an artifact: held, then accepted.
    const artifact = await seedArtifact(owner.workspaceId, zipOf({ 'SKILL.md': skillMd(slug, { body: BETTER.prompt }), ...extra }));
    const upload = await install({ artifactId: artifact.id });
    expect(upload.status).toBe(202);
    expect(upload.body).toMatchObject({ source: 'catalog', commitHash: OLD, guard: { version: 3, previousVersion: 1 } });
    expect(await decided(owner, 3, slug)).toMatchObject({ status: 'accepted' });
    const accepted = await current(owner, slug);
    expect(accepted).toMatchObject({ versionNumber: 3, prompt: BETTER.prompt, source: 'artifact' });
    expect(accepted).not.toHaveProperty('commitHash');

    // The owner's promote of the refused update brings its commit with it.
    const promoted = await call(`/api/v1/skills/${slug}/versions/2/promote`, { method: 'POST', token: owner.token });
    expect(promoted.body).toMatchObject({ versionNumber: 2, source: 'catalog', commitHash: NEW });
    expect(await current(owner, slug)).toMatchObject({ versionNumber: 2, source: 'catalog', commitHash: NEW });
  });

  it('reads the current version’s bundle once for a guarded write', async () => {
    const owner = await signUp();
    await setGuard(owner, true);
    const first = (await author(owner, GOOD)).body;
    const reads: string[] = [];
    const bucket = new Proxy(env.BUCKET, {
      get(target, prop) {
        if (prop === 'get')
          return (key: string, options?: R2GetOptions) => {
            reads.push(key);
            return target.get(key, options);
          };
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const db = await shardDbFor(owner.workspaceId);
    // Without `evals` the write keeps the current version's eval files, which the guard measures too.
    const written = await writeAuthoredSkill(
      db,
      { ...env, BUCKET: bucket },
      sessionPrincipal(owner),
      'release-notes',
      AuthorSkillBody.parse(BETTER),
      undefined,
    );
    expect(written.guard).toMatchObject({ version: 2, status: 'evaluating' });
    expect(reads.filter((key) => key === first.storagePath)).toHaveLength(1);
    expect(await decided(owner, 2)).toMatchObject({ status: 'accepted' });
    expect(await current(owner)).toMatchObject({ versionNumber: 2, hasEvalCases: true });
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
