import { runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { unzipSync } from 'fflate';
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { traces, traceTurns } from '../../schema';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { globalDbOf } from '../../workers/lib/db';
import { loadBundle } from '../../workers/lib/bundle-store';
import { EXPORTED_TABLES } from '../../workers/services/export-archive';
import { advanceExport, MAX_STALLS } from '../../workers/services/export-job';
import { DOWNLOAD_LINK_TTL_MS, EXPORT_TTL_MS, startExport } from '../../workers/services/workspace-exports';
import type { Env } from '../../workers/env';
import { allKeys, heldBy } from '../helpers/deletion';
import { call, createKey, expectError, sessionPrincipal, signUp, waitForStatus, type TestUser } from '../helpers/api';
import { shardD1, shardDbFor, shardNumberOf } from '../helpers/shards';
import { catalogEntry, seedArtifact, seedCatalog, signUpWithSummarizer, SUMMARIZER } from '../helpers/skills';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';
import { runHousekeeping } from '../helpers/housekeeping';

afterEach(() => resetClock());

const SECRET_VALUE = 'sk-export-test-value-7f3a9c1e5b';
const TELEMETRY_KEY = 'hny-export-test-key-4e2d8b';
const CONNECTOR_TOKEN = `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
const decoder = new TextDecoder();

const exportPath = (user: TestUser, workspaceId = user.workspaceId) => `/api/v1/workspaces/${workspaceId}/export`;

/** Polls the job until it is ready or failed (it runs after the answer to POST). */
async function waitForExport(user: TestUser, id: string) {
  for (let i = 0; i < 300; i++) {
    const res = await call(`${exportPath(user)}/${id}`, { token: user.token });
    expect(res.status).toBe(200);
    if (res.body.status === 'ready' || res.body.status === 'failed') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`export ${id} never finished`);
}

const download = (url: string) => exports.default.fetch(url);

const jsonLines = (bytes: Uint8Array) =>
  decoder
    .decode(bytes)
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** Every page of a cursor list. */
async function everything(user: TestUser, path: string): Promise<any[]> {
  const items: any[] = [];
  let after: string | null = null;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const res: { status: number; body: any } = await call(`${path}${sep}limit=100${after ? `&after_id=${after}` : ''}`, { token: user.token });
    expect(res.status).toBe(200);
    items.push(...res.body.data);
    if (!res.body.has_more) return items;
    after = res.body.last_id;
  }
}

/** The workspace's rows of an exported table as its shard holds them (the exported columns). */
async function shardRows(workspaceId: string, table: (typeof EXPORTED_TABLES)[number]) {
  const scope = table.parent
    ? `FROM "${table.name}" r JOIN "${table.parent.name}" o ON o."${table.parent.parentColumn}" = r."${table.parent.column}" WHERE o.workspace_id = ?`
    : `FROM "${table.name}" r WHERE r.workspace_id = ?`;
  const { results } = await (
    await shardD1(workspaceId)
  )
    .prepare(`SELECT ${table.columns.map((c) => `r."${c}"`).join(', ')} ${scope}`)
    .bind(workspaceId)
    .all<Record<string, unknown>>();
  return results;
}

const sortBy = <T>(rows: T[], key: (row: T) => string) => [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
const rowKey = (row: Record<string, unknown>) => JSON.stringify(row);

/** A workspace with data of every kind: runs, a workflow run, an artifact, traces, a secret, a connector, memory, skills installed and authored, a member. */
async function fullWorkspace() {
  const owner = await signUpWithSummarizer();
  const catalogSlug = `export-catalog-${crypto.randomUUID().slice(0, 8)}`;
  await seedCatalog([catalogEntry(catalogSlug, { extra: { 'notes/guide.md': '# Guide\nRead me.' } })]);
  expect((await call(`/api/v1/skills/${catalogSlug}/install`, { method: 'POST', token: owner.token })).status).toBe(200);
  // A second version of the authored skill.
  expect((await call('/api/v1/skills/meeting-summarizer', { method: 'PUT', token: owner.token, body: { ...SUMMARIZER, prompt: 'Version two.' } })).status).toBe(
    200,
  );
  expect((await call('/api/v1/memory', { method: 'PUT', token: owner.token, body: { content: 'Remember the export.' } })).status).toBe(200);
  expect((await call('/api/v1/secrets', { token: owner.token, body: { name: 'EXPORT_SECRET', value: SECRET_VALUE } })).status).toBe(201);
  expect((await call('/api/v1/connectors/github/connect', { token: owner.token, body: { token: CONNECTOR_TOKEN } })).status).toBe(200);
  expect((await call(`/api/v1/workspaces/${owner.workspaceId}/retention`, { method: 'PUT', token: owner.token, body: { traces: 12 } })).status).toBe(200);

  const started = await call('/api/v1/skills/meeting-summarizer/run', { token: owner.token, body: { input: 'Ship on Friday.' } });
  expect(started.status).toBe(200);
  await waitForStatus(owner, started.body.executionId, 'completed');

  await install(owner, 'flow', definition('flow', [mapping('hello', { greeting: { template: 'Hello ${initData.name}' } })]));
  const runId = await launch(owner, 'flow', { name: 'Ada' });
  expect((await waitForRun(owner, runId)).run.status).toBe('success');

  // A chat trace with a turn, as the chat producers write them.
  const db = await shardDbFor(owner.workspaceId);
  const traceId = crypto.randomUUID();
  const at = Date.now();
  await db.insert(traces).values({
    id: traceId,
    workspaceId: owner.workspaceId,
    traceKey: traceId,
    kind: 'chat',
    title: 'Chat',
    status: 'completed',
    actorUserId: owner.user.id,
    startedAt: at,
    lastActivityAt: at,
  });
  await db.insert(traceTurns).values({ traceId, seq: 1, type: 'user.message', payload: { text: 'Hello' }, actorUserId: owner.user.id, at });

  const artifactBytes = new Uint8Array(4096).map((_, i) => (i * 31) % 256);
  const artifact = await seedArtifact(owner.workspaceId, artifactBytes, 'data.bin');

  // Made after the runs, so nothing is sent to them.
  const webhook = await call('/api/v1/webhooks', { token: owner.token, body: { url: 'https://hooks.example.com/in', events: ['execution.completed'] } });
  expect(webhook.status).toBe(201);
  expect(
    (
      await call(`/api/v1/workspaces/${owner.workspaceId}/telemetry`, {
        method: 'PUT',
        token: owner.token,
        body: { endpoint: 'https://collector.example.com/v1/traces', headers: { 'x-api-key': TELEMETRY_KEY } },
      })
    ).status,
  ).toBe(200);

  const member = await signUp('Member');
  const invited = await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, { token: owner.token, body: { email: member.email, role: 'member' } });
  expect(invited.status).toBe(201);
  expect((await call('/api/v1/invitations/accept', { token: member.token, body: { token: invited.body.token } })).status).toBe(200);
  return {
    owner,
    member,
    artifact,
    artifactBytes,
    catalogSlug,
    runId,
    executionId: started.body.executionId as string,
    webhookSecret: webhook.body.secret as string,
  };
}

describe('POST /api/v1/workspaces/:id/export', () => {
  it('writes one zip whose files match the API, the shard and R2, with checksums and no secret value', async () => {
    const ws = await fullWorkspace();
    const { owner } = ws;
    const started = await call(exportPath(owner), { method: 'POST', token: owner.token });
    expect(started.status).toBe(201);
    expect(started.body).toEqual({
      id: expect.stringMatching(/^exp_\d+$/),
      status: expect.stringMatching(/^(pending|running)$/),
      createdAt: expect.any(String),
    });
    const job = await waitForExport(owner, started.body.id);
    expect(job).toEqual({
      id: started.body.id,
      status: 'ready',
      createdAt: started.body.createdAt,
      completedAt: expect.any(String),
      expiresAt: new Date(Date.parse(job.completedAt) + EXPORT_TTL_MS).toISOString(),
      size: expect.any(Number),
      downloadUrl: expect.stringMatching(new RegExp(`^https://service\\.test/downloads/exports/${started.body.id}\\?token=`)),
    });

    const response = await download(job.downloadUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/zip');
    const archive = new Uint8Array(await response.arrayBuffer());
    expect(archive.length).toBe(job.size);
    const files = unzipSync(archive);

    // The manifest lists every other file, each with its size and SHA-256.
    const manifest = JSON.parse(decoder.decode(files['manifest.json']));
    expect(manifest).toMatchObject({ format: 'workspace-export', version: 1, workspaceId: owner.workspaceId, createdAt: job.createdAt });
    expect(manifest.files.map((f: { path: string }) => f.path).sort()).toEqual(
      Object.keys(files)
        .filter((p) => p !== 'manifest.json')
        .sort(),
    );
    for (const entry of manifest.files) {
      const bytes = files[entry.path]!;
      expect({ path: entry.path, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }).toEqual({
        path: entry.path,
        bytes: entry.bytes,
        sha256: entry.sha256,
      });
      if (entry.path.endsWith('.jsonl')) expect(jsonLines(bytes)).toHaveLength(entry.records);
    }

    // No secret value, no connector token, in any file or in the archive's own bytes.
    for (const [path, bytes] of Object.entries(files)) {
      const text = decoder.decode(bytes);
      expect({ path, secret: text.includes(SECRET_VALUE), token: text.includes(CONNECTOR_TOKEN), webhook: text.includes(ws.webhookSecret) }).toEqual({
        path,
        secret: false,
        token: false,
        webhook: false,
      });
    }
    const raw = decoder.decode(archive);
    expect(raw.includes(SECRET_VALUE) || raw.includes(CONNECTOR_TOKEN) || raw.includes(TELEMETRY_KEY)).toBe(false);

    // The workspace's record and its members, as the API answers them.
    expect(JSON.parse(decoder.decode(files['workspace.json']))).toEqual((await call('/api/v1/workspaces/current', { token: owner.token })).body);
    const members = await everything(owner, `/api/v1/workspaces/${owner.workspaceId}/members`);
    expect(sortBy(jsonLines(files['members.jsonl']!), (m) => String(m.userId))).toEqual(sortBy(members, (m) => m.userId));
    expect(members).toHaveLength(2);

    // Every exported shard table: exactly the workspace's rows, as the shard holds them.
    const records = (table: string) => jsonLines(files[`records/${table}.jsonl`]!);
    for (const table of EXPORTED_TABLES) {
      expect({ table: table.name, rows: sortBy(records(table.name), rowKey) }).toEqual({
        table: table.name,
        rows: sortBy(await shardRows(owner.workspaceId, table), rowKey),
      });
    }
    expect(Object.keys(files).filter((p) => p.startsWith('records/'))).toHaveLength(EXPORTED_TABLES.length);
    expect(Object.keys(files)).not.toContain('records/idempotency_records.jsonl');

    // And the same records as the API's own answers.
    // Public ids carry a prefix (`exec_12`) or none (audit entries): compared by their number.
    const bare = (id: unknown) => Number(String(id).replace(/^[a-z]+_/, ''));
    const ids = (rows: Record<string, unknown>[]) => rows.map((r) => bare(r.id)).sort();
    const executions = await everything(owner, '/api/v1/executions?after_id=exec_9007199254740991');
    expect(ids(records('executions'))).toEqual(ids(executions));
    expect(records('executions').map((r) => `exec_${r.id}`)).toContain(ws.executionId);

    const artifacts = await everything(owner, '/api/v1/artifacts');
    expect(ids(records('artifacts'))).toEqual(ids(artifacts));
    expect(sortBy(records('artifacts'), (a) => String(a.id)).map(({ id, name, size, content_type }) => ({ id, name, size, content_type }))).toEqual(
      sortBy(artifacts, (a) => String(bare(a.id))).map((a) => ({ id: bare(a.id), name: a.name, size: a.size, content_type: a.contentType })),
    );
    expect(files[`artifacts/${ws.artifact.id}/data.bin`]).toEqual(ws.artifactBytes);
    const served = await exports.default.fetch(`https://service.test/api/v1/artifacts/${ws.artifact.id}/download`, {
      headers: { 'x-auth-token': owner.token },
    });
    expect(files[`artifacts/${ws.artifact.id}/data.bin`]).toEqual(new Uint8Array(await served.arrayBuffer()));

    const secrets = await everything(owner, '/api/v1/secrets');
    expect(records('secrets').map(({ id, name }) => ({ id, name }))).toEqual(secrets.map(({ id, name }) => ({ id: bare(id), name })));
    expect(Object.keys(records('secrets')[0]!)).not.toContain('ciphertext');
    // A webhook's signing secrets and a telemetry destination's headers (often an API key) are credentials, even encrypted.
    expect(records('webhook_endpoints').map((r) => r.url)).toEqual(['https://hooks.example.com/in']);
    expect(Object.keys(records('webhook_endpoints')[0]!)).not.toContain('secret');
    expect(Object.keys(records('webhook_endpoints')[0]!)).not.toContain('previous_secret');
    expect(records('telemetry_destinations').map((r) => r.endpoint)).toEqual(['https://collector.example.com/v1/traces']);
    expect(Object.keys(records('telemetry_destinations')[0]!)).not.toContain('headers');

    const connectors = (await call('/api/v1/connectors', { token: owner.token })).body.connectors as { type: string; status: string; account?: string }[];
    const github = connectors.find((c) => c.type === 'github')!;
    expect(records('connector_connections').map(({ connector_type, account }) => ({ type: connector_type, account }))).toEqual([
      { type: 'github', account: github.account },
    ]);
    expect(Object.keys(records('connector_connections')[0]!).sort()).toEqual([
      'account',
      'connector_type',
      'created_at',
      'created_by',
      'updated_at',
      'workspace_id',
    ]);

    expect(records('memory').map((r) => r.content)).toEqual([(await call('/api/v1/memory', { token: owner.token })).body.content]);

    const skills = (await call('/api/v1/skills', { token: owner.token })).body as { slug: string }[];
    expect(
      records('skills')
        .map((r) => r.slug)
        .sort(),
    ).toEqual(skills.map((s) => s.slug).sort());
    expect(
      records('skills')
        .map((r) => r.slug)
        .sort(),
    ).toEqual(['meeting-summarizer', ws.catalogSlug].sort());
    for (const skill of records('skills')) {
      const versions = (await call(`/api/v1/skills/${skill.slug}/versions`, { token: owner.token })).body as { versionNumber: number }[];
      const exported = records('skill_versions').filter((v) => v.skill_id === skill.id);
      expect(exported.map((v) => v.version_number).sort()).toEqual(versions.map((v) => v.versionNumber).sort());
      for (const version of exported) {
        const bundle = (await loadBundle(env.BUCKET, String(version.storage_path)))!;
        for (const file of bundle) expect(files[`skills/${skill.slug}/v${version.version_number}/${file.path}`]).toEqual(file.bytes);
      }
    }
    expect(decoder.decode(files[`skills/${ws.catalogSlug}/v1/notes/guide.md`])).toBe('# Guide\nRead me.');

    const listedTraces = (await call('/api/v1/traces?limit=100', { token: owner.token })).body.items as { id: string }[];
    expect(
      records('traces')
        .map((r) => r.id)
        .sort(),
    ).toEqual(listedTraces.map((t) => t.id).sort());
    expect(listedTraces.length).toBeGreaterThan(1);
    expect(records('trace_turns').map((t) => JSON.parse(String(t.payload)))).toEqual([{ text: 'Hello' }]);

    const runs = (await call('/api/v1/workflows/runs', { token: owner.token })).body.runs as { runId: string; status: string }[];
    expect(records('workflow_runs').map(({ run_id, status }) => ({ runId: run_id, status }))).toEqual(runs.map(({ runId, status }) => ({ runId, status })));
    expect(records('workflow_runs').map((r) => r.run_id)).toEqual([ws.runId]);

    const audit = await everything(owner, '/api/v1/audit-logs');
    expect(ids(records('audit_log'))).toEqual(ids(audit));
    expect(records('audit_log').map((r) => r.action)).toContain('workspace.export_started');
    const activity = await everything(owner, '/api/v1/activity');
    expect(ids(records('activity_log'))).toEqual(ids(activity));

    expect(records('retention_windows').map((r) => r.traces_days)).toEqual([
      (await call(`/api/v1/workspaces/${owner.workspaceId}/retention`, { token: owner.token })).body.traces,
    ]);
  });

  it('refuses a download link once it has expired, or that was altered', async () => {
    const owner = await signUp();
    const started = await call(exportPath(owner), { method: 'POST', token: owner.token });
    const job = await waitForExport(owner, started.body.id);
    expect((await download(job.downloadUrl)).status).toBe(200);
    const altered = job.downloadUrl.replace(/token=([^&]+)/, (_: string, token: string) => `token=${token.slice(0, -2)}xx`);
    expect((await download(altered)).status).toBe(401);
    expect((await download(job.downloadUrl.replace(started.body.id, 'exp_1'))).status).toBe(401);
    advanceClock(DOWNLOAD_LINK_TTL_MS + 1000);
    const expired = await download(job.downloadUrl);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as any).error.code).toBe('UNAUTHORIZED');
    // Reading the job again gives a fresh link.
    expect((await download((await call(`${exportPath(owner)}/${started.body.id}`, { token: owner.token })).body.downloadUrl)).status).toBe(200);
  });

  it('answers 404 for another workspace or its export, 403 to a member, 400 for bad input', async () => {
    const [a, b] = [await signUp(), await signUp()];
    const ofB = await call(exportPath(b), { method: 'POST', token: b.token });
    expect(ofB.status).toBe(201);
    expectError(await call(exportPath(a, b.workspaceId), { method: 'POST', token: a.token }), 404, 'NOT_FOUND');
    expectError(await call(`${exportPath(a)}/${ofB.body.id}`, { token: a.token }), 404, 'NOT_FOUND');
    expectError(await call(`${exportPath(a, b.workspaceId)}/${ofB.body.id}`, { token: a.token }), 404, 'NOT_FOUND');
    expectError(await call(`${exportPath(a)}/exp_nope`, { token: a.token }), 404, 'NOT_FOUND');
    expect(expectError(await call(`${exportPath(a)}/${'9'.repeat(41)}`, { token: a.token }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'exportId',
    });
    expect(expectError(await call(exportPath(a, 'w'.repeat(101)), { method: 'POST', token: a.token }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'id',
    });

    const member = await signUp();
    const invited = await call(`/api/v1/workspaces/${a.workspaceId}/invitations`, { token: a.token, body: { email: member.email, role: 'admin' } });
    await call('/api/v1/invitations/accept', { token: member.token, body: { token: invited.body.token } });
    expect((await call('/api/v1/workspaces/current', { method: 'PUT', token: member.token, body: { workspace: a.workspaceId } })).status).toBe(200);
    expectError(await call(exportPath(a), { method: 'POST', token: member.token }), 403, 'FORBIDDEN');
    // A key without profile:write cannot start one.
    const reader = await createKey(a, ['profile:read']);
    expectError(await call(exportPath(a), { method: 'POST', apiKey: reader.key }), 403, 'FORBIDDEN');
  });

  it('answers the export under way instead of starting a second one', async () => {
    const owner = await signUp();
    const job = await createdJob(owner);
    const again = await call(exportPath(owner), { method: 'POST', token: owner.token });
    expect(again.body.id).toBe(job.id);
  });
});

