import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { catalogSkills } from '../../schema';
import { globalDbOf } from '../../workers/lib/db';
import { bundleManifest } from '../../workers/lib/bundle';
import { decodeFiles } from '../../workers/services/catalog';
import { call, expectError, signUp } from '../helpers/api';
import { catalogEntry, seedCatalog } from '../helpers/skills';

beforeAll(async () => {
  // These tests read the whole catalog: it holds only what they seed, not what files before them in this worker did.
  await globalDbOf(env).delete(catalogSkills);
  await seedCatalog([
    catalogEntry('code-reviewer', { title: 'Code Reviewer', category: 'development', extra: { 'references/checklist.md': '# Checklist\n' } }),
    catalogEntry('meeting-summarizer', { title: 'Meeting Summarizer', category: 'productivity', description: 'Summarises meeting notes into action items.' }),
    catalogEntry('press-release', { title: 'Press Release Drafter', category: 'marketing' }),
    catalogEntry('sql-explainer', { title: 'SQL Explainer', category: 'development' }),
  ]);
});

describe('GET /api/v1/marketplace/skills', () => {
  it('lists the whole catalog as a bare array, alphabetical, without a credential', async () => {
    const res = await call('/api/v1/marketplace/skills');
    expect(res.status).toBe(200);
    expect(res.body.map((s: { slug: string }) => s.slug)).toEqual(['code-reviewer', 'meeting-summarizer', 'press-release', 'sql-explainer']);
    expect(res.body[0]).toEqual({
      slug: 'code-reviewer',
      name: 'Code Reviewer',
      description: 'Does code-reviewer things.',
      category: 'development',
      repository: 'https://git.example.test/team/skills',
    });
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
  });

  it('filters by category, searches name and description, and pages by offset', async () => {
    const dev = await call('/api/v1/marketplace/skills?category=development');
    expect(dev.body.map((s: { slug: string }) => s.slug)).toEqual(['code-reviewer', 'sql-explainer']);
    const search = await call('/api/v1/marketplace/skills?q=ACTION%20items');
    expect(search.body.map((s: { slug: string }) => s.slug)).toEqual(['meeting-summarizer']);
    const page = await call('/api/v1/marketplace/skills?limit=2&offset=1');
    expect(page.body.map((s: { slug: string }) => s.slug)).toEqual(['meeting-summarizer', 'press-release']);
    expectError(await call('/api/v1/marketplace/skills?category=nope'), 400, 'INVALID_INPUT');
    expectError(await call('/api/v1/marketplace/skills?offset=-1'), 400, 'INVALID_INPUT');
  });

  it('answers the cursor envelope when after_id is present', async () => {
    const first = await call('/api/v1/marketplace/skills?limit=2&after_id=code-reviewer');
    expect(first.body).toEqual({
      data: [expect.objectContaining({ slug: 'meeting-summarizer' }), expect.objectContaining({ slug: 'press-release' })],
      first_id: 'meeting-summarizer',
      last_id: 'press-release',
      has_more: true,
    });
    const last = await call('/api/v1/marketplace/skills?limit=2&after_id=press-release');
    expect(last.body).toMatchObject({ data: [{ slug: 'sql-explainer' }], has_more: false });
    const back = await call('/api/v1/marketplace/skills?limit=2&before_id=sql-explainer');
    expect(back.body.data.map((s: { slug: string }) => s.slug)).toEqual(['meeting-summarizer', 'press-release']);
    expect(expectError(await call('/api/v1/marketplace/skills?limit=101&after_id=a'), 400, 'INVALID_INPUT').details?.field).toBe('limit');
  });
});

describe('GET /api/v1/marketplace/skills/categories', () => {
  it('counts skills in every category, empty ones included', async () => {
    const res = await call('/api/v1/marketplace/skills/categories');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(9);
    expect(res.body).toContainEqual({ id: 'development', name: 'Development', count: 2 });
    expect(res.body).toContainEqual({ id: 'creative', name: 'Creative', count: 0 });
    expect(res.body).toContainEqual({ id: 'general', name: 'General', count: 0 });
  });
});

