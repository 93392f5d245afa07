import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `npm run catalog:load` writes the built catalog through wrangler's platform proxy: into local
 * state here, and with `--remote` into the deployed database and bucket by the same code and
 * config (only the bindings' remote flag differs). Loading twice changes nothing; a changed
 * skill is updated.
 */
const run = promisify(execFile);
// Never a real Cloudflare account from a test: --remote must fail for want of credentials.
const { CLOUDFLARE_API_TOKEN: _token, CLOUDFLARE_ACCOUNT_ID: _account, ...inherited } = process.env;
const env = { ...inherited, WRANGLER_SEND_METRICS: 'false', CI: 'true' };
const tsx = (args: string[], extra: Record<string, string> = {}) =>
  run(process.execPath, ['node_modules/tsx/dist/cli.mjs', ...args], { env: { ...env, ...extra } });

const skillMd = (slug: string, body: string) =>
  `---\nname: ${slug}\ndescription: "Does ${slug} things."\nmetadata:\n  title: "${slug}"\n  category: General\n---\n${body}\n`;

describe('npm run catalog:load', () => {
  let dir: string;
  let state: string;
  let catalog: string;
  const skills = () => join(dir, 'skills');

  const write = (slug: string, body: string) => {
    mkdirSync(join(skills(), slug), { recursive: true });
    writeFileSync(join(skills(), slug, 'SKILL.md'), skillMd(slug, body));
  };
  const build = () => tsx(['scripts/catalog-build.ts', skills(), '--out', catalog, '--repository', 'git@github.com:acme/skills.git']);
  const load = async (...args: string[]) => (await tsx(['scripts/catalog-load.ts', '--persist-to', state, '--file', catalog, ...args])).stdout;
  /**
   * The marketplace rows, read back from the local global database's SQLite file (the one D1
   * file of the state with a catalog_skills table; the shards have none), with no wrangler started.
   */
  const rows = () => {
    const dir = join(state, 'v3', 'd1', 'miniflare-D1DatabaseObject');
    const found: Record<string, unknown>[][] = [];
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.sqlite') && n !== 'metadata.sqlite')) {
      const db = new DatabaseSync(join(dir, name), { readOnly: true });
      try {
        if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'catalog_skills'").get()) {
          found.push(db.prepare('SELECT slug, category, repository, content_checksum, updated_at FROM catalog_skills ORDER BY slug').all());
        }
      } finally {
        db.close();
      }
    }
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wss-catalog-'));
    state = join(dir, 'state');
    catalog = join(dir, 'catalog.json');
    write('alpha-notes', 'You take notes.');
    write('beta-notes', 'You take other notes.');
    await build();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads the catalog, then changes nothing on a second load, then updates only a changed skill', async () => {
    // The state starts empty: --migrate (as npm start loads) applies the migrations first.
    expect(await load('--migrate')).toContain('2 skills in the local marketplace: 2 added, 0 updated, 0 unchanged');
    const first = rows();
    expect(first).toEqual([
      expect.objectContaining({ slug: 'alpha-notes', category: 'general', repository: 'https://github.com/acme/skills' }),
      expect.objectContaining({ slug: 'beta-notes', category: 'general', repository: 'https://github.com/acme/skills' }),
    ]);

    expect(await load()).toContain('0 added, 0 updated, 2 unchanged');
    expect(rows()).toEqual(first);

    write('beta-notes', 'You take better notes.');
    await build();
    const third = await load();
    expect(third).toContain('0 added, 1 updated, 1 unchanged');
    expect(third).toContain('updated: beta-notes');
    const after = rows();
    expect(after[0]).toEqual(first[0]);
    expect(after[1]!.content_checksum).not.toBe(first[1]!.content_checksum);
  });

  it('with --remote, goes to the deployed bindings (here refused for want of Cloudflare credentials) and leaves local state alone', async () => {
    const before = rows();
    const failed = await load('--remote').then(
      () => null,
      (error: { stdout: string; stderr: string }) => `${error.stdout}${error.stderr}`,
    );
    expect(failed).toMatch(/remote proxy session|CLOUDFLARE_API_TOKEN/);
    const generated = JSON.parse(readFileSync('.wrangler/catalog-load/wrangler.json', 'utf8'));
    expect(generated.d1_databases).toEqual([
      expect.objectContaining({ binding: 'DB', database_name: 'workspace-skills', remote: true }),
      expect.objectContaining({ binding: 'SHARD_1', database_name: 'workspace-skills-shard-1', remote: true }),
      expect.objectContaining({ binding: 'SHARD_2', database_name: 'workspace-skills-shard-2', remote: true }),
    ]);
    expect(generated.r2_buckets).toEqual([{ binding: 'BUCKET', bucket_name: 'workspace-skills', remote: true }]);
    expect(rows()).toEqual(before);
  });

  it('names a catalog with no public repository `built-in`, never null or a local path', async () => {
    const out = join(dir, 'no-remote.json');
    await tsx(['scripts/catalog-build.ts', skills(), '--out', out]);
    const entries = JSON.parse(readFileSync(out, 'utf8')) as { repository: unknown }[];
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) expect(entry.repository).toBe('built-in');
  });
});
