/**
 * npm run catalog:build [-- <folder>... --repository <url> --commit <sha> --out <file>]
 *
 * Reads skill bundles (each a folder with SKILL.md; a folder argument may be one bundle or a
 * folder of bundles), validates them with the same rules the service applies to uploads,
 * and writes catalog/dist/catalog.json for `npm run catalog:load`. Defaults: catalog/skills.
 * `repository` is `--repository <url>`, else the public URL of the folder's git remote (`origin`),
 * else the `repository` of package.json (which a deployer sets), else the stable name `built-in`:
 * always a string, never a local path. `commitHash` comes from git unless given.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { BundleError, type BundleFile, validateBundle } from '../workers/lib/bundle';
import { BUILT_IN_REPOSITORY, type CatalogEntry } from '../workers/services/catalog';
import { publicRepositoryUrl } from './repository-url';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    repository: { type: 'string' },
    commit: { type: 'string' },
    out: { type: 'string', default: 'catalog/dist/catalog.json' },
  },
});

/** Every file under `dir`, refusing symlinks and anything that is not a plain file or folder. */
function readBundleFiles(dir: string): BundleFile[] {
  const files: BundleFile[] = [];
  const walk = (current: string) => {
    for (const name of readdirSync(current)) {
      const full = join(current, name);
      const stat = lstatSync(full);
      const path = relative(dir, full).split('\\').join('/');
      if (stat.isSymbolicLink()) throw new BundleError('symlink', `Symlinks are not allowed: ${path}`);
      if (stat.isDirectory()) walk(full);
      else if (stat.isFile()) files.push({ path, bytes: new Uint8Array(readFileSync(full)) });
      else throw new BundleError('unsafe_path', `Not a regular file: ${path}`);
    }
  };
  walk(dir);
  return files;
}

const git = (cwd: string, args: string[]): string | undefined => {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
};

const flagRepository = values.repository === undefined ? undefined : publicRepositoryUrl(values.repository);
if (flagRepository === null) {
  console.error(`catalog:build: --repository must be a public repository URL (https://host/owner/repo), not ${JSON.stringify(values.repository)}`);
  process.exit(1);
}

/** package.json's `repository` (a string or `{url}`), when it names a public repository. */
function packageRepository(): string | null {
  const { repository } = JSON.parse(readFileSync('package.json', 'utf8')) as { repository?: string | { url?: string } };
  const url = typeof repository === 'string' ? repository : repository?.url;
  return url === undefined ? null : publicRepositoryUrl(url);
}

/** Where the folder's skills come from, as the catalog's `repository` says it. */
function repositoryOf(dir: string): string {
  if (flagRepository) return flagRepository;
  const remote = git(dir, ['remote', 'get-url', 'origin']);
  return (remote === undefined ? null : publicRepositoryUrl(remote)) ?? packageRepository() ?? BUILT_IN_REPOSITORY;
}

/** The last commit that touched the bundle, or `uncommitted`. */
const commitOf = (dir: string): string => values.commit ?? git(dir, ['log', '-1', '--format=%H', '--', '.']) ?? 'uncommitted';

function bundleFolders(root: string): string[] {
  if (lstatSync(join(root, 'SKILL.md'), { throwIfNoEntry: false })) return [root];
  return readdirSync(root)
    .map((name) => join(root, name))
    .filter((p) => lstatSync(p).isDirectory() && !p.split('/').pop()!.startsWith('.'))
    .sort();
}

const roots = positionals.length ? positionals : ['catalog/skills'];
const entries: CatalogEntry[] = [];
const problems: string[] = [];
const seen = new Map<string, string>();

for (const folder of roots.flatMap(bundleFolders)) {
  const slug = folder.split('/').pop()!;
  try {
    const bundle = validateBundle(readBundleFiles(folder), slug);
    if (seen.has(bundle.slug)) throw new BundleError('duplicate_slug', `Same slug as ${seen.get(bundle.slug)}`);
    seen.set(bundle.slug, folder);
    entries.push({
      slug: bundle.slug,
      repository: repositoryOf(folder),
      commitHash: commitOf(folder),
      files: bundle.files.map((f) => ({ path: f.path, base64: Buffer.from(f.bytes).toString('base64') })),
    });
  } catch (error) {
    problems.push(`${folder}: ${(error as Error).message}`);
  }
}

if (problems.length) {
  console.error(`catalog:build refused ${problems.length} bundle(s):\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
mkdirSync(dirname(values.out!), { recursive: true });
writeFileSync(values.out!, JSON.stringify(entries));
console.log(`catalog:build: ${entries.length} skills -> ${values.out}`);