/** An export job as POST creates it, its object not started. */
async function createdJob(owner: TestUser) {
  const { job, started } = await startExport(
    await shardDbFor(owner.workspaceId),
    globalDbOf(env),
    env,
    sessionPrincipal(owner),
    owner.workspaceId,
    'https://service.test',
  );
  return { id: job.id, number: started! };
}

/** The archive of a ready job, unpacked, with its manifest. */
async function archiveOf(user: TestUser, id: string) {
  const job = (await call(`${exportPath(user)}/${id}`, { token: user.token })).body;
  expect(job.status).toBe('ready');
  const files = unzipSync(new Uint8Array(await (await download(job.downloadUrl)).arrayBuffer()));
  const manifest = JSON.parse(decoder.decode(files['manifest.json'])) as { files: { path: string; bytes: number; sha256: string }[] };
  for (const { path, sha256 } of manifest.files) expect({ path, sha256: createHash('sha256').update(files[path]!).digest('hex') }).toEqual({ path, sha256 });
  expect(manifest.files.map((f) => f.path).sort()).toEqual(
    Object.keys(files)
      .filter((p) => p !== 'manifest.json')
      .sort(),
  );
  return files;
}

/**
 * Drives the job's object one slice at a time (each slice writes one file), as its alarm would,
 * with `envOf(slice)` as the Worker's bindings; `between` runs after each slice. A slice that
 * throws is counted and the next one runs, as the alarm tries it again. Answers the slices run.
 */
