/** What the benches share: starting the service and the bare baseline under `wrangler dev`, wrk, an open-loop client, medians. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { freePort, startService as startE2eService } from '../test/e2e/helpers';
import { ensureDevVars } from '../scripts/dev-vars.mjs';

export { freePort };

/**
 * `wrangler dev` records every invocation's trace for its local explorer (on unless
 * X_LOCAL_OBSERVABILITY is false): each one a SQLite commit, with its disk sync, on the thread that
 * runs the Worker, about a third of a run's syncs. Deployed, traces leave after the invocation.
 * The benches measure the Worker, not that dev tool, so it is off for every `wrangler dev` they
 * start (they inherit this environment): the service's, the bare baseline's and the floors'.
 */
process.env.X_LOCAL_OBSERVABILITY = 'false';

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const ratio = (a: number, b: number) => (a / b).toFixed(2);

/**
 * Bench state lives on a memory file system unless TMPDIR says otherwise: under `wrangler dev`
 * every storage commit (D1's, an object's, R2's) syncs the disk on the thread that runs the
 * Worker, which a deployed Worker never waits for. One line of the memory bench runs on disk
 * (DISK_TMPDIR) for reference.
 */
if (!process.env.TMPDIR && existsSync('/dev/shm')) process.env.TMPDIR = '/dev/shm';
export const DISK_TMPDIR = process.env.BENCH_DISK_TMPDIR ?? '/var/tmp';

/**
 * The targets, as bench/README.md's Targets section lists them: each judges one printed ratio,
 * against the bare route or the floor of the same necessary work measured in the same run.
 */
export const TARGETS = {
  firstMessage: { better: 'lower', bound: 4, line: "streams: hosted model, time to first agent.message, to the bare stream's first frame" },
  streamRate: { better: 'higher', bound: 0.5, line: "streams: hosted model, events per second of one stream, to the bare stream's" },
  subscribers100: { better: 'lower', bound: 1.1, line: 'streams: 100 subscribers, time to last idle, to 100 bare streams' },
  subscribers1000: { better: 'lower', bound: 1.2, line: 'streams: 1000 subscribers, time to last idle, to 1000 bare streams' },
  apiKeyThroughput: { better: 'higher', bound: 0.85, line: 'memory: keyed read with an API key, requests per second, to its floor' },
  sessionThroughput: { better: 'higher', bound: 0.85, line: 'memory: keyed read with a session token, requests per second, to its floor' },
  oauthThroughput: { better: 'higher', bound: 0.85, line: 'memory: keyed read with an OAuth token, requests per second, to its floor' },
  openLoopP99: { better: 'lower', bound: 1.5, line: "memory: open loop, API key's p99 at one offered rate, to its floor's" },
  workflowStep: { better: 'lower', bound: 1, line: "workflows: per-step overhead of a 50-step mapping workflow, to Cloudflare Workflows' step.do" },
  traceListing: { better: 'lower', bound: 1.3, line: 'traces: each listing at 100,000 traces, to the same at 100' },
} as const satisfies Record<string, { better: Better; bound: number; line: string }>;

type Better = 'higher' | 'lower';
export type Target = (typeof TARGETS)[keyof typeof TARGETS];

/** A verdict as `npm run bench` collects them (bench/index.ts sets BENCH_VERDICTS to a file of JSON lines). */
export interface Verdict {
  bench: string;
  line: string;
  ratio: string;
  target: string;
  met: boolean;
}

/** `target ≥ 0.85: met`, judged on the printed (rounded) ratio, and recorded for the run's summary. */
export function judged(printed: string, target: Target, which?: string): string {
  const met = target.better === 'higher' ? Number(printed) >= target.bound : Number(printed) <= target.bound;
  const bound = `${target.better === 'higher' ? '≥' : '≤'} ${target.bound}`;
  const verdict: Verdict = {
    bench: basename(process.argv[1] ?? '', '.ts'),
    line: which ? `${target.line} (${which})` : target.line,
    ratio: printed,
    target: bound,
    met,
  };
  if (process.env.BENCH_VERDICTS) appendFileSync(process.env.BENCH_VERDICTS, `${JSON.stringify(verdict)}\n`);
  return `target ${bound}: ${met ? 'met' : 'not met'}`;
}

