import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { newAccount, startService, type RunningService } from './helpers';
import { startPrepared } from './prepared';

/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;
/** Slow words, so the run is still going when the deletion cancels it, and the deletion waits for it. */
const ARGS = ['--var', 'LOCAL_MODEL_DELAY_MS:1500'];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every SQLite file of the local state: the D1 databases, each Durable Object's storage, R2's object index. */
function sqliteFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sqliteFiles(path);
    return entry.name.endsWith('.sqlite') ? [path] : [];
  });
}

/** Tables whose rows may name a deleted workspace: its deletion job and audit records, and the ledger. */
const KEPT = new Set(['workspace_deletions', 'workspace_deletion_audit', 'credit_transactions']);

/** Every row, in every table of every file, in which a value contains one of `marks` (outside KEPT). */
function rowsMarked(dir: string, marks: string[]): string[] {
  const found: string[] = [];
  for (const file of sqliteFiles(dir)) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[];
      for (const { name } of tables) {
        if (KEPT.has(name)) continue;
        for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
          const text = Object.values(row)
            .map((value) => (value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : String(value)))
            .join('\u0000');
          if (marks.some((mark) => text.includes(mark))) found.push(`${file.slice(dir.length)} ${name}: ${JSON.stringify(row).slice(0, 300)}`);
        }
      }
    } finally {
      db.close();
    }
  }
  return found;
}

/**
 * Deleting a workspace while `wrangler dev` is killed (SIGKILL) in the middle of it: the job
 * recorded its progress in the global database and its driver's alarm survives the crash, so
 * after a restart the deletion goes on by itself and completes, and nothing of the workspace is
 * left in any database, object or bucket of the local state.
 */
describe('a workspace deletion through a crash of wrangler dev', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-e2e-delete-'));
  let service: RunningService | undefined;
  afterAll(async () => {
    await service?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  const api = async (token: string, path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') => {
    const res = await fetch(`${service!.base}/api/v1${path}`, {
      method,
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('goes on after the restart, completes, and leaves nothing of the workspace', async () => {
    service = await startPrepared(READY_MS, { stateDir, args: ARGS });
    const { token } = await newAccount(service.base, 'Delete E2E');
    const slug = `doomed-${Date.now().toString(36)}`;
    const created = await api(token, '/workspaces', { name: 'Doomed', slug });
    expect(created.status).toBe(201);
    const W = created.body.id as string;
    expect((await api(token, '/workspaces/current', { workspace: W }, 'PUT')).status).toBe(200);

    const skill = { name: 'Doomed Notes', description: 'Goes.', category: 'productivity', prompt: '# Doomed Notes\nSummarise.' };
    expect((await api(token, '/skills/doomed-notes', skill, 'PUT')).status).toBe(200);
    expect((await api(token, '/memory', { content: 'memory of a doomed workspace' }, 'PUT')).status).toBe(200);
    expect((await api(token, '/secrets', { name: 'DOOMED_TOKEN', value: 'doomed-secret-value' })).status).toBe(201);
    const gate = {
      id: 'gate',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      graph: [{ type: 'tool', id: 'ask', toolId: 'human-input', options: { metadata: { prompt: 'Go?' } } }],
    };
    expect((await api(token, '/workflows/gate/install', gate)).status).toBe(201);
    const runId = (await api(token, '/workflows/gate/launch', {})).body.runId as string;
    const running = await api(token, '/skills/doomed-notes/run', { input: 'A plan with many steps to summarise slowly.' });
    expect(running.status).toBe(200);
    const executionId = running.body.executionId as string;

    const asked = await api(token, `/workspaces/${W}`, { confirm: 'Doomed' }, 'DELETE');
    expect(asked.status).toBe(202);
    // The run stops only at its next slow word: the deletion waits for it, and the kill lands there.
    await pause(800);
    const marks = [W, `${executionId}:`, `"${executionId}"`, runId, 'DOOMED_TOKEN', slug];
    const before = await api(token, `/workspaces/${W}/deletion`);
    expect(before.body).toMatchObject({ id: asked.body.id, status: 'running' });
    await service.stop('SIGKILL');

    service = await startService(READY_MS, { stateDir, args: ARGS, restart: true });
    let job = before.body;
    for (const until = Date.now() + 120_000; job.status !== 'completed' && Date.now() < until; await pause(500)) {
      job = (await api(token, `/workspaces/${W}/deletion`)).body;
    }
    expect(job).toMatchObject({ id: asked.body.id, status: 'completed', step: 'done' });
    expect((await api(token, `/workspaces/${W}`, { confirm: 'Doomed' }, 'DELETE')).body.id).toBe(asked.body.id);
    expect((await api(token, '/workspaces/current')).body.id).not.toBe(W);
    expect((await api(token, '/memory')).status).toBe(200);

    // Stopped, the local state is read file by file: D1, every object's storage, R2's index. (The
    // platform's request logs, `v3/observability`, keep request URLs for their own retention.)
    await service.stop();
    service = undefined;
    const stored = ['d1', 'do', 'r2'].flatMap((kind) => rowsMarked(join(stateDir, 'v3', kind), marks));
    expect(stored).toEqual([]);
    expect(sqliteFiles(join(stateDir, 'v3', 'do')).length).toBeGreaterThan(0);
  });
});
