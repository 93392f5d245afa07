/**
 * npm run bench:memory: authenticated `GET /api/v1/memory` against a bare workerd JSON route
 * (bench/baseline-worker.js `/json`, a body of the same size), both under `wrangler dev`, in one
 * run; printed as ratios. Closed loop (wrk, the same connections for the same time, alternating):
 * throughput with an API key, a session token and an OAuth access token, and the API key's p99.
 * Open loop (bench/lib.ts openLoop): p99 of both at one offered rate, 80% of the API key's own
 * closed-loop throughput. Each service request asks the credential owner's CredentialGate who is
 * calling and counts the request there, then reads the document (D1); the limit itself is raised
 * for this instance (bench/service-worker.ts), so the load is not answered 429. For comparison it
 * also prints the Worker's own cost (/health) and the cost with one Durable Object call (no
 * credential: the per-IP counter, then 401), and the floors: the bare Worker making the same
 * kinds of call (an object call, a counting one, a D1 read) with nothing of the service around them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DISK_TMPDIR,
  expectOk,
  measured,
  median,
  newSession,
  oauthAccessToken,
  openLoop,
  ratio,
  startBaseline,
  startService,
  TARGETS,
  wrk,
  writeBenchConfig,
  type BenchService,
  type OpenLoopResult,
  type WrkResult,
} from './lib';

const CONFIG = 'bench/.service.wrangler.toml';
const ROUNDS = 3;
const SECONDS = 10;
const CONNECTIONS = 10;
/** A keyed read's floor, for throughput and the open loop's p99: the calls a keyed read of this design makes, and nothing else. */
const KEYED_READ_FLOOR = 'a counting object call, then a D1 read';
/** The open loop's offered rate, as a share of the service's own closed-loop throughput. */
const OPEN_LOOP_SHARE = 0.8;
/** A working-memory document of a realistic size. */
const MEMORY_CHARS = 2000;
/** Each credential's throughput target, as a share of its floor's (KEYED_READ_FLOOR, closed loop). */
const THROUGHPUT_TARGET = { 'API key': TARGETS.apiKeyThroughput, 'session token': TARGETS.sessionThroughput, 'OAuth token': TARGETS.oauthThroughput };

async function putMemory(url: string, headers: Record<string, string>) {
  const put = await fetch(url, {
    method: 'PUT',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'x'.repeat(MEMORY_CHARS) }),
  });
  await expectOk(put, 'PUT /api/v1/memory');
}

const loadAverage = () => loadavg()[0]!.toFixed(2);
const floorUrl = (base: string) => `${base}/floor/counter-d1?chars=${MEMORY_CHARS}`;