/**
 * A measure's line ending as every bench prints it: `ratio 0.36   (higher is better, target ≥ 0.6:
 * not met; detail)`. A measure without a target names which way is better instead.
 */
export function measured(service: number, baseline: number, judge: Target | Better, detail: string, which?: string): string {
  const printed = ratio(service, baseline);
  if (typeof judge === 'string') return `ratio ${printed}   (${judge} is better; ${detail})`;
  return `ratio ${printed}   (${judge.better} is better, ${judged(printed, judge, which)}; ${detail})`;
}

/**
 * wrangler.toml with `main` replaced by a bench Worker (a path relative to bench/), written
 * beside it (its other paths made relative to bench/ too); the cron trigger is dropped so housekeeping never runs during a measurement.
 */
export function writeBenchConfig(path: string, main: string, extra = '') {
  const base = readFileSync('wrangler.toml', 'utf8')
    .replace(/^main = .*$/m, `main = "${main}"`)
    .replace(/^migrations_dir = "(.*)"$/gm, 'migrations_dir = "../$1"')
    .replace(/^directory = "(.*)"$/m, 'directory = "../$1"')
    .replace(/^\[triggers\][\s\S]*?(?=^\[|$(?![\s\S]))/m, '');
  writeFileSync(path, `${base}${extra}`);
}

export interface BenchService {
  base: string;
  apiKey: string;
  stop: () => Promise<void>;
}

/**
 * `npm start` (scripts/start.mjs: migrations, catalog, `wrangler dev`, the seeded key) with
 * `config` on `stateDir`; stopping leaves the state for a restart on it.
 */
export async function startService(config: string, stateDir: string): Promise<BenchService> {
  // The config lives in bench/, where wrangler would look for .dev.vars: it is named explicitly,
  // and made first on a fresh checkout (Node reads an `--env-file` argument before the script runs).
  ensureDevVars();
  const { base, apiKey, stop } = await startE2eService(150_000, { stateDir, args: ['--config', config, '--env-file', resolve('.dev.vars')] });
  return { base, apiKey, stop: () => stop() };
}

/** Polls `url` until it answers 2xx; throws once `child` (what serves it) has exited, or after `timeoutMs`. */
export async function untilAnswering(url: string, child: ChildProcess, init: RequestInit = {}, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url, init).then(
      (res) => res.arrayBuffer().then(() => res.ok),
      () => false,
    );
    if (ok) return;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${url} did not answer`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The bare Worker (bench/baseline-worker.js) under `wrangler dev`, its state under `stateRoot`. */
export async function startBaseline(stateRoot = tmpdir()) {
  const port = await freePort();
  // Its object and database (the floors) keep their state apart from everything else, and go with it.
  const stateDir = mkdtempSync(join(stateRoot, 'wss-baseline-'));
  const child = spawn(
    process.execPath,
    [
      'node_modules/wrangler/bin/wrangler.js',
      'dev',
      '--config',
      'bench/baseline.wrangler.toml',
      '--port',
      String(port),
      '--ip',
      '127.0.0.1',
      '--persist-to',
      stateDir,
    ],
    {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
    },
  );
  const base = `http://127.0.0.1:${port}`;
  await untilAnswering(`${base}/?n=1`, child);
  return {
    base,
    stop: () => {
      process.kill(-child.pid!, 'SIGTERM');
      child.once('exit', () => rmSync(stateDir, { recursive: true, force: true }));
    },
  };
}

export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses outside 2xx/3xx, and socket errors (connect, read, write, timeout). */
  non2xx: number;
  socketErrors: number;
}

const toMs = (value: string, unit: string) => Number(value) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 } as Record<string, number>)[unit]!;

/** One wrk run (one thread, `connections` open, `seconds` long) with the latency distribution. */
export function wrk(url: string, options: { connections: number; seconds: number; headers?: Record<string, string> }): WrkResult {
  const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--latency'];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}: ${value}`);
  const run = spawnSync('wrk', [...args, url], { encoding: 'utf8' });
  if (run.error) throw new Error(`wrk could not run (${run.error.message}); install it (Debian/Ubuntu: apt-get install wrk)`);
  const out = run.stdout;
  const percentile = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    if (!m) throw new Error(`no ${p}% latency in wrk output:\n${out}${run.stderr}`);
    return toMs(m[1]!, m[2]!);
  };
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]),
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
    requests: Number(/(\d+) requests in/.exec(out)![1]),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    socketErrors: errors ? errors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

