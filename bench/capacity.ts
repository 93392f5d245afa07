/**
 * npm run capacity: where the service saturates first, projected from the measured cost of each
 * operation (bench/capacity-counts.json, written by `npm run capacity:measure`) and Cloudflare's
 * published platform limits. bench/CAPACITY.md explains the numbers and the plan beyond them.
 */
import { readFileSync } from 'node:fs';
import type { Counts } from './operation-cost';

interface Cost extends Counts {
  what: string;
}

/** Published limits (Cloudflare's D1, Durable Objects and Queues documentation; see CAPACITY.md). */
const LIMITS = {
  /** One D1 database runs one query at a time: about 1,000 queries a second at 1 ms a query. */
  d1QueriesPerSecond: 1_000,
  d1DatabaseBytes: 10 * 1024 ** 3,
  /** One Durable Object's soft limit. */
  objectRequestsPerSecond: 1_000,
  /** One queue's message rate. */
  queueMessagesPerSecond: 5_000,
};

/** Which object a call of each class reaches: what one object's limit caps. */
const OBJECT_SCOPE: Record<string, string> = {
  CredentialGate: 'one user (every credential of theirs)',
  RateLimiter: "one counted subject (a user's run starts, a client address)",
  ExecutionSession: 'one execution',
  WorkspaceChannel: 'one workspace',
  WorkflowRun: 'one workflow run',
};

/** What one active workspace does per second: an assumption, stated in CAPACITY.md. */
const PROFILE: Record<string, number> = {
  keyedRead: 1,
  skillRun: 1 / 60,
  streamOpen: 1 / 60,
  workflowStep: 10 / 60,
  webhook: 1 / 3_600,
};
/** Bytes a written D1 row keeps on average (row and index entries; an estimate, see CAPACITY.md). */
const BYTES_PER_ROW_WRITTEN = 250;

const { measured, operations } = JSON.parse(readFileSync('bench/capacity-counts.json', 'utf8')) as { measured: string; operations: Record<string, Cost> };
const queries = (c: Cost) => c.d1Reads + c.d1Writes;
const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);
const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'never');
const perSecond = (limit: number, cost: number) => (cost > 0 ? limit / cost : Infinity);

console.log(`Cost per operation (measured ${measured}; npm run capacity:measure)`);
console.log('operation      D1 queries (reads+writes)  rows read/written  DO calls                       queue  R2');
for (const [name, c] of Object.entries(operations)) {
  const objects = Object.entries(c.doCalls)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const r2 = Object.entries(c.r2)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  console.log(
    `${name.padEnd(14)} ${`${queries(c)} (${c.d1Reads}+${c.d1Writes})`.padEnd(26)} ${`${c.d1RowsRead}/${c.d1RowsWritten}`.padEnd(18)} ${(objects || '0').padEnd(30)} ${String(c.queueMessages).padEnd(6)} ${r2 || '0'}`,
  );
}

console.log('\nOne operation alone: requests per second until the first shared resource saturates');
for (const [name, c] of Object.entries(operations)) {
  const shared = [
    { resource: 'the D1 database', rate: perSecond(LIMITS.d1QueriesPerSecond, queries(c)) },
    { resource: 'the workflow-steps queue', rate: perSecond(LIMITS.queueMessagesPerSecond, c.queueMessages) },
  ].sort((a, b) => a.rate - b.rate)[0]!;
  const objects = Object.entries(c.doCalls)
    .map(([k, v]) => `${fmt(perSecond(LIMITS.objectRequestsPerSecond, v))}/s per ${OBJECT_SCOPE[k] ?? k}`)
    .join('; ');
  console.log(`  ${name.padEnd(13)} ${fmt(shared.rate)}/s (${shared.resource})${objects ? `; and at most ${objects}` : ''}`);
}

const perWorkspace = { d1: 0, queue: 0, rowsWritten: 0, requests: 0, objectCalls: 0 };
for (const [name, rate] of Object.entries(PROFILE)) {
  const c = operations[name];
  if (!c) continue;
  perWorkspace.d1 += rate * queries(c);
  perWorkspace.queue += rate * c.queueMessages;
  perWorkspace.rowsWritten += rate * c.d1RowsWritten;
  perWorkspace.objectCalls += rate * sum(c.doCalls);
  perWorkspace.requests += rate;
}
const saturation = [
  { resource: 'D1 query throughput (one database)', workspaces: perSecond(LIMITS.d1QueriesPerSecond, perWorkspace.d1) },
  { resource: 'workflow-steps queue message rate', workspaces: perSecond(LIMITS.queueMessagesPerSecond, perWorkspace.queue) },
].sort((a, b) => a.workspaces - b.workspaces);
const first = saturation[0]!;
const bytesPerDay = (workspaces: number) => workspaces * perWorkspace.rowsWritten * BYTES_PER_ROW_WRITTEN * 86_400;

console.log(
  `\nAn active workspace (${Object.entries(PROFILE)
    .map(([k, v]) => `${k} ${v < 1 ? `${fmt(v * 3_600)}/h` : `${v}/s`}`)
    .join(', ')}):`,
);
console.log(
  `  ${perWorkspace.d1.toFixed(2)} D1 queries/s, ${perWorkspace.queue.toFixed(2)} queue messages/s, ${perWorkspace.objectCalls.toFixed(2)} Durable Object calls/s (spread over its own objects), ${perWorkspace.rowsWritten.toFixed(2)} D1 rows written/s`,
);
for (const s of saturation)
  console.log(
    `  ${s.resource}: ${Number.isFinite(s.workspaces) ? `saturates at ${fmt(s.workspaces)} active workspaces` : 'never saturates (this profile sends it nothing)'}`,
  );
console.log(`  first: ${first.resource}, at ${fmt(first.workspaces)} active workspaces and ${fmt(first.workspaces * perWorkspace.requests)} requests/s in all`);
const days = LIMITS.d1DatabaseBytes / bytesPerDay(first.workspaces);
console.log(
  `  at that load the D1 database grows ${(bytesPerDay(first.workspaces) / 1024 ** 3).toFixed(2)} GB a day: 10 GB in ${days.toFixed(1)} days without retention`,
);
console.log('  no single Durable Object saturates with the workspace count: each is one credential, execution, workspace or run (per-object ceilings above)');
