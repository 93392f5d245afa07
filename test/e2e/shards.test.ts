import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newAccount, startService, type RunningService } from './helpers';

/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;
/** A wrangler config beside wrangler.toml (its paths stay right), binding one shard more. */
const THREE_SHARDS = '.e2e-three-shards.wrangler.toml';

/**
 * Adding a shard, as docs/operations.md describes it: the service runs on two shards, a third
 * binding is added to the config and `npm start` runs again on the same state. The new shard is
 * migrated and stamped, new workspaces land there (the directory places a workspace on the shard
 * with the fewest), and the workspaces already placed keep their data. Which shard holds a
 * workspace shows in its ids: the shard's number is their low 12 bits.
 */
describe('adding a shard to a running deployment', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-e2e-shards-'));
  let service: RunningService | undefined;
  afterAll(async () => {
    await service?.stop();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(THREE_SHARDS, { force: true });
  });

  const api = async (token: string, path: string, body?: unknown, method = body === undefined ? 'GET' : 'PUT') => {
    const res = await fetch(`${service!.base}/api/v1${path}`, {
      method,
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  /** A new account whose workspace's memory says `note`; answers its token and the shard its rows went to. */
  const placedAccount = async (note: string) => {
    const { token } = await newAccount(service!.base, 'Shard E2E');
    expect((await api(token, '/memory', { content: note })).status).toBe(200);
    const audit = await api(token, '/audit-logs?limit=1&action=memory.updated');
    expect(audit.status).toBe(200);
    return { token, shard: Number(BigInt(audit.body.data[0].id) % 4096n) };
  };

  it('places workspaces on both shards, then on a third once it is bound, and keeps the earlier ones whole', async () => {
    service = await startService(READY_MS, { stateDir });
    const before = [await placedAccount('first'), await placedAccount('second'), await placedAccount('third')];
    expect(new Set(before.map((account) => account.shard))).toEqual(new Set([1, 2]));
    await service.stop();

    writeFileSync(
      THREE_SHARDS,
      readFileSync('wrangler.toml', 'utf8') +
        '\n[[d1_databases]]\nbinding = "SHARD_3"\ndatabase_name = "workspace-skills-shard-3"\ndatabase_id = "00000000-0000-0000-0000-000000000003"\nmigrations_dir = "schema/migrations/shard"\n',
    );
    service = await startService(READY_MS, { stateDir, args: ['--config', THREE_SHARDS] });
    const after = [await placedAccount('fourth'), await placedAccount('fifth')];
    expect(after.map((account) => account.shard)).toEqual([3, 3]);
    for (const [i, account] of before.entries()) {
      expect((await api(account.token, '/memory')).body.content).toBe(['first', 'second', 'third'][i]);
    }
  });
});