async function driveBySlices(
  workspaceId: string,
  number: number,
  options: { envOf?: (slice: number) => Env; between?: (slice: number) => Promise<void> } = {},
) {
  const stub = env.WORKSPACE_EXPORT.getByName(`exp_${number}`);
  await runInDurableObject(stub, (_, state) => state.storage.kv.put('job', { workspaceId, exportId: number }));
  const outcomes: string[] = [];
  for (let slice = 0; slice < 200; slice++) {
    const sliceEnv = options.envOf?.(slice) ?? env;
    const outcome = await runInDurableObject(stub, (_, state) => advanceExport(sliceEnv, state.storage, 0)).then(
      (advance) => (advance.done ? 'done' : 'slice'),
      () => 'thrown',
    );
    outcomes.push(outcome);
    if (outcome === 'done') return { outcomes, stub };
    await options.between?.(slice);
  }
  throw new Error('the export never finished');
}

/** The bucket, but `get` of any key `failing` names throws. */
const bucketFailing = (failing: (key: string) => boolean): R2Bucket =>
  new Proxy(env.BUCKET, {
    get(bucket, name: keyof R2Bucket) {
      if (name === 'get') return (key: string) => (failing(key) ? Promise.reject(new Error('cut off')) : bucket.get(key));
      const value = bucket[name];
      return typeof value === 'function' ? value.bind(bucket) : value;
    },
  });

