/**
 * npm run capacity [-- --shards N]: where the service saturates first with N shard databases,
 * projected from the measured cost of each operation (bench/capacity-counts.json, written by
 * `npm run capacity:measure`) and Cloudflare's published platform limits; without --shards, a
 * table for 1, 8, 64 and 1,000 shards. bench/CAPACITY.md explains the numbers and the plan.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { RETENTION_DEFAULTS } from '../workers/services/retention-defaults';
import type { Counts, D1Counts, DatabaseKind, StorageCounts } from './operation-cost';

interface Cost extends Counts {
  what: string;
}

/** Published limits (Cloudflare's D1, Durable Objects and Queues documentation; see CAPACITY.md). */
const LIMITS = {
  /** One D1 database runs one query at a time: about 1,000 queries a second at 1 ms a query. */
  d1QueriesPerSecond: 1_000,
  d1DatabaseBytes: 10 * 1024 ** 3,
  /** Every D1 database of the account together (Workers Paid). */
  d1AccountBytes: 1024 ** 4,
  /** D1 bindings one Worker may have (about 5,000): the most shards one deployment can address. */
  d1BindingsPerWorker: 5_000,
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
  /** The workspace's credential is in use, so its resolution is read again every minute. */
  credentialReload: 1 / 60,
  skillRun: 1 / 60,
  streamOpen: 1 / 60,
  workflowStep: 10 / 60,
  webhook: 1 / 3_600,
};
/** Bytes a written D1 row keeps on average (row and index entries; an estimate, see CAPACITY.md). */
const BYTES_PER_ROW_WRITTEN = 250;

/** The bar the plan is judged by (CAPACITY.md): a tenth of the 1.62 D1 queries a second an active workspace cost when one database held everything, and 30,000 active workspaces on 64 shards. */
const BARS = { globalQueriesPerWorkspace: 0.162, shards: 64, workspaces: 30_000 };
const TABLE_SHARDS = [1, 8, 64, 1_000];

const { values: args } = parseArgs({ options: { shards: { type: 'string' } } });
const shardsArg = args.shards === undefined ? undefined : Number(args.shards);
if (shardsArg !== undefined && !(Number.isInteger(shardsArg) && shardsArg >= 1)) throw new Error('--shards takes a whole number of shards, 1 or more');

const { measured, operations, shardStorage } = JSON.parse(readFileSync('bench/capacity-counts.json', 'utf8')) as {
  measured: string;
  operations: Record<string, Cost>;
  shardStorage: StorageCounts;
};
const queries = (d: D1Counts) => d.reads + d.writes;
const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);
const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'never');
const perSecond = (limit: number, cost: number) => (cost > 0 ? limit / cost : Infinity);
const GB = 1024 ** 3;
const DAY = 86_400;
const list = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || '0';

console.log(`Cost per operation (measured ${measured}; npm run capacity:measure)`);
console.log('operation          global D1 queries (r+w)  rows r/w  shard D1 queries (r+w)  rows r/w  DO calls; queue; R2');
for (const [name, c] of Object.entries(operations)) {
  const db = (kind: DatabaseKind) => {
    const d = c.d1[kind];
    return [`${queries(d)} (${d.reads}+${d.writes})`.padEnd(23), `${d.rowsRead}/${d.rowsWritten}`.padEnd(9)].join(' ');
  };
  console.log(`${name.padEnd(18)} ${db('global')} ${db('shard')} ${list(c.doCalls)}; ${c.queueMessages}; ${list(c.r2)}`);
}

