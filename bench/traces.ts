/**
 * npm run bench:traces: `GET /api/v1/traces` in a workspace with 100,000 traces against the same
 * request in a workspace with 100, in one `wrangler dev`, in one run;
 * printed as ratios (100k / 100; 1 would mean the list does not slow down as a workspace grows).
 *
 * Seeding: the trace rows are inserted into each workspace's local shard database directly
 * (`wrangler d1 execute --local` with generated SQL, the columns of schema/shard/traces.ts) while
 * the service is stopped; creating
 * 100,000 traces through runs would take days. The list reads only the `traces` table, so the
 * runs the traces point at are not seeded.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { measured, median, startService, TARGETS, writeBenchConfig, type BenchService } from './lib';

const CONFIG = 'bench/.service.wrangler.toml';
const LARGE = 100_000;
const SMALL = 100;
const PAGE = 50;
/** Sequential requests per query and workspace, alternating between the two workspaces. */
const SAMPLES = 15;
const DAY = 86_400_000;

interface Tenant {
  apiKey: string;
  userId: string;
  workspaceId: string;
  apiKeyId: number;
}

/** A UUIDv7 for `ms`, as workers/lib/ids.ts makes them (so ids order by time, as the list's keyset expects). */
function uuidv7At(ms: number): string {
  const bytes = randomBytes(16);
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * `count` traces over the last 30 days: a third chats, 5% failed, 1% by the agent
 * `bench-agent`, half started with the tenant's key. Answers the SQL and the ids, newest first.
 */
function traceRows(tenant: Tenant, count: number, endMs: number) {
  const values: string[] = [];
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = endMs - 30 * DAY + Math.floor((i * 30 * DAY) / count);
    const id = uuidv7At(at);
    ids.push(id);
    const chat = i % 3 === 0;
    const status = i % 20 === 0 ? 'failed' : i % 4 === 0 ? 'idle' : 'completed';
    const agent = i % 100 === 0 ? `'bench-agent'` : 'NULL';
    values.push(
      `('${id}', '${tenant.workspaceId}', 'bench-${i}', '${chat ? 'chat' : 'execution'}', 'Bench trace ${i}', '${status}', '${tenant.userId}', ${i % 2 ? tenant.apiKeyId : 'NULL'}, ${agent}, ${chat ? 'NULL' : 100_000 + i}, ${chat ? `'${uuidv7At(at)}'` : 'NULL'}, ${i % 700}, ${at}, ${at + 60_000})`,
    );
  }
  const statements: string[] = [];
  for (let i = 0; i < values.length; i += 200) {
    statements.push(
      `INSERT INTO traces (id, workspace_id, trace_key, kind, title, status, actor_user_id, actor_api_key_id, actor_agent_slug, target_execution_id, target_thread_id, total_cost, started_at, last_activity_at) VALUES\n${values.slice(i, i + 200).join(',\n')};`,
    );
  }
  return { sql: statements.join('\n'), newestFirst: ids.reverse() };
}

/** `wrangler d1 execute` on the local database bound as `binding`, while the service is stopped; answers its output. */
function d1Execute(stateDir: string, binding: string, args: string[]): string {
  const run = spawnSync(
    process.execPath,
    ['node_modules/wrangler/bin/wrangler.js', 'd1', 'execute', binding, '--local', '--persist-to', stateDir, '--config', CONFIG, ...args],
    { encoding: 'utf8', env: { ...process.env, CI: 'true', WRANGLER_SEND_METRICS: 'false' } },
  );
  if (run.status !== 0) throw new Error(`wrangler d1 execute ${binding} failed:\n${run.stdout}${run.stderr}`);
  return run.stdout;
}

/** The list's cursor after the trace `id` (the service's encoding, workers/services/traces.ts). */
const cursorAfter = (id: string) => Buffer.from(JSON.stringify({ v: 1, id })).toString('base64url');

async function tenantOf(base: string, apiKey: string): Promise<Tenant> {
  const profile = (await (await fetch(`${base}/api/v1/profile`, { headers: { 'x-api-key': apiKey } })).json()) as {
    id: string;
    workspace: { id: string };
    credential: { apiKeyId: string };
  };
  return { apiKey, userId: profile.id, workspaceId: profile.workspace.id, apiKeyId: Number(profile.credential.apiKeyId.replace(/^key_/, '')) };
}