describe('an export written in slices by its object', () => {
  it('goes on from its last checkpoint after a slice is cut off, and its archive holds every file once', async () => {
    const owner = await signUp();
    const seeded: { id: string; key: string }[] = [];
    for (let i = 0; i < 4; i++) seeded.push(await seedArtifact(owner.workspaceId, crypto.getRandomValues(new Uint8Array(2048 + i)), `part-${i}.bin`));
    const { id, number } = await createdJob(owner);
    // The first two slices that read the third artifact die (a restart, a crash); the next one goes on.
    let cuts = 0;
    const cutOff = { ...env, BUCKET: bucketFailing((key) => key === seeded[2]!.key && cuts++ < 2) };
    const { outcomes, stub } = await driveBySlices(owner.workspaceId, number, { envOf: () => cutOff });
    expect(outcomes.filter((o) => o === 'thrown')).toHaveLength(2);

    const files = await archiveOf(owner, id);
    for (const [i, artifact] of seeded.entries()) {
      expect(files[`artifacts/${artifact.id}/part-${i}.bin`]).toEqual(new Uint8Array(await (await env.BUCKET.get(artifact.key))!.arrayBuffer()));
    }
    // One slice per file and per step: nothing was written twice, nothing started over.
    const written = Object.keys(files).length;
    expect(outcomes.filter((o) => o === 'slice').length).toBeLessThanOrEqual(written + 2);
    // The object forgot the job, and no checkpoint's bytes are left in the bucket.
    expect(await heldBy(stub)).toEqual({ rows: [], alarm: null });
    expect((await allKeys(`workspaces/${owner.workspaceId}/exports/`)).filter((key) => key.includes('.tail-'))).toEqual([]);
  });

  it(`fails with its reason once ${MAX_STALLS} slices in a row get no further`, async () => {
    const owner = await signUp();
    const artifact = await seedArtifact(owner.workspaceId, new Uint8Array(64), 'unreadable.bin');
    const { id, number } = await createdJob(owner);
    const broken = { ...env, BUCKET: bucketFailing((key) => key === artifact.key) };
    const { outcomes, stub } = await driveBySlices(owner.workspaceId, number, { envOf: () => broken });
    expect(outcomes.slice(-MAX_STALLS - 1)).toEqual([...Array<string>(MAX_STALLS).fill('thrown'), 'done']);

    const job = (await call(`${exportPath(owner)}/${id}`, { token: owner.token })).body;
    expect(job).toMatchObject({ status: 'failed', error: `The export stopped ${MAX_STALLS} times at the first artifact without getting further` });
    expect(job.downloadUrl).toBeUndefined();
    expect(await heldBy(stub)).toEqual({ rows: [], alarm: null });
    expect(await allKeys(`workspaces/${owner.workspaceId}/exports/`)).toEqual([]);
  });
});

