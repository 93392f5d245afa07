/**
 * npm run bench:memory: authenticated `GET /api/v1/memory` against a bare workerd JSON route
 * (bench/baseline-worker.js `/json`, a body of the same size), both under `wrangler dev`, loaded
 * by wrk with the same connections for the same time, alternating, in one run; printed as
 * ratios of throughput and p99 latency. Each service request resolves the API key (D1), counts
 * it in the key's RateLimiter object and reads the document (D1); the limit itself is raised
 * for this instance (bench/service-worker.ts), so the load is not answered 429.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, ratio, startBaseline, startService, wrk, writeBenchConfig, type WrkResult } from './lib';

const CONFIG = 'bench/.service.wrangler.toml';
const ROUNDS = 3;
const SECONDS = 10;
const CONNECTIONS = 10;
/** A working-memory document of a realistic size. */
const MEMORY_CHARS = 2000;

async function main() {
  writeBenchConfig(CONFIG, 'service-worker.ts');
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-bench-'));
  const service = await startService(CONFIG, stateDir);
  const baseline = await startBaseline();
  try {
    const headers = { 'x-api-key': service.apiKey };
    const put = await fetch(`${service.base}/api/v1/memory`, {
      method: 'PUT',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'x'.repeat(MEMORY_CHARS) }),
    });
    if (!put.ok) throw new Error(`PUT /api/v1/memory: ${put.status} ${await put.text()}`);
    const serviceUrl = `${service.base}/api/v1/memory`;
    const baselineUrl = `${baseline.base}/json?chars=${MEMORY_CHARS}`;

    wrk(serviceUrl, { connections: CONNECTIONS, seconds: 3, headers }); // warm up both
    wrk(baselineUrl, { connections: CONNECTIONS, seconds: 3 });
    const runs = { service: [] as WrkResult[], baseline: [] as WrkResult[] };
    for (let round = 0; round < ROUNDS; round++) {
      runs.service.push(wrk(serviceUrl, { connections: CONNECTIONS, seconds: SECONDS, headers }));
      runs.baseline.push(wrk(baselineUrl, { connections: CONNECTIONS, seconds: SECONDS }));
    }

    const of = (rs: WrkResult[], pick: (r: WrkResult) => number) => median(rs.map(pick));
    const sum = (rs: WrkResult[], pick: (r: WrkResult) => number) => rs.reduce((n, r) => n + pick(r), 0);
    const rps = { service: of(runs.service, (r) => r.requestsPerSecond), baseline: of(runs.baseline, (r) => r.requestsPerSecond) };
    const p99 = { service: of(runs.service, (r) => r.p99Ms), baseline: of(runs.baseline, (r) => r.p99Ms) };
    console.log(`GET /api/v1/memory vs bare workerd JSON route (wrk, ${CONNECTIONS} connections, ${SECONDS} s, median of ${ROUNDS} rounds)`);
    console.log(
      `  requests per second   ratio ${ratio(rps.service, rps.baseline)}   (higher is better; service ${rps.service.toFixed(0)}/s, baseline ${rps.baseline.toFixed(0)}/s)`,
    );
    console.log(
      `  p99 latency           ratio ${ratio(p99.service, p99.baseline)}   (lower is better; service ${p99.service.toFixed(1)} ms, baseline ${p99.baseline.toFixed(1)} ms)`,
    );
    console.log(
      `  non-2xx responses: service ${sum(runs.service, (r) => r.non2xx)} of ${sum(runs.service, (r) => r.requests)}, baseline ${sum(runs.baseline, (r) => r.non2xx)} of ${sum(runs.baseline, (r) => r.requests)}; socket errors: service ${sum(runs.service, (r) => r.socketErrors)}, baseline ${sum(runs.baseline, (r) => r.socketErrors)}`,
    );
  } finally {
    baseline.stop();
    await service.stop();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(CONFIG, { force: true });
  }
}

await main();
