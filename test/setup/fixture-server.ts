/**
 * Vitest global setup (runs in Node, not workerd): a local HTTP server standing in for the
 * outside world the Worker fetches from: another instance's marketplace (registry installs)
 * and a git host serving archives of a commit (POST /api/v1/install). Anything not listed
 * answers 404, so an unexpected request fails its test.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

export const COMMIT = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';

const skillMd = (slug: string, title: string) =>
  `---\nname: ${slug}\ndescription: Fixture skill ${slug}.\nmetadata:\n  title: ${title}\n  author: Fixture Registry\n  category: research\n---\nYou are the ${title} fixture.\n`;

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** Same checksum rule as workers/lib/bundle.ts: SHA-256 over sorted `path\nsha256\n` lines. */
function checksum(files: { path: string; data: Buffer }[]) {
  const listing = [...files]
    .sort((a, b) => (a.path < b.path ? -1 : 1))
    .map((f) => `${f.path}\n${sha(f.data)}\n`)
    .join('');
  return sha(listing);
}

function registryRoutes(): Map<string, unknown> {
  const routes = new Map<string, unknown>();
  const add = (slug: string, files: { path: string; data: Buffer }[], advertised = checksum(files)) => {
    const base = `/api/v1/marketplace/skills/${slug}`;
    routes.set(base, {
      slug,
      name: slug,
      description: 'fixture',
      category: 'research',
      repository: 'https://git.example.test/fixtures/skills',
      prompt: 'fixture',
      author: 'Fixture Registry',
      version: '2.0.0',
      commitHash: COMMIT,
      license: null,
      contentChecksum: advertised,
      filesCount: files.length,
    });
    routes.set(`${base}/bundle`, {
      slug,
      contentChecksum: advertised,
      files: files.map((f) => ({ path: f.path, base64: f.data.toString('base64') })),
    });
  };
  add('remote-skill', [
    { path: 'SKILL.md', data: Buffer.from(skillMd('remote-skill', 'Remote Skill')) },
    { path: 'references/guide.md', data: Buffer.from('# Guide\n') },
  ]);
  const tampered = [{ path: 'SKILL.md', data: Buffer.from(skillMd('tampered-skill', 'Tampered')) }];
  add('tampered-skill', tampered, '0'.repeat(64));
  return routes;
}

/** Archives laid out like a git host's: one top folder `skills-<commit>/` holding the repository. */
function buildArchives(): Map<string, Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'skill-archives-'));
  const top = join(dir, `skills-${COMMIT}`);
  const skill = join(top, 'skills', 'archived-skill');
  mkdirSync(join(skill, 'assets'), { recursive: true });
  writeFileSync(join(skill, 'SKILL.md'), skillMd('archived-skill', 'Archived Skill'));
  writeFileSync(join(skill, 'assets', 'template.md'), '# Template\n');
  writeFileSync(join(top, 'README.md'), '# fixture repository\n');
  const unsafe = join(dir, 'unsafe');
  mkdirSync(unsafe);
  writeFileSync(join(unsafe, 'SKILL.md'), skillMd('unsafe', 'Unsafe'));
  execFileSync('ln', ['-s', '/etc/passwd', join(unsafe, 'passwd')]);

  const archives = new Map<string, Buffer>();
  execFileSync('tar', ['--format=pax', '-czf', join(dir, 'repo.tar.gz'), '-C', dir, `skills-${COMMIT}`]);
  archives.set(`/fixtures/skills/archive/${COMMIT}.tar.gz`, readFileSync(join(dir, 'repo.tar.gz')));
  execFileSync('tar', ['--format=pax', '-czf', join(dir, 'unsafe.tar.gz'), '-C', dir, 'unsafe']);
  archives.set('/fixtures/unsafe.tar.gz', readFileSync(join(dir, 'unsafe.tar.gz')));
  rmSync(dir, { recursive: true, force: true });
  return archives;
}

export default async function setup(project: TestProject) {
  const json = registryRoutes();
  const binary = buildArchives();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (json.has(path)) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json.get(path)));
    } else if (binary.has(path)) {
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(binary.get(path));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  project.provide('fixtureOrigin', `http://127.0.0.1:${port}`);
  project.provide('fixtureCommit', COMMIT);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

declare module 'vitest' {
  export interface ProvidedContext {
    fixtureOrigin: string;
    fixtureCommit: string;
  }
}