describe('an export while its workspace moves', () => {
  it('reads every slice from the shard the directory names: the archive holds every row once', async () => {
    const owner = await signUpWithSummarizer();
    expect((await call('/api/v1/memory', { method: 'PUT', token: owner.token, body: { content: 'Remember the move.' } })).status).toBe(200);
    // More artifacts than a page of rows.
    for (let i = 0; i < 60; i++) await seedArtifact(owner.workspaceId, new Uint8Array([i]), `a-${i}.bin`);
    const { id, number } = await createdJob(owner);
    const target = owner.shard === 1 ? 2 : 1;
    const headers = { authorization: `Bearer ${env.OPERATOR_SECRET}` };
    await driveBySlices(owner.workspaceId, number, {
      between: async (slice) => {
        // Halfway through the tables: the move copies, fences, flips and deletes the rows on the old shard.
        if (slice === 2 + Math.floor(EXPORTED_TABLES.length / 2)) {
          const moved = await call(`/operator/workspaces/${owner.workspaceId}/move`, { body: { shard: target, drainMs: 0 }, headers });
          expect(moved.status).toBe(200);
        }
      },
    });
    expect(await shardNumberOf(owner.workspaceId)).toBe(target);

    const files = await archiveOf(owner, id);
    for (const table of EXPORTED_TABLES) {
      expect({ table: table.name, rows: sortBy(jsonLines(files[`records/${table.name}.jsonl`]!), rowKey) }).toEqual({
        table: table.name,
        rows: sortBy(await shardRows(owner.workspaceId, table), rowKey),
      });
    }
    expect(jsonLines(files['records/artifacts.jsonl']!).length).toBeGreaterThanOrEqual(60);
    expect(Object.keys(files).filter((path) => path.startsWith('artifacts/'))).toHaveLength(jsonLines(files['records/artifacts.jsonl']!).length);
    expect(jsonLines(files['records/skills.jsonl']!).map((r) => r.slug)).toEqual(['meeting-summarizer']);
    expect(Object.keys(files).some((path) => path.startsWith('skills/meeting-summarizer/v1/'))).toBe(true);
  });
});