export interface OpenLoopResult {
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  socketErrors: number;
}

/**
 * An open-loop load: `rate` requests a second for `seconds`, each sent at its scheduled time
 * whether or not earlier ones were answered, on as many keep-alive connections as that takes.
 * Latency is measured from the scheduled send time, not the actual one, so a client or server
 * that falls behind shows as latency instead of as fewer requests (no coordinated omission,
 * which a closed loop such as wrk's has). wrk2 does this but is not packaged for Debian.
 */
export async function openLoop(url: string, options: { rate: number; seconds: number; headers?: Record<string, string> }): Promise<OpenLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1024 });
  const total = Math.round(options.rate * options.seconds);
  const interval = 1000 / options.rate;
  const latencies: number[] = [];
  let non2xx = 0;
  let socketErrors = 0;
  const send = (scheduled: number) =>
    new Promise<void>((done) => {
      const req = request(url, { agent, headers: options.headers }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - scheduled);
          if ((res.statusCode ?? 0) >= 300) non2xx++;
          done();
        });
      });
      req.on('error', () => {
        socketErrors++;
        done();
      });
      req.end();
    });
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  while (sent < total) {
    const t = performance.now();
    for (; sent < total && start + sent * interval <= t; sent++) inFlight.push(send(start + sent * interval));
    await new Promise((r) => setTimeout(r, Math.max(0, start + sent * interval - performance.now())));
  }
  await Promise.all(inFlight);
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { p50Ms: at(0.5), p99Ms: at(0.99), requests: total, non2xx, socketErrors };
}

const REDIRECT = 'https://bench.example/callback';

export async function expectOk(res: Response, what: string) {
  if (!res.ok && res.status !== 303) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  return res;
}

/** A new account's session token, in a fresh personal workspace. */
export async function newSession(base: string): Promise<string> {
  const res = await fetch(`${base}/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.test`, password: 'bench password long enough', name: 'Bench' }),
  });
  return ((await (await expectOk(res, 'sign-up')).json()) as { token: string }).token;
}

/** An OAuth access token for `memory:read` of the session's user, through the authorization-code flow a client and a browser drive. */
export async function oauthAccessToken(base: string, session: string): Promise<string> {
  const registered = await fetch(`${base}/auth/oauth2/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Bench',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  });
  const clientId = ((await (await expectOk(registered, 'client registration')).json()) as { client_id: string }).client_id;
  const workspace = await fetch(`${base}/api/v1/workspaces/current`, { headers: { 'x-auth-token': session } });
  const workspaceId = ((await (await expectOk(workspace, 'current workspace')).json()) as { id: string }).id;
  const verifier = randomBytes(32).toString('base64url');
  const authorize = {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'memory:read',
    state: 'bench',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  };
  const page = await fetch(`${base}/auth/oauth2/authorize?${new URLSearchParams(authorize)}`, { headers: { cookie: `__Host-session=${session}` } });
  await expectOk(page, 'authorize page');
  const csrf = /__Host-csrf=([^;]+)/.exec(page.headers.get('set-cookie') ?? '')?.[1];
  if (!csrf) throw new Error('authorize page: no CSRF cookie');
  const consent = await fetch(`${base}/auth/oauth2/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: `__Host-session=${session}; __Host-csrf=${csrf}`, 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams({ ...authorize, csrf, decision: 'allow', workspace_id: workspaceId, scopes: 'memory:read' }),
  });
  const code = new URL((await expectOk(consent, 'consent')).headers.get('location') ?? '', base).searchParams.get('code');
  if (!code) throw new Error(`consent: no code in ${consent.headers.get('location')}`);
  const token = await fetch(`${base}/auth/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier }),
  });
  return ((await (await expectOk(token, 'token exchange')).json()) as { access_token: string }).access_token;
}
