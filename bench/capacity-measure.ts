/**
 * npm run capacity:measure: runs each operation of the capacity plan once (or n times) against the
 * service under `wrangler dev` with counting bindings (bench/counting-worker.ts), and writes what
 * each one cost (D1 statements and rows in the global database and in the shards, Durable Object
 * calls by class, queue messages, R2 operations) to bench/capacity-counts.json, which
 * `npm run capacity` projects from.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { CAPACITY_WEBHOOK_SECRET } from './capacity-webhook-secret';
import { startService, writeBenchConfig } from './lib';
import type { Counts, D1Counts, StorageCounts, TableStorage } from './operation-cost';

const CONFIG = 'bench/.capacity.wrangler.toml';
const OUTPUT = 'bench/capacity-counts.json';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long the user's CredentialGate trusts a credential's resolution before reading it again (durable-objects/CredentialGate.ts). */
const RESOLUTION_MAX_AGE_MS = 60_000;

/** `a − b` per unit, field by field. */
function perUnit(a: Counts, b: Counts | null, units: number): Counts {
  const sub = (x: number, y = 0) => Math.round(((x - y) / units) * 100) / 100;
  const map = (x: Record<string, number>, y: Record<string, number> = {}) =>
    Object.fromEntries([...new Set([...Object.keys(x), ...Object.keys(y)])].map((k) => [k, sub(x[k] ?? 0, y[k])]).filter(([, v]) => v !== 0));
  const d1 = (x: D1Counts, y?: D1Counts): D1Counts => ({
    reads: sub(x.reads, y?.reads),
    writes: sub(x.writes, y?.writes),
    rowsRead: sub(x.rowsRead, y?.rowsRead),
    rowsWritten: sub(x.rowsWritten, y?.rowsWritten),
  });
  return {
    d1: { global: d1(a.d1.global, b?.d1.global), shard: d1(a.d1.shard, b?.d1.shard) },
    doCalls: map(a.doCalls, b?.doCalls),
    queueMessages: sub(a.queueMessages, b?.queueMessages),
    r2: map(a.r2, b?.r2),
  };
}

