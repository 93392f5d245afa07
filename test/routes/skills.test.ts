import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser } from '../helpers/api';
import { loadBundle } from '../../workers/lib/bundle-store';
import { catalogEntry, seedArtifact, seedCatalog, seedRunningExecution, skillMd, zipOf } from '../helpers/skills';

beforeAll(async () => {
  await seedCatalog([
    catalogEntry('code-reviewer', { title: 'Code Reviewer', extra: { 'references/checklist.md': '# Checklist\n' } }),
    catalogEntry('sql-explainer', { title: 'SQL Explainer' }),
  ]);
});

const install = (user: TestUser, slug: string, body?: unknown) => call(`/api/v1/skills/${slug}/install`, { method: 'POST', token: user.token, body });
const versions = (user: TestUser, slug: string) => call(`/api/v1/skills/${slug}/versions`, { token: user.token });
const author = (user: TestUser, slug: string, body: Record<string, unknown>) => call(`/api/v1/skills/${slug}`, { method: 'PUT', token: user.token, body });
const authored = { name: 'Standup Bot', description: 'Writes standups.', category: 'productivity', prompt: 'You write standups.' };
/** A stored version's files as text, by path. */
const texts = async (storagePath: string) =>
  Object.fromEntries(((await loadBundle(env.BUCKET, storagePath)) ?? []).map((f) => [f.path, new TextDecoder().decode(f.bytes)]));

describe('POST /api/v1/skills/:slug/install', () => {
  it('installs a catalog skill and answers the flat install record', async () => {
    const user = await signUp();
    const res = await install(user, 'code-reviewer');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      name: 'Code Reviewer',
      slug: 'code-reviewer',
      description: 'Does code-reviewer things.',
      category: 'development',
      prompt: 'You are the code-reviewer skill.',
      repository: 'https://git.example.test/team/skills',
      commitHash: 'c0ffee0000000000000000000000000000000000',
      source: 'catalog',
      versionNumber: 1,
      contentChecksum: expect.stringMatching(/^[0-9a-f]{64}$/),
      bundleType: 'agent-skills',
      storagePath: expect.stringMatching(/^manifests\/[0-9a-f]{64}\.json$/),
      filesCount: 2,
    });
    expect(await env.BUCKET.head(res.body.storagePath)).not.toBeNull();
  });

  it('takes no body, an empty body, or display overrides', async () => {
    const user = await signUp();
    const bare = await call('/api/v1/skills/code-reviewer/install', { method: 'POST', token: user.token });
    expect(bare.status).toBe(200);
    const empty = await call('/api/v1/skills/sql-explainer/install', { method: 'POST', token: user.token, rawBody: '' });
    expect(empty.status).toBe(200);
    const renamed = await install(user, 'sql-explainer', { name: 'My SQL Helper', category: 'research' });
    expect(renamed.body).toMatchObject({ name: 'My SQL Helper', category: 'research', versionNumber: 2 });
  });

  it('adds a version when the catalog content changed, and none when it did not', async () => {
    const user = await signUp();
    await seedCatalog([catalogEntry('evolving-skill', { body: 'First wording.' })]);
    const first = await install(user, 'evolving-skill');
    const again = await install(user, 'evolving-skill');
    expect(again.body.versionNumber).toBe(1);
    await seedCatalog([catalogEntry('evolving-skill', { body: 'Second wording.' })]);
    const updated = await install(user, 'evolving-skill');
    expect(updated.body).toMatchObject({ versionNumber: 2, prompt: 'Second wording.' });
    expect(updated.body.contentChecksum).not.toBe(first.body.contentChecksum);
    expect((await versions(user, 'evolving-skill')).body.map((v: { versionNumber: number }) => v.versionNumber)).toEqual([2, 1]);
  });

  it('answers 404 for a skill that is not in the marketplace', async () => {
    const user = await signUp();
    expectError(await install(user, 'not-in-catalog'), 404, 'NOT_FOUND');
  });

  it('answers 429 EXECUTION_RUNNING with isRunning while an execution runs', async () => {
    const user = await signUp();
    await seedRunningExecution(user.workspaceId, user.user.id);
    const res = await install(user, 'code-reviewer');
    expectError(res, 429, 'EXECUTION_RUNNING');
    expect(res.body.isRunning).toBe(true);
    expect((await call('/api/v1/skills', { token: user.token })).body).toEqual([]);
  });

  it('installs from an artifact bundle of the workspace, and only of the workspace', async () => {
    const user = await signUp();
    const other = await signUp();
    const zip = zipOf({ 'my-bundle/SKILL.md': skillMd('zipped-skill', { title: 'Zipped' }), 'my-bundle/assets/t.md': '# T' });
    const artifact = await seedArtifact(user.workspaceId, zip);
    const res = await install(user, 'zipped-skill', { artifactId: artifact.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: 'zipped-skill', name: 'Zipped', source: 'artifact', filesCount: 2 });
    expect(res.body).not.toHaveProperty('repository');

    expectError(await install(other, 'zipped-skill', { artifactId: artifact.id }), 404, 'NOT_FOUND');
    const notABundle = await seedArtifact(user.workspaceId, zipOf({ 'notes.txt': 'hello' }));
    const error = expectError(await install(user, 'zipped-skill', { artifactId: notABundle.id }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'bundle', rule: 'missing_skill_md' });
    const mismatch = expectError(await install(user, 'other-name', { artifactId: artifact.id }), 400, 'INVALID_INPUT');
    expect(mismatch.details?.rule).toBe('name_mismatch');
  });

  it('installs from another registry after checking the bundle against its checksum', async () => {
    const user = await signUp();
    const registry = inject('fixtureOrigin');
    const res = await install(user, 'remote-skill', { registry });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      slug: 'remote-skill',
      source: 'registry',
      repository: 'https://git.example.test/fixtures/skills',
      commitHash: inject('fixtureCommit'),
      filesCount: 2,
    });
    const tampered = expectError(await install(user, 'tampered-skill', { registry }), 400, 'INVALID_INPUT');
    expect(tampered.details).toMatchObject({ field: 'registry', rule: 'checksum_mismatch' });
    expectError(await install(user, 'missing-skill', { registry }), 400, 'INVALID_INPUT');
    const insecure = expectError(await install(user, 'remote-skill', { registry: 'http://registry.example.test' }), 400, 'INVALID_INPUT');
    expect(insecure.details?.rule).toBe('https');
  });
});