console.log('\nOne operation alone: requests per second until a resource saturates');
for (const [name, c] of Object.entries(operations)) {
  const limits = [
    { resource: 'the global database', rate: perSecond(LIMITS.d1QueriesPerSecond, queries(c.d1.global)) },
    { resource: "the workspace's shard", rate: perSecond(LIMITS.d1QueriesPerSecond, queries(c.d1.shard)) },
    { resource: 'the workflow-steps queue', rate: perSecond(LIMITS.queueMessagesPerSecond, c.queueMessages) },
    ...Object.entries(c.doCalls).map(([k, v]) => ({ resource: OBJECT_SCOPE[k] ?? k, rate: perSecond(LIMITS.objectRequestsPerSecond, v) })),
  ].filter((l) => Number.isFinite(l.rate));
  console.log(`  ${name.padEnd(17)} ${limits.map((l) => `${fmt(l.rate)}/s per ${l.resource}`).join('; ') || 'nothing it uses saturates'}`);
}

/** What one active workspace costs a second, by resource. */
const perWorkspace = { global: 0, shard: 0, globalRowsWritten: 0, shardRowsWritten: 0, queue: 0, objectCalls: 0, requests: 0 };
const globalByOperation: Record<string, number> = {};
for (const [name, rate] of Object.entries(PROFILE)) {
  const c = operations[name];
  if (!c) continue;
  globalByOperation[name] = rate * queries(c.d1.global);
  perWorkspace.global += rate * queries(c.d1.global);
  perWorkspace.shard += rate * queries(c.d1.shard);
  perWorkspace.globalRowsWritten += rate * c.d1.global.rowsWritten;
  perWorkspace.shardRowsWritten += rate * c.d1.shard.rowsWritten;
  perWorkspace.queue += rate * c.queueMessages;
  perWorkspace.objectCalls += rate * sum(c.doCalls);
  // A reload happens inside a keyed request, not as one of its own.
  if (name !== 'credentialReload') perWorkspace.requests += rate;
}

/** With `shards` shards and workspaces spread evenly over them: where each resource saturates, the first, and storage at that load. */
function project(shards: number) {
  const saturation = [
    { resource: 'the global database', workspaces: perSecond(LIMITS.d1QueriesPerSecond, perWorkspace.global) },
    { resource: 'a shard', workspaces: perSecond(LIMITS.d1QueriesPerSecond * shards, perWorkspace.shard) },
    { resource: 'the workflow-steps queue', workspaces: perSecond(LIMITS.queueMessagesPerSecond, perWorkspace.queue) },
  ].sort((a, b) => a.workspaces - b.workspaces);
  const ceiling = saturation[0]!.workspaces;
  const bytesPerDay = (rowsWritten: number, workspaces: number) => workspaces * rowsWritten * BYTES_PER_ROW_WRITTEN * DAY;
  const shardBytesPerDay = bytesPerDay(perWorkspace.shardRowsWritten, ceiling / shards);
  const globalBytesPerDay = bytesPerDay(perWorkspace.globalRowsWritten, ceiling);
  return {
    shards,
    saturation,
    first: saturation[0]!,
    ceiling,
    shardBytesPerDay,
    globalBytesPerDay,
    accountBytesPerDay: globalBytesPerDay + shardBytesPerDay * shards,
  };
}
const days = (limit: number, perDay: number) => (perDay > 0 ? `${(limit / perDay).toFixed(1)} days` : 'never');

console.log(
  `\nAn active workspace (${Object.entries(PROFILE)
    .map(([k, v]) => `${k} ${v < 1 ? `${fmt(v * 3_600)}/h` : `${v}/s`}`)
    .join(', ')}):`,
);
console.log(
  `  global database ${perWorkspace.global.toFixed(3)} queries/s and ${perWorkspace.globalRowsWritten.toFixed(3)} rows written/s; its shard ${perWorkspace.shard.toFixed(2)} queries/s and ${perWorkspace.shardRowsWritten.toFixed(2)} rows written/s`,
);
console.log(
  `  ${perWorkspace.queue.toFixed(2)} queue messages/s, ${perWorkspace.objectCalls.toFixed(2)} Durable Object calls/s (spread over its own objects), ${perWorkspace.requests.toFixed(2)} requests/s`,
);
console.log("  the global database's queries per active workspace, by operation:");
for (const [name, q] of Object.entries(globalByOperation).sort((a, b) => b[1] - a[1]))
  if (q > 0) console.log(`    ${name.padEnd(17)} ${q.toFixed(4)}/s (${((q / perWorkspace.global) * 100).toFixed(0)}%)`);