async function main() {
  writeBenchConfig(CONFIG, 'counting-worker.ts');
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-capacity-'));
  const service = await startService(CONFIG, stateDir);
  try {
    const headers = { 'x-api-key': service.apiKey, 'content-type': 'application/json' };
    const api = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${service.base}${path}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
      if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`);
      return res;
    };
    const json = async (path: string, body?: unknown) =>
      (await (await api(path, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) })).json()) as any;
    const counts = async () => (await (await fetch(`${service.base}/__capacity`)).json()) as Counts;
    const reset = () => fetch(`${service.base}/__capacity`, { method: 'DELETE' });
    /** Waits until nothing more is counted for `quietMs` (a run's or workflow's background work has ended). */
    const settled = async (quietMs = 3_000) => {
      let last = JSON.stringify(await counts());
      for (let still = 0; still < quietMs; still += 250) {
        await pause(250);
        const now = JSON.stringify(await counts());
        if (now !== last) ((last = now), (still = -250));
      }
      return JSON.parse(last) as Counts;
    };
    /** When the credential's resolution was last read from the global database; a later measure must end before it is read again. */
    let resolvedAt = 0;
    const storage = async () =>
      (await (await fetch(`${service.base}/__capacity/storage`)).json()) as { tables: Record<string, TableStorage>; fileBytes: number };
    /** Rows each shard table gained between two readings of the storage, per unit. */
    const gained = (before: Record<string, TableStorage>, after: Record<string, TableStorage>, units: number) =>
      Object.fromEntries(
        Object.entries(after)
          .map(([table, { rows }]) => [table, Math.round(((rows - (before[table]?.rows ?? 0)) / units) * 100) / 100] as const)
          .filter(([, rows]) => rows !== 0),
      );
    /** Rows each shard table gained in the last measure. */
    let lastRows: Record<string, number> = {};
    /** The counts of `op`, run `units` times, once its background work has settled. */
    const measure = async (units: number, op: () => Promise<unknown>) => {
      await settled(1_000);
      const before = (await storage()).tables;
      await reset();
      for (let i = 0; i < units; i++) await op();
      const result = await settled();
      if (Date.now() - resolvedAt >= RESOLUTION_MAX_AGE_MS)
        throw new Error(`the measures took longer than ${RESOLUTION_MAX_AGE_MS / 1000} s: a credential reload would be counted in an operation`);
      lastRows = gained(before, (await storage()).tables, units);
      return result;
    };
    /** Rows per unit of a difference of two measures (a step: an 11-step run less a 1-step run). */
    const rowsDifference = (a: Record<string, number>, b: Record<string, number>, units: number) =>
      Object.fromEntries(
        [...new Set([...Object.keys(a), ...Object.keys(b)])]
          .map((table) => [table, Math.round((((a[table] ?? 0) - (b[table] ?? 0)) / units) * 100) / 100] as const)
          .filter(([, rows]) => rows !== 0),
      );

    await api('/api/v1/skills/capacity-skill', {
      method: 'PUT',
      body: JSON.stringify({ name: 'Capacity', description: 'Capacity.', category: 'General', prompt: '# Capacity\nSummarise.' }),
    });
    const mapping = (i: number) => ({
      type: 'mapping',
      id: `map-${i}`,
      mapConfig: JSON.stringify({ name: { initData: true, path: 'name' }, i: { value: i } }),
    });
    for (const n of [1, 11])
      await json(`/api/v1/workflows/capacity-${n}/install`, {
        id: `capacity-${n}`,
        inputSchema: { type: 'object' },
        outputSchema: { type: 'object' },
        graph: Array.from({ length: n }, (_, i) => mapping(i)),
      });
    const profile = await json('/api/v1/profile');
    await json('/api/v1/skills/capacity-skill/run', { input: 'Warm up.' });

    // The credential's first use after its resolution expired reads it again from the global
    // database: a keyed read then, less a keyed read within the minute, is what that reload costs.
    await settled(1_000);
    await pause(RESOLUTION_MAX_AGE_MS + 1_000);
    resolvedAt = Date.now();
    const coldRead = await measure(1, () => api('/api/v1/memory'));
    const keyedRead = perUnit(await measure(10, () => api('/api/v1/memory')), null, 10);
    const credentialReload = perUnit(coldRead, keyedRead, 1);
    let executionId = '';
    const skillRun = perUnit(
      await measure(1, async () => (executionId = (await json('/api/v1/skills/capacity-skill/run', { input: 'Plan the launch. Tell the team.' })).executionId)),
      null,
      1,
    );
    const rowsAdded: Record<string, Record<string, number>> = { skillRun: lastRows };
    let events = 0;
    const streamOpen = perUnit(
      await measure(1, async () => {
        const { sseUrl } = await json(`/api/v1/executions/${executionId}/stream-token`);
        const text = await (await fetch(sseUrl.replace(new URL(sseUrl).origin, service.base))).text();
        events = text.split('\n\n').filter((f) => f.includes('data:')).length;
      }),
      null,
      1,
    );
    const launch = (n: number) => () => json(`/api/v1/workflows/capacity-${n}/launch`, { inputs: { name: 'Ada' } });
    const eleven = await measure(1, launch(11));
    const elevenRows = lastRows;
    const workflowStep = perUnit(eleven, await measure(1, launch(1)), 10);
    rowsAdded.workflowStep = rowsDifference(elevenRows, lastRows, 10);
    // A workflow run's own rows (its run record), once per run: the 1-step run less one step.
    rowsAdded.workflowRun = rowsDifference(lastRows, rowsAdded.workflowStep, 1);
    const stripeEvent = () => {
      const session = {
        id: `cs_test_${crypto.randomUUID().replaceAll('-', '')}`,
        object: 'checkout.session',
        mode: 'payment',
        amount_total: 1000,
        currency: 'usd',
        payment_status: 'paid',
        status: 'complete',
        client_reference_id: profile.id,
        metadata: { userId: profile.id, packId: 'regular' },
      };
      const type = 'checkout.session.completed';
      return JSON.stringify({
        id: `evt_${crypto.randomUUID().replaceAll('-', '')}`,
        object: 'event',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        type,
        data: { object: session },
      });
    };
    const webhook = perUnit(
      await measure(1, async () => {
        const payload = stripeEvent();
        const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: CAPACITY_WEBHOOK_SECRET });
        await api('/api/v1/billing/webhook', { method: 'POST', body: payload, headers: { 'stripe-signature': signature } });
      }),
      null,
      1,
    );
    rowsAdded.webhook = lastRows;

    const left = await storage();
    const bytesPerRow = Object.fromEntries(
      Object.entries(left.tables)
        .filter(([, { rows }]) => rows > 0)
        .map(([table, { rows, bytes }]) => [table, Math.round(bytes / rows)]),
    );
    const sumOf = (field: 'rows' | 'bytes') => Object.values(left.tables).reduce((n, t) => n + t[field], 0);
    const shardStorage: StorageCounts = { rowsAdded, bytesPerRow, totals: { rows: sumOf('rows'), bytes: sumOf('bytes'), fileBytes: left.fileBytes } };

    const result = {
      measured: new Date().toISOString().slice(0, 10),
      how: 'npm run capacity:measure (bench/capacity-measure.ts): one run of each operation under wrangler dev with counting bindings',
      operations: {
        keyedRead: { what: 'GET /api/v1/memory with an API key (mean of 10)', ...keyedRead },
        credentialReload: {
          what: "a credential's resolution read again once a minute by its user's CredentialGate: the first keyed read after it expired − a keyed read",
          ...credentialReload,
        },
        skillRun: { what: 'POST /api/v1/skills/:slug/run with the local model, to the end of the run', ...skillRun },
        streamOpen: { what: `a stream URL and one SSE stream of a finished run, read to its end (${events} events)`, events, ...streamOpen },
        workflowStep: { what: 'one mapping step: (an 11-step run − a 1-step run) / 10', ...workflowStep },
        webhook: { what: 'a signed Stripe checkout.session.completed (a credit pack)', ...webhook },
      },
      shardStorage,
    };
    writeFileSync(OUTPUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify({ ...result.operations, shardStorage }, null, 2));
  } catch (error) {
    console.error(`the service's log is kept in ${stateDir}/npm-start.log`);
    throw error;
  } finally {
    await service.stop();
    rmSync(CONFIG, { force: true });
  }
  rmSync(stateDir, { recursive: true, force: true });
}

await main();