describe('GET /api/v1/skills', () => {
  it('answers a bare array, or a page with limit', async () => {
    const user = await signUp();
    await install(user, 'code-reviewer');
    await install(user, 'sql-explainer');
    await author(user, 'standup-bot', authored);
    const bare = await call('/api/v1/skills', { token: user.token });
    expect(bare.body.map((s: { slug: string }) => s.slug)).toEqual(['code-reviewer', 'sql-explainer', 'standup-bot']);
    expect(bare.body[2]).not.toHaveProperty('repository');
    expect(bare.body[2]).not.toHaveProperty('commitHash');
    expect(bare.body[0]).not.toHaveProperty('storagePath');

    const page = await call('/api/v1/skills?limit=2&offset=1', { token: user.token });
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 1, hasMore: false });
    expect(page.body.items.map((s: { slug: string }) => s.slug)).toEqual(['sql-explainer', 'standup-bot']);
    expect((await call('/api/v1/skills?limit=1', { token: user.token })).body.hasMore).toBe(true);
  });

  it('shows nothing of other workspaces and needs library:read', async () => {
    const user = await signUp();
    const other = await signUp();
    await install(other, 'code-reviewer');
    expect((await call('/api/v1/skills', { token: user.token })).body).toEqual([]);
    const key = await createKey(user, ['profile:read']);
    expect(expectError(await call('/api/v1/skills', { apiKey: key.key }), 403, 'FORBIDDEN').details).toEqual({ scope: 'library:read' });
  });
});