if (shardsArg !== undefined) {
  const p = project(shardsArg);
  console.log(`\nWith ${fmt(shardsArg)} shard${shardsArg === 1 ? '' : 's'}, workspaces spread evenly:`);
  for (const s of p.saturation)
    console.log(
      `  ${s.resource}: ${Number.isFinite(s.workspaces) ? `saturates at ${fmt(s.workspaces)} active workspaces` : 'never saturates (this profile sends it nothing)'}`,
    );
  console.log(`  first: ${p.first.resource}, at ${fmt(p.ceiling)} active workspaces and ${fmt(p.ceiling * perWorkspace.requests)} requests/s in all`);
  console.log(
    `  at that load each shard grows ${(p.shardBytesPerDay / GB).toFixed(2)} GB a day (10 GB in ${days(LIMITS.d1DatabaseBytes, p.shardBytesPerDay)} without retention)`,
  );
  console.log(`  and the global database ${(p.globalBytesPerDay / GB).toFixed(2)} GB a day (10 GB in ${days(LIMITS.d1DatabaseBytes, p.globalBytesPerDay)})`);
  console.log(
    `  every database together ${(p.accountBytesPerDay / GB).toFixed(1)} GB a day: the account's 1 TB in ${days(LIMITS.d1AccountBytes, p.accountBytesPerDay)}`,
  );
  if (shardsArg > LIMITS.d1BindingsPerWorker) console.log(`  beyond the ~${fmt(LIMITS.d1BindingsPerWorker)} D1 bindings one Worker may have`);
} else {
  console.log('\nWith N shards, workspaces spread evenly (npm run capacity -- --shards N for one N in full):');
  console.log('shards  ceiling (active workspaces)  saturates first       per shard a day  global a day  all D1 a day (1 TB in)');
  for (const p of TABLE_SHARDS.map(project))
    console.log(
      `${fmt(p.shards).padEnd(7)} ${fmt(p.ceiling).padEnd(28)} ${p.first.resource.padEnd(21)} ${`${(p.shardBytesPerDay / GB).toFixed(2)} GB`.padEnd(16)} ${`${(p.globalBytesPerDay / GB).toFixed(2)} GB`.padEnd(13)} ${(p.accountBytesPerDay / GB).toFixed(1)} GB (${days(LIMITS.d1AccountBytes, p.accountBytesPerDay)})`,
    );
}

const atBar = project(BARS.shards);
const globalMet = perWorkspace.global <= BARS.globalQueriesPerWorkspace;
const ceilingMet = atBar.ceiling >= BARS.workspaces;
console.log('\nThe bar:');
console.log(
  `  global-database queries per active workspace ≤ ${BARS.globalQueriesPerWorkspace}/s: ${perWorkspace.global.toFixed(3)}/s, ${globalMet ? 'met' : 'NOT met'}`,
);
console.log(
  `  ≥ ${fmt(BARS.workspaces)} active workspaces with ${BARS.shards} shards: ${fmt(atBar.ceiling)} (${atBar.first.resource} first), ${ceilingMet ? 'met' : 'NOT met'}`,
);
if (!globalMet) {
  const [top] = Object.entries(globalByOperation).sort((a, b) => b[1] - a[1]);
  console.log(`  the global database's load comes mostly from ${top![0]} (${((top![1] / perWorkspace.global) * 100).toFixed(0)}%; by operation above)`);
}
console.log('  no single Durable Object saturates with the workspace count: each is one user, execution, workspace or run (per-object ceilings above)');