describe('GET /api/v1/marketplace/skills/:slug', () => {
  it('adds prompt, author, version and the content checksum', async () => {
    const res = await call('/api/v1/marketplace/skills/code-reviewer');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      slug: 'code-reviewer',
      prompt: 'You are the code-reviewer skill.',
      author: 'Test Author',
      version: '1.0.0',
      commitHash: 'c0ffee0000000000000000000000000000000000',
      contentChecksum: expect.stringMatching(/^[0-9a-f]{64}$/),
      filesCount: 2,
    });
  });

  it('shows the eval results the catalog ships, the latest of each version, and none for a skill that ships none', async () => {
    const entry = catalogEntry('eval-shipper', {
      title: 'Eval Shipper',
      extra: { 'evals/evals.json': '{"skill_name":"eval-shipper","evals":[{"id":1,"prompt":"Go","checks":[{"type":"contains","value":"x"}]}]}' },
    });
    const { checksum } = await bundleManifest(decodeFiles(entry.files));
    const shipped = (contentChecksum: string, version: string, completedAt: string, local: boolean) => ({
      version,
      contentChecksum,
      provider: local ? 'local' : 'anthropic',
      model: local ? 'local-1' : 'claude-sonnet-5',
      local,
      repetitions: 2,
      casesCount: 1,
      passRateWith: 1,
      passRateWithout: 0.5,
      difference: 0.5,
      completedAt,
      cases: [{ id: 1, passRateWith: 1, passRateWithout: 0.5 }],
    });
    const current = shipped(checksum, '1.0.0', '2026-05-02T00:00:00.000Z', false);
    const older = shipped('0'.repeat(64), '0.9.0', '2026-05-01T00:00:00.000Z', true);
    expect((await seedCatalog([{ ...entry, evals: [current, older] }])).added).toEqual(['eval-shipper']);
    expect((await call('/api/v1/marketplace/skills/eval-shipper')).body.evals).toEqual([current, older]);
    expect((await call('/api/v1/marketplace/skills/code-reviewer')).body.evals).toEqual([]);
    // New results alone are a change the next load writes; the same ones again are not.
    expect((await seedCatalog([{ ...entry, evals: [current] }])).updated).toEqual(['eval-shipper']);
    expect((await seedCatalog([{ ...entry, evals: [current] }])).unchanged).toEqual(['eval-shipper']);
    expect((await call('/api/v1/marketplace/skills/eval-shipper')).body.evals).toEqual([current]);
    // Installed, the skill shows them too; an authored skill has none to show.
    const user = await signUp();
    expect((await call('/api/v1/skills/eval-shipper/install', { method: 'POST', token: user.token })).status).toBe(200);
    expect((await call('/api/v1/skills/eval-shipper', { token: user.token })).body).toMatchObject({ source: 'catalog', catalogEvals: [current] });
    await call('/api/v1/skills/mine', {
      method: 'PUT',
      token: user.token,
      body: { name: 'Mine', description: 'Mine.', category: 'productivity', prompt: '# Mine' },
    });
    expect((await call('/api/v1/skills/mine', { token: user.token })).body.catalogEvals).toBeNull();
  });

  it('serves the bundle, whose files hash to the advertised checksum', async () => {
    const detail = await call('/api/v1/marketplace/skills/code-reviewer');
    const bundle = await call('/api/v1/marketplace/skills/code-reviewer/bundle');
    expect(bundle.body.files.map((f: { path: string }) => f.path)).toEqual(['SKILL.md', 'references/checklist.md']);
    expect((await bundleManifest(decodeFiles(bundle.body.files))).checksum).toBe(detail.body.contentChecksum);
  });

  it('answers 404 for an unknown slug and 400 for a malformed one', async () => {
    expectError(await call('/api/v1/marketplace/skills/no-such-skill'), 404, 'NOT_FOUND');
    expectError(await call('/api/v1/marketplace/skills/no-such-skill/bundle'), 404, 'NOT_FOUND');
    expect(expectError(await call('/api/v1/marketplace/skills/Bad_Slug'), 400, 'INVALID_INPUT').details?.field).toBe('slug');
  });
});
