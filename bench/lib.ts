/** What the benches share: starting the service and the bare baseline under `wrangler dev`, wrk, medians. */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { freePort, startService as startE2eService } from '../test/e2e/helpers';

export { freePort };

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const ratio = (a: number, b: number) => (a / b).toFixed(2);

/**
 * wrangler.toml with `main` replaced by a bench Worker (a path relative to bench/), written
 * beside it (its other paths made relative to bench/ too); the cron trigger is dropped so housekeeping never runs during a measurement.
 */
export function writeBenchConfig(path: string, main: string, extra = '') {
  const base = readFileSync('wrangler.toml', 'utf8')
    .replace(/^main = .*$/m, `main = "${main}"`)
    .replace(/^migrations_dir = "(.*)"$/m, 'migrations_dir = "../$1"')
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
  // The config lives in bench/, where wrangler would look for .dev.vars: it is named explicitly.
  const { base, apiKey, stop } = await startE2eService(150_000, { stateDir, args: ['--config', config, '--env-file', resolve('.dev.vars')] });
  return { base, apiKey, stop: () => stop() };
}

/** The bare Worker (bench/baseline-worker.js) under `wrangler dev`. */
export async function startBaseline() {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['node_modules/wrangler/bin/wrangler.js', 'dev', '--config', 'bench/baseline.wrangler.toml', '--port', String(port), '--ip', '127.0.0.1'],
    {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
    },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 240; i++) {
    try {
      if ((await fetch(`${base}/?n=1`)).ok) break;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { base, stop: () => process.kill(-child.pid!, 'SIGTERM') };
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
