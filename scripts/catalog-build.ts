/**
 * npm run catalog:build [-- <folder>... --repository <url> --commit <sha> --evals <dir> --out <file>]
 *
 * Reads skill bundles (each a folder with SKILL.md; a folder argument may be one bundle or a
 * folder of bundles), validates them with the same rules the service applies to uploads,
 * and writes catalog/dist/catalog.json for `npm run catalog:load`. Defaults: catalog/skills.
 * `repository` is `--repository <url>`, else the public URL of the folder's git remote (`origin`),
 * else the `repository` of package.json (which a deployer sets), else the stable name `built-in`:
 * always a string, never a local path. `commitHash` comes from git unless given. A skill's eval
 * results (`<evals dir>/<slug>.json`, default catalog/evals, written by `npm run catalog:eval`)
 * ship with it.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { BundleError, validateBundle } from '../workers/lib/bundle';
import { EVAL_RESULTS_DIR, EvalResultsFile, type ShippedEval } from '../workers/lib/catalog-evals';
import { BUILT_IN_REPOSITORY, type CatalogEntry } from '../workers/services/catalog';
import { bundleFolders, readBundleFiles } from './lib/bundle-folder';
import { publicRepositoryUrl } from './repository-url';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    repository: { type: 'string' },
    commit: { type: 'string' },
    evals: { type: 'string', default: EVAL_RESULTS_DIR },
    out: { type: 'string', default: 'catalog/dist/catalog.json' },
  },
});

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

/** The eval results shipped for `slug`, if its results file exists. */
function shippedEvals(slug: string): ShippedEval[] {
  const path = join(values.evals!, `${slug}.json`);
  if (!lstatSync(path, { throwIfNoEntry: false })) return [];
  const file = EvalResultsFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!file.success) throw new BundleError('eval_results', `${path} is not an eval results file: ${file.error.issues[0]!.message}`);
  if (file.data.slug !== slug) throw new BundleError('eval_results', `${path} is for "${file.data.slug}"`);
  return file.data.evals;
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
      evals: shippedEvals(bundle.slug),
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
