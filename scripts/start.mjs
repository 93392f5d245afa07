#!/usr/bin/env node
// npm start: local secrets on first run, local D1 migrations and the built-in skill catalog,
// `wrangler dev` with any extra arguments (`npm start -- --port 8799 --var KEY:VALUE`), then a
// development user and API key seeded through the API itself and printed.
// The tools' own output goes to a log file beside the local state, so the console keeps what a
// person needs and the banner with the key comes last; `--verbose` prints it all instead.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDevVars } from './dev-vars.mjs';

const verbose = process.argv.includes('--verbose');
const args = process.argv.slice(2).filter((a) => a !== '--verbose');

/** The value of `--name value` or `--name=value` among the forwarded arguments. */
function argValue(name) {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i === -1) return undefined;
  return args[i].includes('=') ? args[i].slice(name.length + 1) : args[i + 1];
}

// The seed lives with the local state it describes: deleting one deletes the other.
const STATE_DIR = argValue('--persist-to') ?? '.wrangler/state';
// Another wrangler config (`--config`, as wrangler dev takes it): its databases are the ones migrated.
const CONFIG = argValue('--config');
const SEED_FILE = join(STATE_DIR, 'dev-seed.json');
const DEV_EMAIL = 'dev@localhost.test';
const LOG_FILE = join(STATE_DIR, 'npm-start.log');
mkdirSync(STATE_DIR, { recursive: true });
const log = openSync(LOG_FILE, 'w');

/** The end of the log, for a step that failed while its output went there. */
function printLogTail() {
  const lines = readFileSync(LOG_FILE, 'utf8').trimEnd().split('\n');
  console.error(`${lines.slice(-40).join('\n')}\n\n(the whole output is in ${LOG_FILE})`);
}

function run(command, commandArgs) {
  const result = spawnSync(command, commandArgs, {
    stdio: verbose ? 'inherit' : ['ignore', log, log],
    env: { ...process.env, CI: 'true' }, // no interactive confirmation
  });
  if (result.status === 0) return;
  if (!verbose) printLogTail();
  process.exit(result.status ?? 1);
}

const CATALOG = 'catalog/dist/catalog.json';
/** What the built catalog is made from: the skills, their shipped eval results, and the code that reads and validates them. */
const CATALOG_SOURCES = ['catalog/skills', 'catalog/evals', 'scripts', 'workers/lib', 'workers/services/catalog.ts'];

/** The newest modification time under a path. */
const newest = (path) => {
  const stat = statSync(path);
  return stat.isDirectory() ? Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name)))) : stat.mtimeMs;
};

/** Whether catalog/dist/catalog.json was built after its last source changed (then it is not built again). */
const catalogIsCurrent = () => existsSync(CATALOG) && CATALOG_SOURCES.every((path) => !existsSync(path) || newest(path) < statSync(CATALOG).mtimeMs);

/** Local D1 migrations, then the built-in catalog into the local marketplace (before wrangler dev opens the same files). */
function prepareLocalState() {
  if (!catalogIsCurrent()) run('tsx', ['scripts/catalog-build.ts']);
  run('tsx', ['scripts/catalog-load.ts', '--migrate', '--persist-to', STATE_DIR, ...(CONFIG ? ['--config', CONFIG] : [])]);
}

async function waitForServer(base, child) {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error('wrangler dev exited before it was ready');
    try {
      const res = await fetch(`${base}/api/v1/openapi.json`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('wrangler dev did not become ready in 150 s');
}

async function post(base, path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** Reuses the saved seed if it still works against the local database, else makes a new one. */
async function seed(base) {
  if (existsSync(SEED_FILE)) {
    const saved = JSON.parse(readFileSync(SEED_FILE, 'utf8'));
    const res = await fetch(`${base}/api/v1/profile`, { headers: { 'x-api-key': saved.apiKey } });
    if (res.ok) return saved;
  }
  const password = randomBytes(12).toString('base64url');
  let session = await post(base, '/auth/sign-up/email', { email: DEV_EMAIL, password, name: 'Developer' });
  if (session.status === 409) {
    throw new Error(`${DEV_EMAIL} exists but ${SEED_FILE} is missing or stale: delete ${STATE_DIR} to start over`);
  }
  if (session.status !== 201) throw new Error(`seeding failed: ${JSON.stringify(session.body)}`);
  const key = await post(base, '/api/v1/api-keys', { name: 'Development key', scopes: ['*'] }, { 'x-auth-token': session.body.token });
  if (key.status !== 201) throw new Error(`seeding failed: ${JSON.stringify(key.body)}`);
  const saved = { email: DEV_EMAIL, password, apiKey: key.body.key };
  mkdirSync(STATE_DIR, { recursive: true });
  writeFileSync(SEED_FILE, JSON.stringify(saved, null, 2), { mode: 0o600 });
  return saved;
}

if (ensureDevVars()) console.log('Wrote .dev.vars with fresh local secrets.');
console.log('Preparing local state: D1 migrations and the built-in skill catalog…');
prepareLocalState();
const base = `http://localhost:${argValue('--port') ?? 8787}`;
console.log('Starting wrangler dev…');
const child = spawn('wrangler', ['dev', ...args], { stdio: verbose ? 'inherit' : ['inherit', log, log] });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => {
  if (code && !verbose) printLogTail();
  process.exit(code ?? 0);
});

try {
  await waitForServer(base, child);
  const s = await seed(base);
  console.log(`
  Workspace AI Skills Service at ${base}
    Start here:   ${base}/   (quickstart: README.md; API reference: ${base}/docs)
    Sign in:      ${s.email} / ${s.password}   (${base}/auth/sign-in)
    Logs:         ${LOG_FILE}   (npm start -- --verbose prints them here)
    Try:          curl -H 'x-api-key: ${s.apiKey}' ${base}/api/v1/profile
    API key (full access):  ${s.apiKey}
`);
} catch (error) {
  console.error(String(error));
  if (!verbose) printLogTail();
}
