/**
 * npm run catalog:eval [-- --url <service> --key <API key> --skill <slug>... --repetitions <n> --budget <Ds> --evals <dir>]
 *
 * Evaluates the catalog skills that carry eval cases (catalog/skills/<slug>/evals/evals.json)
 * against a running service, through its public API as any client would: installs each one in
 * the key's workspace, starts `POST /api/v1/skills/:slug/evals/run`, polls the job until it
 * ends, and records the result in `<evals dir>/<slug>.json` (default catalog/evals), which
 * `npm run catalog:build` ships with the skill and the marketplace shows. The runs use the
 * provider the service runs with (or the key's user's own key): a service with no provider
 * configured runs the built-in local model, and its results say `local: true`.
 *
 * - `--url` the service (default http://localhost:8787); `--key` an API key with `library:write`
 *   and `tool:execute` (default `CATALOG_EVAL_KEY`, else the key `npm start` seeded for that
 *   state, .wrangler/state/dev-seed.json).
 * - `--skill` only these skills (repeatable); `--repetitions` 1 to 5 (default 1); `--budget`
 *   caps each skill's job, in Ds.
 * The service must serve the same content as catalog/skills (load it first): a skill whose
 * installed content differs is refused, so a result always names the content it measured.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleManifest, validateBundle } from '../workers/lib/bundle';
import { EVAL_RESULTS_DIR, EvalResultsFile, evalResultsText, FinishedEvalJob, shippedEvalOf, withShippedEval } from '../workers/lib/catalog-evals';
import { bundleFolders, readBundleFiles } from './lib/bundle-folder';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://localhost:8787' },
    key: { type: 'string' },
    skill: { type: 'string', multiple: true },
    repetitions: { type: 'string', default: '1' },
    budget: { type: 'string' },
    evals: { type: 'string', default: EVAL_RESULTS_DIR },
    skills: { type: 'string', default: 'catalog/skills' },
  },
});

const SEED_FILE = '.wrangler/state/dev-seed.json';
const POLL_MS = 2000;

const fail = (message: string): never => {
  console.error(`catalog:eval: ${message}`);
  process.exit(1);
};

const apiKey =
  values.key ??
  process.env.CATALOG_EVAL_KEY ??
  (existsSync(SEED_FILE) ? (JSON.parse(readFileSync(SEED_FILE, 'utf8')) as { apiKey?: string }).apiKey : undefined) ??
  fail(`no API key: pass --key, set CATALOG_EVAL_KEY, or run npm start (it seeds ${SEED_FILE})`);
const repetitions = Number(values.repetitions);
if (!Number.isInteger(repetitions) || repetitions < 1 || repetitions > 5) fail('--repetitions is a whole number from 1 to 5');
const budget = values.budget === undefined ? undefined : Number(values.budget);
if (budget !== undefined && !(budget > 0)) fail('--budget is a positive number of Ds');
const base = values.url!.replace(/\/+$/, '');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One API call; waits and tries again while the service answers 429 (its rate limit, or a run still ending). */
async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  for (;;) {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { 'x-api-key': apiKey, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const answer = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    if (res.status === 429) {
      await sleep(Math.min(Number(res.headers.get('retry-after')) || 2, 60) * 1000);
      continue;
    }
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${answer?.error?.message ?? ''}`.trim());
    return answer as T;
  }
}

interface Job {
  status: string;
  stopReason: string | null;
  cases: { runs: { with?: { status: string }; without?: { status: string } }[] }[];
}

/** Graded or skipped runs of the job, of all it has. */
const progress = (job: Job) => {
  const runs = job.cases.flatMap((c) => c.runs.flatMap((r) => [r.with, r.without]));
  return `${runs.filter((r) => r && (r.status === 'graded' || r.status === 'skipped')).length}/${runs.length} runs`;
};

/** Evaluates one skill folder; the result it recorded, or why it did not. */
async function evaluate(folder: string): Promise<string> {
  const slug = folder.split('/').pop()!;
  const files = readBundleFiles(folder);
  const bundle = validateBundle(files, slug);
  const { checksum } = await bundleManifest(bundle.files);
  const installed = await api<{ versionNumber: number; contentChecksum: string }>('POST', `/skills/${slug}/install`);
  if (installed.contentChecksum !== checksum) {
    throw new Error(
      `the service serves other content than ${folder}: load the catalog first (npm run catalog:build && npm run catalog:load, or restart npm start)`,
    );
  }
  const { id } = await api<{ id: string }>('POST', `/skills/${slug}/evals/run`, {
    version: installed.versionNumber,
    repetitions,
    ...(budget === undefined ? {} : { budget }),
  });
  let last = '';
  for (;;) {
    const job = await api<Job>('GET', `/skills/${slug}/evals/${id}`);
    const now = `${job.status}, ${progress(job)}`;
    if (now !== last) console.log(`  ${slug}: ${now}`);
    last = now;
    if (job.status === 'succeeded') {
      const result = shippedEvalOf(FinishedEvalJob.parse(job), bundle.version, checksum);
      const path = join(values.evals!, `${slug}.json`);
      const before = existsSync(path) ? EvalResultsFile.parse(JSON.parse(readFileSync(path, 'utf8'))) : null;
      mkdirSync(values.evals!, { recursive: true });
      writeFileSync(path, evalResultsText(withShippedEval(before, slug, result)));
      const pct = (rate: number | null) => (rate === null ? 'n/a' : `${Math.round(rate * 100)}%`);
      return `${pct(result.passRateWith)} with, ${pct(result.passRateWithout)} without (${result.model}${result.local ? ', local' : ''}) -> ${path}`;
    }
    if (job.status === 'failed' || job.status === 'stopped')
      throw new Error(`eval ${id} ${job.status}${job.stopReason ? ` (${job.stopReason})` : ''}: nothing recorded`);
    await sleep(POLL_MS);
  }
}

const wanted = values.skill ? new Set(values.skill) : null;
const folders = bundleFolders(values.skills!).filter(
  (folder) => existsSync(join(folder, 'evals', 'evals.json')) && (!wanted || wanted.has(folder.split('/').pop()!)),
);
const unknown = [...(wanted ?? [])].filter((slug) => !folders.some((f) => f.endsWith(`/${slug}`)));
if (unknown.length) fail(`no skill with eval cases under ${values.skills}: ${unknown.join(', ')}`);

console.log(`catalog:eval: ${folders.length} skill(s) against ${base}, ${repetitions} repetition(s)`);
let failed = 0;
for (const folder of folders) {
  const slug = folder.split('/').pop()!;
  try {
    console.log(`${slug}: ${await evaluate(folder)}`);
  } catch (error) {
    failed++;
    console.error(`${slug}: ${(error as Error).message}`);
  }
}
console.log(`catalog:eval: ${folders.length - failed} recorded, ${failed} failed; run npm run catalog:build && npm run catalog:load to ship them`);
if (failed) process.exit(1);