/** The service and the bare Worker, their state under `stateRoot`; `use` runs while both answer. */
async function withInstances(stateRoot: string, use: (service: BenchService, baseline: { base: string }) => Promise<void>) {
  const stateDir = mkdtempSync(join(stateRoot, 'wss-bench-'));
  const service = await startService(CONFIG, stateDir);
  const baseline = await startBaseline(stateRoot);
  try {
    await use(service, baseline);
  } finally {
    baseline.stop();
    await service.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** The one disk-backed figure: the API key's throughput against its floor with both instances' state on disk. */
async function diskReference() {
  await withInstances(DISK_TMPDIR, async (service, baseline) => {
    const url = `${service.base}/api/v1/memory`;
    const headers = { 'x-api-key': service.apiKey };
    await putMemory(url, headers);
    wrk(url, { connections: CONNECTIONS, seconds: 3, headers });
    wrk(floorUrl(baseline.base), { connections: CONNECTIONS, seconds: 3 });
    const keyed: number[] = [];
    const floor: number[] = [];
    for (let round = 0; round < 2; round++) {
      keyed.push(wrk(url, { connections: CONNECTIONS, seconds: SECONDS, headers }).requestsPerSecond);
      floor.push(wrk(floorUrl(baseline.base), { connections: CONNECTIONS, seconds: SECONDS }).requestsPerSecond);
    }
    console.log(
      `on disk (state under ${DISK_TMPDIR}), for reference: requests per second, API key, to its floor ${measured(median(keyed), median(floor), 'higher', `service ${median(keyed).toFixed(0)}/s, floor ${median(floor).toFixed(0)}/s, median of 2 rounds`)}`,
    );
  });
}

async function main() {
  writeBenchConfig(CONFIG, 'service-worker.ts');
  try {
    console.log(`state under ${tmpdir()}`);
    await withInstances(tmpdir(), measure);
    await diskReference();
  } finally {
    rmSync(CONFIG, { force: true });
  }
}

async function measure(service: BenchService, baseline: { base: string }) {
  const serviceUrl = `${service.base}/api/v1/memory`;
  const baselineUrl = `${baseline.base}/json?chars=${MEMORY_CHARS}`;
  const session = await newSession(service.base);
  const credentials = {
    'API key': { 'x-api-key': service.apiKey },
    'session token': { 'x-auth-token': session },
    'OAuth token': { authorization: `Bearer ${await oauthAccessToken(service.base, session)}` },
  };
  // The key's workspace and the session's (which the OAuth token shares) each get the document.
  await putMemory(serviceUrl, credentials['API key']);
  await putMemory(serviceUrl, credentials['session token']);
  const kinds = Object.keys(credentials) as (keyof typeof credentials)[];

  console.log(`load average (1 min) at the start: ${loadAverage()}`);
  for (const kind of kinds) wrk(serviceUrl, { connections: CONNECTIONS, seconds: 3, headers: credentials[kind] }); // warm up
  wrk(baselineUrl, { connections: CONNECTIONS, seconds: 3 });
  const closed = { baseline: [] as WrkResult[], ...Object.fromEntries(kinds.map((k) => [k, [] as WrkResult[]])) } as Record<
    keyof typeof credentials | 'baseline',
    WrkResult[]
  >;
  // Where a keyed read's time goes: the Worker with no storage call (/health), and with one
  // Durable Object call (no credential: the per-IP counter answers, then 401).
  const parts = { '/health, no storage call': `${service.base}/health`, 'no credential, one object call (401)': serviceUrl };
  // What the runtime itself charges for those calls: the bare Worker making each of them (bench/baseline-worker.js).
  const floors = {
    'one object call that does nothing': `${baseline.base}/floor/object?chars=${MEMORY_CHARS}`,
    'one object call that counts in storage': `${baseline.base}/floor/counter?chars=${MEMORY_CHARS}`,
    'one D1 read': `${baseline.base}/floor/d1?chars=${MEMORY_CHARS}`,
    [KEYED_READ_FLOOR]: floorUrl(baseline.base),
    'one object call that counts and answers the document from its storage': `${baseline.base}/floor/counter-document?chars=${MEMORY_CHARS}`,
  };
  const sideRoutes: Record<string, string> = { ...parts, ...floors };
  const sideRuns = Object.fromEntries(Object.keys(sideRoutes).map((name) => [name, [] as WrkResult[]]));
  for (let round = 0; round < ROUNDS; round++) {
    // Each credential goes first in one round: the first run after the floors (another workerd) was the slowest, whichever it was.
    for (const kind of [...kinds.slice(round % kinds.length), ...kinds.slice(0, round % kinds.length)])
      closed[kind].push(wrk(serviceUrl, { connections: CONNECTIONS, seconds: SECONDS, headers: credentials[kind] }));
    closed.baseline.push(wrk(baselineUrl, { connections: CONNECTIONS, seconds: SECONDS }));
    for (const [name, url] of Object.entries(sideRoutes)) sideRuns[name]!.push(wrk(url, { connections: CONNECTIONS, seconds: SECONDS }));
  }

  const of = <R>(rs: R[], pick: (r: R) => number) => median(rs.map(pick));
  const sum = <R>(rs: R[], pick: (r: R) => number) => rs.reduce((n, r) => n + pick(r), 0);
  const rps = (kind: keyof typeof closed) => of(closed[kind], (r) => r.requestsPerSecond);

  const rate = Math.max(1, Math.round(rps('API key') * OPEN_LOOP_SHARE));
  const open = { service: [] as OpenLoopResult[], baseline: [] as OpenLoopResult[], floor: [] as OpenLoopResult[] };
  for (let round = 0; round < ROUNDS; round++) {
    open.service.push(await openLoop(serviceUrl, { rate, seconds: SECONDS, headers: credentials['API key'] }));
    open.baseline.push(await openLoop(baselineUrl, { rate, seconds: SECONDS }));
    open.floor.push(await openLoop(floors[KEYED_READ_FLOOR], { rate, seconds: SECONDS }));
  }

  console.log(`GET /api/v1/memory vs bare workerd JSON route (median of ${ROUNDS} rounds; load average (1 min) at the end: ${loadAverage()})`);
  console.log(`closed loop: wrk, ${CONNECTIONS} connections, ${SECONDS} s`);
  const floorRps = of(sideRuns[KEYED_READ_FLOOR]!, (r) => r.requestsPerSecond);
  console.log(`  a keyed read's floor: the bare Worker with ${KEYED_READ_FLOOR}`);
  for (const kind of kinds) {
    console.log(
      `  requests per second, ${kind.padEnd(13)}   to its floor ${measured(rps(kind), floorRps, THROUGHPUT_TARGET[kind], `service ${rps(kind).toFixed(0)}/s, floor ${floorRps.toFixed(0)}/s; to the bare route (${rps('baseline').toFixed(0)}/s) ${ratio(rps(kind), rps('baseline'))}`)}`,
    );
  }
  /** A part's or a floor's throughput against the bare route's. */
  const sideRatio = (name: string) => {
    const sideRps = of(sideRuns[name]!, (r) => r.requestsPerSecond);
    return `ratio ${ratio(sideRps, rps('baseline'))} (${sideRps.toFixed(0)}/s)`;
  };
  for (const name of Object.keys(parts)) console.log(`    for comparison, ${name}: ${sideRatio(name)}`);
  console.log('  the bare Worker with the same calls (the floor a keyed read of this design can reach here; the last: of any design that counts exactly):');
  for (const name of Object.keys(floors)) console.log(`    ${name}: ${sideRatio(name)}`);
  const p99 = { service: of(closed['API key'], (r) => r.p99Ms), baseline: of(closed.baseline, (r) => r.p99Ms) };
  console.log(
    `  p99 latency, API key, to the bare route's   ${measured(p99.service, p99.baseline, 'lower', `service ${p99.service.toFixed(1)} ms, baseline ${p99.baseline.toFixed(1)} ms`)}`,
  );
  console.log(`open loop: ${rate} requests/s offered to each (${OPEN_LOOP_SHARE * 100}% of the API key's closed-loop rate), ${SECONDS} s`);
  const openP99 = { service: of(open.service, (r) => r.p99Ms), baseline: of(open.baseline, (r) => r.p99Ms), floor: of(open.floor, (r) => r.p99Ms) };
  console.log(
    `  p99 latency, API key, to its floor's   ${measured(openP99.service, openP99.floor, TARGETS.openLoopP99, `service ${openP99.service.toFixed(1)} ms, floor ${openP99.floor.toFixed(1)} ms; the bare route ${openP99.baseline.toFixed(1)} ms`)}`,
  );
  const runs: [string, (WrkResult | OpenLoopResult)[]][] = [
    ...kinds.map((k) => [k, closed[k]] as [string, WrkResult[]]),
    ['baseline', closed.baseline],
    ['open loop, API key', open.service],
    ['open loop, baseline', open.baseline],
    ['open loop, floor', open.floor],
    ['floors', Object.keys(floors).flatMap((name) => sideRuns[name]!)],
  ];
  console.log(
    `  non-2xx responses: ${runs.map(([name, rs]) => `${name} ${sum(rs, (r) => r.non2xx)} of ${sum(rs, (r) => r.requests)}`).join(', ')}; socket errors: ${sum(
      runs.flatMap(([, rs]) => rs),
      (r) => r.socketErrors,
    )}`,
  );
}

await main();