describe('export jobs in the hourly housekeeping', () => {
  it('wakes the object of a job whose heartbeat lapsed, and the export finishes', async () => {
    const owner = await signUp();
    const { id, number } = await createdJob(owner);
    await (
      await shardD1(owner.workspaceId)
    )
      .prepare("UPDATE workspace_exports SET status = 'running', lease_until = ? WHERE id = ?")
      .bind(Date.now() - 1000, number)
      .run();
    await runHousekeeping();
    const job = await waitForExport(owner, id);
    expect(job.status).toBe('ready');
    expect(JSON.parse(decoder.decode((await archiveOf(owner, id))['workspace.json'])).id).toBe(owner.workspaceId);
  });

  it('deletes an archive and its job once it expires', async () => {
    const owner = await signUp();
    const started = await call(exportPath(owner), { method: 'POST', token: owner.token });
    const job = await waitForExport(owner, started.body.id);
    const [row] = (
      await (
        await shardD1(owner.workspaceId)
      )
        .prepare('SELECT r2_key FROM workspace_exports WHERE workspace_id = ?')
        .bind(owner.workspaceId)
        .all<{ r2_key: string }>()
    ).results;
    expect(await env.BUCKET.head(row!.r2_key)).not.toBeNull();

    advanceClock(EXPORT_TTL_MS - 60_000);
    await runHousekeeping();
    expect((await call(`${exportPath(owner)}/${job.id}`, { token: owner.token })).status).toBe(200);
    advanceClock(120_000);
    // Past its expiry the job offers no link, even before the sweep deletes it.
    expect((await call(`${exportPath(owner)}/${job.id}`, { token: owner.token })).body.downloadUrl).toBeUndefined();
    await runHousekeeping();
    expectError(await call(`${exportPath(owner)}/${job.id}`, { token: owner.token }), 404, 'NOT_FOUND');
    expect(await env.BUCKET.head(row!.r2_key)).toBeNull();
  });
});
