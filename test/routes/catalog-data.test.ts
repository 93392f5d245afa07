import { describe, expect, it } from 'vitest';
import { CATEGORIES } from '../../schema/categories';
import { BUILT_IN_REPOSITORY, CatalogEntry } from '../../workers/services/catalog';
import { call, expectError, signUp } from '../helpers/api';
import { catalogEntry, seedCatalog } from '../helpers/skills';

/** Catalog categories are lower-case slugs with display names; `repository` is a public URL or the built-in catalog's name. */

describe('catalog categories', () => {
  it('are lower-case slugs with display names', async () => {
    const res = await call('/api/v1/marketplace/skills/categories');
    expect(res.body.map((c: { id: string }) => c.id)).toEqual([...CATEGORIES]);
    for (const category of res.body as { id: string; name: string }[]) {
      expect(category.id).toMatch(/^[a-z]+$/);
      expect(category.name).toBe(category.id.charAt(0).toUpperCase() + category.id.slice(1));
    }
  });

  it('filter by id or display name in any case, and store a bundle’s `General` as `general`', async () => {
    await seedCatalog([catalogEntry('case-general', { category: 'General' }), catalogEntry('case-design', { category: 'design' })]);
    const slugs = async (category: string) => ((await call(`/api/v1/marketplace/skills?category=${category}`)).body as { slug: string }[]).map((s) => s.slug);
    const general = await slugs('general');
    expect(general).toContain('case-general');
    for (const spelling of ['General', 'GENERAL', '%20general%20']) expect(await slugs(spelling)).toEqual(general);
    expect((await call('/api/v1/marketplace/skills/case-general')).body.category).toBe('general');
    expect(await slugs('Design')).toContain('case-design');
    expect(expectError(await call('/api/v1/marketplace/skills?category=nope'), 400, 'INVALID_INPUT').details).toMatchObject({ field: 'category' });
  });

  it('are stored as slugs when a user writes a display name', async () => {
    const user = await signUp();
    const res = await call('/api/v1/skills/own-notes', {
      method: 'PUT',
      token: user.token,
      body: { name: 'Notes', description: 'Notes.', category: 'Productivity', prompt: '# Notes' },
    });
    expect(res.status).toBe(200);
    expect(res.body.category).toBe('productivity');
  });
});

describe('catalog repository', () => {
  it('is the built-in name when the catalog has no public repository: a string on every item, never null or a local path', async () => {
    await seedCatalog([{ ...catalogEntry('no-remote-skill'), repository: BUILT_IN_REPOSITORY }]);
    const items = (await call('/api/v1/marketplace/skills')).body as { slug: string; repository: unknown }[];
    expect(items.find((s) => s.slug === 'no-remote-skill')).toMatchObject({ repository: 'built-in' });
    for (const item of items) expect(typeof item.repository, item.slug).toBe('string');
    expect((await call('/api/v1/marketplace/skills/no-remote-skill')).body.repository).toBe('built-in');
    const user = await signUp();
    const installed = await call('/api/v1/skills/no-remote-skill/install', { token: user.token, method: 'POST' });
    expect(installed.status).toBe(200);
    expect(installed.body.repository).toBe('built-in');

    for (const repository of [null, '/home/dev/skills', 'catalog', 'file:///srv/skills.git']) {
      expect(CatalogEntry.safeParse({ ...catalogEntry('x'), repository }).success, String(repository)).toBe(false);
    }
    expect(CatalogEntry.safeParse({ ...catalogEntry('x'), repository: 'https://github.com/acme/skills' }).success).toBe(true);
  });
});

describe('loading the catalog again', () => {
  it('changes nothing for unchanged skills and updates a changed one, which installs as a new version', async () => {
    const first = await seedCatalog([catalogEntry('reload-a'), catalogEntry('reload-b')]);
    expect(first).toEqual({ added: ['reload-a', 'reload-b'], updated: [], unchanged: [] });
    const detail = (await call('/api/v1/marketplace/skills/reload-b')).body;
    expect(await seedCatalog([catalogEntry('reload-a'), catalogEntry('reload-b')])).toEqual({ added: [], updated: [], unchanged: ['reload-a', 'reload-b'] });
    expect((await call('/api/v1/marketplace/skills/reload-b')).body).toEqual(detail);

    const user = await signUp();
    expect((await call('/api/v1/skills/reload-b/install', { token: user.token, method: 'POST' })).body.versionNumber).toBe(1);
    const changed = catalogEntry('reload-b', { body: 'You are the better reload-b skill.' });
    expect(await seedCatalog([catalogEntry('reload-a'), changed])).toEqual({ added: [], updated: ['reload-b'], unchanged: ['reload-a'] });
    expect((await call('/api/v1/marketplace/skills/reload-b')).body.prompt).toBe('You are the better reload-b skill.');
    const reinstalled = await call('/api/v1/skills/reload-b/install', { token: user.token, method: 'POST' });
    expect(reinstalled.body).toMatchObject({ versionNumber: 2, prompt: 'You are the better reload-b skill.' });
  });
});