/** A second account (its own workspace) and a key for it, through the API. */
async function secondTenant(base: string): Promise<Tenant> {
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as any;
  };
  const session = await post('/auth/sign-up/email', { email: 'bench-small@localhost.test', password: randomBytes(12).toString('base64url'), name: 'Bench' });
  const key = await post('/api/v1/api-keys', { name: 'Bench', scopes: ['*'] }, { 'x-auth-token': session.token });
  return tenantOf(base, key.key);
}

async function main() {
  writeBenchConfig(CONFIG, 'service-worker.ts');
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-bench-'));
  let service: BenchService | undefined;
  try {
    service = await startService(CONFIG, stateDir);
    const large = await tenantOf(service.base, service.apiKey);
    const small = await secondTenant(service.base);
    await service.stop();

    const end = Date.now();
    const seeded = { large: traceRows(large, LARGE, end), small: traceRows(small, SMALL, end) };
    // Traces live on their workspace's shard, which the directory (global database) names.
    const places = d1Execute(stateDir, 'DB', ['--command', 'SELECT workspace_id, shard FROM workspace_shards', '--json']);
    const shardOf = new Map((JSON.parse(places)[0].results as { workspace_id: string; shard: number }[]).map((row) => [row.workspace_id, row.shard]));
    for (const [tenant, rows] of [
      [large, seeded.large],
      [small, seeded.small],
    ] as const) {
      const sqlFile = join(stateDir, `bench-traces-${tenant.workspaceId}.sql`);
      writeFileSync(sqlFile, `${rows.sql}\n`);
      d1Execute(stateDir, `SHARD_${shardOf.get(tenant.workspaceId)}`, ['--file', sqlFile]);
    }

    service = await startService(CONFIG, stateDir);
    const base = service.base;
    const list = async (tenant: Tenant, query: string) => {
      const started = performance.now();
      const res = await fetch(`${base}/api/v1/traces?${query}`, { headers: { 'x-api-key': tenant.apiKey } });
      const body = (await res.json()) as { items: unknown[] };
      if (!res.ok) throw new Error(`GET /api/v1/traces?${query}: ${res.status} ${JSON.stringify(body)}`);
      return { ms: performance.now() - started, items: body.items.length };
    };

    // The deep page is the last full one: the cursor of the trace PAGE + 1 from the oldest.
    const deep = (ids: string[]) => `limit=${PAGE}&cursor=${cursorAfter(ids[ids.length - PAGE - 1]!)}`;
    const queries = [
      { name: 'first page', large: `limit=${PAGE}`, small: `limit=${PAGE}` },
      { name: 'deep cursor page (the last full one)', large: deep(seeded.large.newestFirst), small: deep(seeded.small.newestFirst) },
      { name: 'status=failed (5% of traces)', large: `limit=${PAGE}&status=failed`, small: `limit=${PAGE}&status=failed` },
      { name: 'agent=bench-agent (1% of traces)', large: `limit=${PAGE}&agent=bench-agent`, small: `limit=${PAGE}&agent=bench-agent` },
    ];

    for (const q of queries) (await list(large, q.large), await list(small, q.small)); // warm up
    console.log(`GET /api/v1/traces, ${LARGE} traces vs ${SMALL}, each on its workspace's shard (median of ${SAMPLES} requests each)`);
    for (const q of queries) {
      const times = { large: [] as number[], small: [] as number[] };
      let items = { large: 0, small: 0 };
      for (let i = 0; i < SAMPLES; i++) {
        const l = await list(large, q.large);
        const s = await list(small, q.small);
        times.large.push(l.ms);
        times.small.push(s.ms);
        items = { large: l.items, small: s.items };
      }
      const [l, s] = [median(times.large), median(times.small)];
      console.log(
        `  ${q.name.padEnd(38)} ${measured(l, s, TARGETS.traceListing, `${l.toFixed(1)} ms for ${items.large} items, ${s.toFixed(1)} ms for ${items.small}`, q.name)}`,
      );
    }
  } finally {
    await service?.stop();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(CONFIG, { force: true });
  }
}

await main();