/**
 * Days each shard table's rows are kept under the default windows (docs/operations.md,
 * Retention); a table not named is kept until deleted. Idempotency records and run tool-call
 * keys go after a day.
 */
const RETENTION_DAYS: Record<string, number> = {
  traces: RETENTION_DEFAULTS.traces,
  trace_segments: RETENTION_DEFAULTS.traces,
  trace_turns: RETENTION_DEFAULTS.traces,
  workflow_runs: RETENTION_DEFAULTS.workflowRuns,
  workflow_step_results: RETENTION_DEFAULTS.workflowRuns,
  activity_log: RETENTION_DEFAULTS.activity,
  audit_log: RETENTION_DEFAULTS.audit,
  idempotency_records: 1,
  run_tool_calls: 1,
};
/** The profile's ten workflow steps a minute are one run of ten steps. */
const STORAGE_RATES: Record<string, number> = { ...PROFILE, workflowRun: PROFILE.workflowStep! / 10 };
/** How long data kept until deleted is counted for, in the workspaces a shard holds. */
const KEPT_HORIZON_DAYS = 365;
const MB = 1024 ** 2;

/** Rows an active workspace adds to each shard table a day, from the rows each operation added in the measure. */
const rowsPerDay: Record<string, number> = {};
for (const [operation, tables] of Object.entries(shardStorage.rowsAdded)) {
  for (const [table, rows] of Object.entries(tables)) rowsPerDay[table] = (rowsPerDay[table] ?? 0) + rows * (STORAGE_RATES[operation] ?? 0) * DAY;
}
let windowed = 0;
let keptPerDay = 0;
console.log(
  `\nShard storage of an active workspace under the default retention windows (bytes per row measured from the measure's rows: ${shardStorage.totals.rows} rows, ${fmt(shardStorage.totals.bytes)} bytes computed; the shard files ${fmt(shardStorage.totals.fileBytes)} bytes, mostly the schema's empty pages)`,
);
console.log('table                    rows a day  bytes/row  kept            held at steady state');
for (const [table, rows] of Object.entries(rowsPerDay).sort((a, b) => b[1] - a[1])) {
  const bytes = shardStorage.bytesPerRow[table];
  if (bytes === undefined) throw new Error(`capacity-counts.json has rows added to ${table} but no bytes per row: run npm run capacity:measure`);
  const days = RETENTION_DAYS[table];
  const held = days === undefined ? undefined : rows * bytes * days;
  if (held === undefined) keptPerDay += rows * bytes;
  else windowed += held;
  console.log(
    `${table.padEnd(24)} ${fmt(rows).padEnd(11)} ${fmt(bytes).padEnd(10)} ${(days === undefined ? 'until deleted' : `${days} days`).padEnd(15)} ${held === undefined ? `grows ${((rows * bytes) / MB).toFixed(2)} MB a day` : `${(held / MB).toFixed(1)} MB`}`,
  );
}
const perWorkspaceBytes = windowed + keptPerDay * KEPT_HORIZON_DAYS;
console.log(
  `  per active workspace: ${(windowed / MB).toFixed(0)} MB held by the windows, and ${(keptPerDay / MB).toFixed(2)} MB a day kept until deleted (${((keptPerDay * KEPT_HORIZON_DAYS) / MB).toFixed(0)} MB a year)`,
);
console.log(
  `  a shard (10 GB) holds ${fmt(Math.floor(LIMITS.d1DatabaseBytes / windowed))} active workspaces at steady state counting the windowed data alone, ${fmt(Math.floor(LIMITS.d1DatabaseBytes / perWorkspaceBytes))} with a year of the data kept until deleted`,
);
console.log(
  `  at that count a shard holds ${((Math.floor(LIMITS.d1DatabaseBytes / perWorkspaceBytes) * perWorkspaceBytes) / GB).toFixed(2)} GB; a shard's throughput (above) carries ${fmt(perSecond(LIMITS.d1QueriesPerSecond, perWorkspace.shard))} active workspaces`,
);