describe('PUT /api/v1/skills/:slug (authoring)', () => {
  it('creates version 1, then adds a version on every write; same content, same checksum', async () => {
    const user = await signUp();
    const first = await author(user, 'standup-bot', authored);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ slug: 'standup-bot', source: 'authored', versionNumber: 1, name: 'Standup Bot' });
    const second = await author(user, 'standup-bot', authored);
    expect(second.body.versionNumber).toBe(2);
    expect(second.body.contentChecksum).toBe(first.body.contentChecksum);
    const third = await author(user, 'standup-bot', { ...authored, prompt: 'You write better standups.', note: 'tighter' });
    expect(third.body.contentChecksum).not.toBe(first.body.contentChecksum);

    const list = await versions(user, 'standup-bot');
    expect(list.body.map((v: { versionNumber: number }) => v.versionNumber)).toEqual([3, 2, 1]);
    expect(list.body.filter((v: { active: boolean }) => v.active)).toHaveLength(1);
    expect(list.body[0]).toMatchObject({ active: true, note: 'tighter', createdBy: user.user.id, workspaceId: user.workspaceId });
  });

  it.each([
    [{ ...authored, category: 'cooking' }, 'category'],
    [{ ...authored, prompt: '' }, 'prompt'],
    [{ name: 'x' }, 'description'],
  ])('rejects %# with 400 naming the field', async (body, field) => {
    const user = await signUp();
    expect(expectError(await author(user, 'standup-bot', body), 400, 'INVALID_INPUT').details?.field).toBe(field);
  });

  it('rejects a slug outside the Agent Skills name rules', async () => {
    const user = await signUp();
    expect(expectError(await author(user, 'Not_Valid', authored), 400, 'INVALID_INPUT').details?.field).toBe('slug');
  });

  it('authors slugs that YAML would read as something else than a string', async () => {
    const user = await signUp();
    for (const slug of ['0', '1e3', 'true', 'null']) {
      const res = await author(user, slug, authored);
      expect(res.status, `${slug}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.slug).toBe(slug);
    }
  });

  it('turns a catalog skill into the user’s own, without repository or commit', async () => {
    const user = await signUp();
    await install(user, 'code-reviewer');
    const res = await author(user, 'code-reviewer', { ...authored, name: 'My Reviewer' });
    expect(res.body).toMatchObject({ source: 'authored', versionNumber: 2 });
    expect(res.body).not.toHaveProperty('repository');
  });

  it('keeps an installed skill’s other files when its instructions are written, and restores a version with its own', async () => {
    const user = await signUp();
    const v1 = (await install(user, 'code-reviewer')).body;
    const written = await author(user, 'code-reviewer', { ...authored, prompt: 'Review with the checklist in references/checklist.md.' });
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ versionNumber: 2, filesCount: 2, prompt: 'Review with the checklist in references/checklist.md.' });
    expect(await texts(written.body.storagePath)).toEqual({
      'SKILL.md': expect.stringContaining('Review with the checklist'),
      'references/checklist.md': '# Checklist\n',
    });
    expect((await call('/api/v1/skills/code-reviewer', { token: user.token })).body).toMatchObject({ versionNumber: 2, filesCount: 2 });

    // A restore brings back the old version's files and where they came from.
    expect((await call('/api/v1/skills/code-reviewer/versions/1/restore', { method: 'POST', token: user.token })).status).toBe(200);
    const restored = (await call('/api/v1/skills/code-reviewer', { token: user.token })).body;
    expect(restored).toMatchObject({
      versionNumber: 3,
      contentChecksum: v1.contentChecksum,
      filesCount: 2,
      source: 'catalog',
      repository: v1.repository,
      commitHash: v1.commitHash,
    });
    const list = (await versions(user, 'code-reviewer')).body;
    expect(list.map((v: { versionNumber: number; source: string; filesCount: number }) => [v.versionNumber, v.source, v.filesCount])).toEqual([
      [3, 'catalog', 2],
      [2, 'authored', 2],
      [1, 'catalog', 2],
    ]);
    expect(list[1]).toMatchObject({ repository: null, commitHash: null });
  });

  it('keeps a bundle’s files beside SKILL.md; its cases go only with evals: null', async () => {
    const user = await signUp();
    const cases = [{ id: 1, prompt: 'Summarise the notes.', files: ['evals/files/notes.md'], checks: [{ type: 'contains', value: 'notes' }] }];
    const bundle = {
      'SKILL.md': skillMd('bundled-skill'),
      'references/style.md': '# Style\n',
      'scripts/check.sh': 'echo ok\n',
      'evals/evals.json': JSON.stringify({ skill_name: 'bundled-skill', evals: cases }),
      'evals/files/notes.md': 'The notes.\n',
    };
    const artifact = await seedArtifact(user.workspaceId, zipOf(bundle));
    expect((await install(user, 'bundled-skill', { artifactId: artifact.id })).body).toMatchObject({ source: 'artifact', filesCount: 5 });

    const kept = await author(user, 'bundled-skill', authored);
    expect(Object.keys(await texts(kept.body.storagePath)).sort()).toEqual(Object.keys(bundle).sort());
    const newCases = await author(user, 'bundled-skill', { ...authored, evals: [{ ...cases[0], prompt: 'Summarise these notes.' }] });
    const withNew = await texts(newCases.body.storagePath);
    expect(Object.keys(withNew).sort()).toEqual(Object.keys(bundle).sort());
    expect(JSON.parse(withNew['evals/evals.json']!).evals[0].prompt).toBe('Summarise these notes.');
    const dropped = await author(user, 'bundled-skill', { ...authored, evals: null });
    expect(Object.keys(await texts(dropped.body.storagePath)).sort()).toEqual(['SKILL.md', 'references/style.md', 'scripts/check.sh']);
  });

  it('writes nothing when the current version’s files cannot be read', async () => {
    const user = await signUp();
    const first = await author(user, 'standup-bot', { ...authored, prompt: `You write standups (${crypto.randomUUID()}).` });
    await env.BUCKET.delete(first.body.storagePath);
    expectError(await author(user, 'standup-bot', authored), 500, 'INTERNAL_ERROR');
    expect((await versions(user, 'standup-bot')).body).toHaveLength(1);
  });

  it('refuses a write whose result breaks a bundle limit, at the field it comes from', async () => {
    const user = await signUp();
    // Eight reference files leave under 70,000 bytes of the 8 MiB a bundle may hold.
    const references = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`references/part-${i}.md`, 'x'.repeat(1_040_000)]));
    const large = await seedArtifact(user.workspaceId, zipOf({ 'SKILL.md': skillMd('large-skill'), ...references }));
    expect((await install(user, 'large-skill', { artifactId: large.id })).body).toMatchObject({ filesCount: 9 });
    const tooLarge = expectError(await author(user, 'large-skill', { ...authored, prompt: 'y'.repeat(70_000) }), 400, 'INVALID_INPUT');
    expect(tooLarge.details).toMatchObject({ field: 'bundle', rule: 'bundle_too_large' });
    expect((await author(user, 'large-skill', authored)).body).toMatchObject({ versionNumber: 2, filesCount: 9 });

    // SKILL.md has its own limit, which the prompt makes.
    const longSkillMd = expectError(await author(user, 'large-skill', { ...authored, prompt: '中'.repeat(90_000) }), 400, 'INVALID_INPUT');
    expect(longSkillMd.details).toMatchObject({ field: 'prompt', rule: 'file_too_large' });

    // A bundle at the file count: cases written over it would be one file too many.
    const many = Object.fromEntries(Array.from({ length: 199 }, (_, i) => [`references/r${i}.md`, `${i}`]));
    const full = await seedArtifact(user.workspaceId, zipOf({ 'SKILL.md': skillMd('full-skill'), ...many }));
    expect((await install(user, 'full-skill', { artifactId: full.id })).body).toMatchObject({ filesCount: 200 });
    const evals = [{ id: 1, prompt: 'Go.', checks: [{ type: 'contains', value: 'go' }] }];
    const tooMany = expectError(await author(user, 'full-skill', { ...authored, evals }), 400, 'INVALID_INPUT');
    expect(tooMany.details).toMatchObject({ field: 'bundle', rule: 'too_many_files' });
    expect((await versions(user, 'full-skill')).body).toHaveLength(1);
  });
});

describe('versions and restore', () => {
  it('restores non-destructively: a new version with the old content', async () => {
    const user = await signUp();
    const v1 = await author(user, 'standup-bot', authored);
    await author(user, 'standup-bot', { ...authored, prompt: 'Changed.' });
    const res = await call('/api/v1/skills/standup-bot/versions/1/restore', { method: 'POST', token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, restoredFrom: 1, skill: { slug: 'standup-bot', contentChecksum: v1.body.contentChecksum } });
    const list = (await versions(user, 'standup-bot')).body;
    expect(list.map((v: { versionNumber: number; active: boolean }) => [v.versionNumber, v.active])).toEqual([
      [3, true],
      [2, false],
      [1, false],
    ]);
    expect(list[0]).toMatchObject({ prompt: 'You write standups.', note: 'Restored from version 1' });
  });

  it('answers 400 for a bad versionNumber and 404 for a missing version or skill', async () => {
    const user = await signUp();
    await author(user, 'standup-bot', authored);
    for (const bad of ['0', 'abc', '-1', '1.5']) {
      const error = expectError(await call(`/api/v1/skills/standup-bot/versions/${bad}/restore`, { method: 'POST', token: user.token }), 400, 'INVALID_INPUT');
      expect(error.details?.field).toBe('versionNumber');
    }
    expectError(await call('/api/v1/skills/standup-bot/versions/9/restore', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/skills/nothing-here/versions/1/restore', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
    expectError(await versions(user, 'nothing-here'), 404, 'NOT_FOUND');
  });

  it('keeps every workspace’s skills its own', async () => {
    const user = await signUp();
    const other = await signUp();
    await author(other, 'private-skill', authored);
    expectError(await versions(user, 'private-skill'), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/skills/private-skill/uninstall', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/skills/private-skill/versions/1/restore', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
  });
});

describe('POST /api/v1/skills/:slug/uninstall', () => {
  it('removes the skill and its versions', async () => {
    const user = await signUp();
    await install(user, 'code-reviewer');
    const res = await call('/api/v1/skills/code-reviewer/uninstall', { method: 'POST', token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expectError(await versions(user, 'code-reviewer'), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/skills/code-reviewer/uninstall', { method: 'POST', token: user.token }), 404, 'NOT_FOUND');
  });

  it('answers 429 with isRunning while an execution runs', async () => {
    const user = await signUp();
    await install(user, 'code-reviewer');
    await seedRunningExecution(user.workspaceId, user.user.id);
    const res = await call('/api/v1/skills/code-reviewer/uninstall', { method: 'POST', token: user.token });
    expectError(res, 429, 'EXECUTION_RUNNING');
    expect(res.body.isRunning).toBe(true);
  });
});

describe('POST /api/v1/install', () => {
  it('installs a skill from a git host archive of a commit, picking its folder', async () => {
    const user = await signUp();
    const url = `${inject('fixtureOrigin')}/fixtures/skills/archive/${inject('fixtureCommit')}.tar.gz`;
    const res = await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url }, path: 'skills/archived-skill' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      slug: 'archived-skill',
      name: 'Archived Skill',
      source: 'archive',
      repository: url,
      commitHash: inject('fixtureCommit'),
      filesCount: 2,
    });
  });

  it('refuses archives with symlinks, missing folders and unreachable URLs', async () => {
    const user = await signUp();
    const origin = inject('fixtureOrigin');
    const unsafe = expectError(
      await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url: `${origin}/fixtures/unsafe.tar.gz` } } }),
      400,
      'INVALID_INPUT',
    );
    expect(unsafe.details?.rule).toBe('symlink');
    const url = `${origin}/fixtures/skills/archive/${inject('fixtureCommit')}.tar.gz`;
    expectError(await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url }, path: 'skills/nope' } }), 400, 'INVALID_INPUT');
    const missing = expectError(
      await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url: `${origin}/fixtures/none.tar.gz` } } }),
      400,
      'INVALID_INPUT',
    );
    // A 404 reads like an unreachable host (test/security/outbound.test.ts).
    expect(missing.details).toMatchObject({ field: 'source.url', rule: 'unreachable' });
    expectError(await call('/api/v1/install', { token: user.token, body: { source: { type: 'ftp' } } }), 400, 'INVALID_INPUT');
  });

  it('installs from an object under the workspace’s own R2 prefix, and never another’s', async () => {
    const user = await signUp();
    const other = await signUp();
    const { key } = await seedArtifact(user.workspaceId, zipOf({ 'SKILL.md': skillMd('stored-skill') }));
    const res = await call('/api/v1/install', { token: user.token, body: { source: { type: 'r2', key } } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: 'stored-skill', repository: `r2:${key}` });
    expectError(await call('/api/v1/install', { token: other.token, body: { source: { type: 'r2', key } } }), 404, 'NOT_FOUND');
  });
});

describe('audit and activity', () => {
  it('records installs, authoring, restores and uninstalls', async () => {
    const user = await signUp();
    await install(user, 'code-reviewer');
    await author(user, 'standup-bot', authored);
    await call('/api/v1/skills/standup-bot/versions/1/restore', { method: 'POST', token: user.token });
    await call('/api/v1/skills/code-reviewer/uninstall', { method: 'POST', token: user.token });
    const audit = await call('/api/v1/audit-logs?resource_type=skill', { token: user.token });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['skill.uninstalled', 'skill.restored', 'skill.authored', 'skill.installed']);
    const activity = await call('/api/v1/activity', { token: user.token });
    expect(activity.body.data.map((e: { summary: string }) => e.summary)).toContain('Skill "Code Reviewer" was added');
  });
});
