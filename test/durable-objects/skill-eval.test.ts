import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { skillEvals } from '../../schema';
import { actorToKeep } from '../../workers/auth/actor';
import { formatId } from '../../workers/lib/ids';
import { startEvalRun } from '../../workers/services/executions';
import type { EvalJob } from '../../durable-objects/SkillEval';
import type { EvalUnit } from '../../workers/services/eval-report';
import { call, sessionPrincipal, signUp } from '../helpers/api';
import { shardDbFor } from '../helpers/shards';

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\n1. List the decisions.' };
const CASE = { id: 1, prompt: 'Summarise: we ship on Friday.', checks: [{ type: 'contains' as const, value: '## Notes' }] };

describe('SkillEval after a restart', () => {
  it('adopts the run a cut-off start had begun instead of starting it again', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: { ...SKILL, evals: [CASE] } });
    const [version] = (await call('/api/v1/skills/notes/versions', { token: user.token })).body;
    const principal = sessionPrincipal(user);
    const db = await shardDbFor(user.workspaceId);
    const [row] = await db
      .insert(skillEvals)
      .values({
        workspaceId: user.workspaceId,
        skillId: version.skillId,
        skillSlug: 'notes',
        skillVersionId: version.id,
        versionNumber: 1,
        userId: user.user.id,
        status: 'queued',
        provider: 'local',
        model: 'local-1',
        repetitions: 1,
        casesCount: 1,
        casesChecksum: '',
        createdAt: Date.now(),
      })
      .returning();
    const job: EvalJob = {
      evalId: row!.id,
      actor: actorToKeep(principal),
      slug: 'notes',
      name: 'Notes',
      skillVersionId: version.id,
      cases: [CASE],
      inputs: [CASE.prompt],
      repetitions: 1,
      budget: null,
      grade: false,
    };
    const units: EvalUnit[] = [
      { n: 0, caseIndex: 0, repetition: 1, role: 'skill', phase: 'starting' },
      { n: 1, caseIndex: 0, repetition: 1, role: 'baseline', phase: 'pending' },
    ];
    const stub = env.SKILL_EVAL.getByName(formatId('eval', row!.id));
    // The object stored the unit as starting, started its run, and was cut off before it stored the run's id.
    await runInDurableObject(stub, (_, state) => state.storage.put({ job, 'unit:0': units[0], 'unit:1': units[1] }));
    const cutOff = await startEvalRun(db, env, principal, {
      evalId: row!.id,
      role: 'skill',
      slug: 'notes',
      name: 'Notes',
      skillVersionId: version.id,
      input: CASE.prompt,
    });
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));

    let evaluation = (await call(`/api/v1/skills/notes/evals/${formatId('eval', row!.id)}`, { token: user.token })).body;
    for (let i = 0; i < 100 && ['queued', 'running'].includes(evaluation.status); i++) {
      await new Promise((r) => setTimeout(r, 200));
      evaluation = (await call(`/api/v1/skills/notes/evals/${formatId('eval', row!.id)}`, { token: user.token })).body;
    }
    expect(evaluation).toMatchObject({ status: 'succeeded', passRateWith: 1, passRateWithout: 0 });
    expect(evaluation.cases[0].runs[0].with.executionId).toBe(formatId('exec', cutOff));
    const history = (await call('/api/v1/executions?limit=20', { token: user.token })).body.items as { evalId: string | null; evalRole: string }[];
    expect(
      history
        .filter((e) => e.evalId === formatId('eval', row!.id))
        .map((e) => e.evalRole)
        .sort(),
    ).toEqual(['baseline', 'skill']);
  });
});
