import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newAccount, startService, type RunningService } from './helpers';

/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `npm run workspace:move` as an operator runs it; answers its exit code and output. */
function moveCommand(base: string, workspaceId: string, shard: number, extra: string[] = []) {
  const child: ChildProcess = spawn(
    process.execPath,
    ['node_modules/tsx/dist/cli.mjs', 'scripts/workspace-move.ts', workspaceId, String(shard), '--url', base, ...extra],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const done = new Promise<{ code: number | null; out: string }>((resolve) => child.once('exit', (code) => resolve({ code, out })));
  return { done };
}

/**
 * Moving a workspace while `wrangler dev` is killed (SIGKILL) in the middle of the move: the
 * fence the move raised survives the crash (writes answer 503 with Retry-After, reads go on),
 * and the same command run again finishes the move, with every row the workspace had on the new
 * shard and nothing lost.
 */
describe('a move of a workspace through a crash of wrangler dev', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-e2e-move-'));
  let service: RunningService | undefined;
  afterAll(async () => {
    await service?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  const api = async (token: string, path: string, body?: unknown, method = body === undefined ? 'GET' : 'PUT') => {
    const res = await fetch(`${service!.base}/api/v1${path}`, {
      method,
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  /** The shard an answer's bookmark names (the workspace's). */
  const shardOf = (headers: Headers) => Number(/shard-(\d+):/.exec(headers.get('x-d1-bookmark') ?? '')?.[1]);

  it('keeps the fence through the crash, and the command run again finishes the move', async () => {
    service = await startService(READY_MS, { stateDir });
    const { token } = await newAccount(service.base, 'Move E2E');
    const workspaceId = (await api(token, '/workspaces/current')).body.id as string;
    const written = await api(token, '/memory', { content: 'kept through the move' });
    expect(written.status).toBe(200);
    const skill = { name: 'Moved', description: 'Travels.', category: 'productivity', prompt: '# Moved\nTravel.' };
    expect((await api(token, '/skills/moved', skill)).status).toBe(200);
    const from = shardOf(written.headers);
    const to = from === 1 ? 2 : 1;

    // The move drains 20 s after raising its fence: the kill lands there, as soon as a write
    // (the same content again, so nothing changes) is refused by the fence.
    const first = moveCommand(service.base, workspaceId, to, ['--drain-ms', '20000']);
    const deadline = Date.now() + 60_000;
    while ((await api(token, '/memory', { content: 'kept through the move' })).status !== 503) {
      expect(Date.now()).toBeLessThan(deadline);
      await pause(100);
    }
    await service.stop('SIGKILL');
    expect((await first.done).code).not.toBe(0);

    service = await startService(READY_MS, { stateDir, restart: true });
    const fenced = await api(token, '/memory', { content: 'not now' });
    expect(fenced.status).toBe(503);
    expect(fenced.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(fenced.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await api(token, '/memory')).body.content).toBe('kept through the move');

    const again = await moveCommand(service.base, workspaceId, to).done;
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain(`is on shard ${to} (was ${from})`);

    const read = await api(token, '/memory');
    expect(read.body.content).toBe('kept through the move');
    expect(shardOf(read.headers)).toBe(to);
    expect((await api(token, '/skills')).body).toEqual([expect.objectContaining({ slug: 'moved', name: 'Moved', versionNumber: 1 })]);
    const after = await api(token, '/memory', { content: 'written on the new shard' });
    expect(after.status).toBe(200);
    expect(shardOf(after.headers)).toBe(to);
  });
});
