import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { memory } from '../../schema';
import { globalDbOf, shardBinding, shardDbOf } from '../../workers/lib/db';
import { directoryRoutedShardDb, PLACE_TTL_MS } from '../../workers/services/directory-routed';
import { placeOf } from '../../workers/services/directory';
import { holdsWorkspace } from '../../workers/services/shard-copy';
import { shardVouches } from '../../workers/services/shard-placement';
import { copyBeforeFence, raiseFence } from '../../workers/services/workspace-move';
import { operatorRoutes } from '../../workers/routes/operator';
import { call, createKey, signUp, type ApiResponse, type TestUser } from '../helpers/api';
import { recordedGlobal } from '../helpers/counted-shard';
import { catalogEntry, seedCatalog, signUpWithSummarizer, SUMMARIZER } from '../helpers/skills';
import { deliverSigned } from '../helpers/triggers';
import { definition, install, mapping } from '../helpers/workflows';

const OPERATOR = { authorization: `Bearer ${env.OPERATOR_SECRET}` };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const otherShard = (user: TestUser) => (user.shard === 1 ? 2 : 1);

const move = (workspaceId: string, shard: number, drainMs = 0) =>
  call(`/operator/workspaces/${workspaceId}/move`, { body: { shard, drainMs }, headers: OPERATOR });

/** A write refused while the move fences the workspace: 503 SERVICE_UNAVAILABLE with Retry-After, in the error envelope. */
function expectFenced(res: ApiResponse) {
  expect({ status: res.status, code: res.body?.error?.code, retryAfter: res.headers.get('retry-after') }).toEqual({
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    retryAfter: expect.stringMatching(/^[1-9][0-9]*$/),
  });
}

const rowsOn = async (shard: number, query: string, ...params: unknown[]) =>
  (
    await shardBinding(env, shard)
      .prepare(query)
      .bind(...params)
      .all<Record<string, unknown>>()
  ).results;

describe('POST /operator/workspaces/:id/move', () => {
  it('is not there without OPERATOR_SECRET, and refuses a wrong secret', async () => {
    const without = await operatorRoutes.request('/workspaces/x/move', { method: 'POST', body: '{"shard":1}' }, { ...env, OPERATOR_SECRET: '' });
    expect(without.status).toBe(404);
    const wrong = await call('/operator/workspaces/x/move', { body: { shard: 1 }, headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
  });

  it('moves a workspace while a client writes memory, installs and authors skills and starts runs', async () => {
    const user = await signUpWithSummarizer();
    const [from, to] = [user.shard, otherShard(user)];
    const catalog = Array.from({ length: 30 }, (_, i) => `move-catalog-${user.workspaceId.slice(-6)}-${i}`);
    await seedCatalog(catalog.map((slug) => catalogEntry(slug)));
    // One key per kind of write, so the loop stays under each credential's rate limit.
    const [memoryKey, skillKey, runKey] = await Promise.all([
      createKey(user, ['memory:write']),
      createKey(user, ['library:write']),
      createKey(user, ['tool:execute']),
    ]);

    const acknowledged = { lines: [] as string[], authored: [] as string[], installed: [] as string[], runs: [] as string[] };
    const unexpected: string[] = [];
    let fenced = 0;
    let stop = false;
    /** Answers whether the write was acknowledged; a refusal must be the fence's. */
    const outcome = (what: string, res: ApiResponse) => {
      if (res.status === 200 || res.status === 201) return true;
      if (res.status === 503) {
        expectFenced(res);
        fenced++;
      } else unexpected.push(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return false;
    };

    const memoryLoop = async () => {
      for (let i = 0; !stop; i++) {
        const line = `line ${i}`;
        if (outcome(line, await call('/api/v1/memory', { method: 'PUT', apiKey: memoryKey.key, body: { content: line, mode: 'append' } }))) {
          acknowledged.lines.push(line);
        }
        await sleep(60);
      }
    };
    // Installing waits for the workspace's run to end (429 otherwise): skills and runs take turns.
    const skillAndRunLoop = async () => {
      for (let i = 0; !stop; i++) {
        const slug = `authored-${i}`;
        const authored = await call(`/api/v1/skills/${slug}`, { method: 'PUT', apiKey: skillKey.key, body: { ...SUMMARIZER, name: `Authored ${i}` } });
        if (outcome(slug, authored)) acknowledged.authored.push(slug);
        const next = catalog[acknowledged.installed.length];
        if (next && outcome(next, await call(`/api/v1/skills/${next}/install`, { method: 'POST', apiKey: skillKey.key }))) acknowledged.installed.push(next);
        const started = await call('/api/v1/skills/meeting-summarizer/run', { apiKey: runKey.key, body: { input: 'Ship Friday.' } });
        if (outcome('run', started)) {
          acknowledged.runs.push(started.body.executionId);
          // The run settles in its Durable Object, through the directory: it ends before the next install.
          for (let polls = 0; polls < 100; polls++) {
            const status = await call(`/api/v1/executions/${started.body.executionId}/status`, { token: user.token });
            if (status.body?.status === 'completed') break;
            await sleep(100);
          }
        }
        await sleep(100);
      }
    };

    const loops = Promise.all([memoryLoop(), skillAndRunLoop()]);
    await sleep(1000);
    const moved = await move(user.workspaceId, to, 1500);
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ workspaceId: user.workspaceId, from, to });
    // Writes after the flip land on the new shard.
    await sleep(800);
    stop = true;
    await loops;

    expect(unexpected).toEqual([]);
    expect(fenced).toBeGreaterThan(0);
    expect(acknowledged.runs.length).toBeGreaterThan(0);
    expect(await placeOf(globalDbOf(env), user.workspaceId)).toEqual({ shard: to, movingTo: null });

    // Every acknowledged append is in the document once, in order; nothing refused is.
    const [memory] = await rowsOn(to, 'SELECT content FROM memory WHERE workspace_id = ?', user.workspaceId);
    const lines = String(memory?.content ?? '')
      .split('\n\n---\n\n')
      .filter(Boolean);
    expect(lines).toEqual(acknowledged.lines);
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe(memory?.content);

    const skills = (await rowsOn(to, 'SELECT slug FROM skills WHERE workspace_id = ?', user.workspaceId)).map((row) => row.slug);
    expect(new Set(skills).size).toBe(skills.length);
    expect(skills).toEqual(expect.arrayContaining(['meeting-summarizer', ...acknowledged.authored, ...acknowledged.installed]));
    expect(skills).toHaveLength(1 + acknowledged.authored.length + acknowledged.installed.length);

    const executions = await rowsOn(to, 'SELECT id, status FROM executions WHERE workspace_id = ?', user.workspaceId);
    expect(executions.map((row) => `exec_${row.id}`).sort()).toEqual([...acknowledged.runs].sort());
    expect(executions.every((row) => row.status === 'completed')).toBe(true);

    expect(await holdsWorkspace(shardBinding(env, from), user.workspaceId)).toBe(false);
  });

  it('finishes a move interrupted after the copy under a raised fence when run again', async () => {
    const user = await signUpWithSummarizer();
    const [from, to] = [user.shard, otherShard(user)];
    expect((await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'before the move' } })).status).toBe(200);
    await copyBeforeFence(env, user.workspaceId, to);
    await raiseFence(env, user.workspaceId, from, to);
    // The process stops here. Meanwhile writes are fenced, reads go on from the old shard.
    expectFenced(await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'refused' } }));
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe('before the move');

    const again = await move(user.workspaceId, to);
    expect(again.status).toBe(200);
    expect(await placeOf(globalDbOf(env), user.workspaceId)).toEqual({ shard: to, movingTo: null });
    expect((await call('/api/v1/memory', { token: user.token })).body.content).toBe('before the move');
    expect((await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'after' } })).status).toBe(200);
    expect(await rowsOn(to, 'SELECT content FROM memory WHERE workspace_id = ?', user.workspaceId)).toEqual([{ content: 'after' }]);
    expect(await holdsWorkspace(shardBinding(env, from), user.workspaceId)).toBe(false);
    // Run once more, the move finds nothing left to do.
    expect((await move(user.workspaceId, to)).body).toMatchObject({ copied: { beforeFence: 0, underFence: 0 }, deleted: 0 });
  });

  it('keeps ids and their order: a cursor taken before the move pages on after it, and newer rows list first', async () => {
    const user = await signUp();
    for (const content of ['one', 'two', 'three', 'four', 'five']) {
      expect((await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content } })).status).toBe(200);
    }
    const page = (query: string) => call(`/api/v1/audit-logs?action=memory.updated&${query}`, { token: user.token });
    const first = await page('limit=3');
    expect(first.body.has_more).toBe(true);
    const before = (await page('limit=10')).body.data.map((entry: { id: number }) => entry.id);
    expect(before).toHaveLength(5);

    expect((await move(user.workspaceId, otherShard(user))).status).toBe(200);
    expect((await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'six' } })).status).toBe(200);

    const rest = await page(`limit=10&after_id=${first.body.last_id}`);
    expect([...first.body.data, ...rest.body.data].map((entry: { id: number }) => entry.id)).toEqual(before);
    const after = (await page('limit=10')).body.data.map((entry: { id: number }) => entry.id);
    expect(after.slice(1)).toEqual(before);
    // The newest was written on the new shard: its number is in the id's low 12 bits.
    expect(after[0] % 4096).toBe(otherShard(user));
  });

  it('moves a trigger with its delivery log: the entries list after the move, and a delivery then is recorded on the new shard', async () => {
    const user = await signUp();
    await install(user, 'flow', definition('flow', [mapping('only', { x: { value: 1 } })]));
    const trigger = (await call('/api/v1/workflows/flow/triggers', { token: user.token, body: {} })).body as { id: string; url: string; secret: string };
    const forged = (id: string) => deliverSigned(trigger, {}, id, `whsec_${btoa('a forged secret, 24 bytes')}`);
    for (const id of ['before-1', 'before-2']) expect((await forged(id)).status).toBe(401);

    expect((await move(user.workspaceId, otherShard(user))).status).toBe(200);
    expect((await forged('after-1')).status).toBe(401);

    const log = await call(`/api/v1/workflows/flow/triggers/${trigger.id}/deliveries`, { token: user.token });
    expect(log.body.data.map((entry: { deliveryId: string }) => entry.deliveryId)).toEqual(['after-1', 'before-2', 'before-1']);
    expect(await rowsOn(user.shard, 'SELECT id FROM trigger_deliveries WHERE workspace_id = ?', user.workspaceId)).toEqual([]);
  });
});

describe('where a Durable Object finds the workspace', () => {
  it('asks the shard the work started on, not the directory, however long the work goes on', async () => {
    const user = await signUp();
    expect((await call('/api/v1/memory', { method: 'PUT', token: user.token, body: { content: 'kept' } })).status).toBe(200);
    const counted = recordedGlobal();
    const db = directoryRoutedShardDb(counted.env, user.workspaceId, user.shard);
    const read = async () => (await db.select({ content: memory.content }).from(memory).where(eq(memory.workspaceId, user.workspaceId)))[0]?.content;
    expect(await read()).toBe('kept');
    await sleep(PLACE_TTL_MS + 50);
    expect(await read()).toBe('kept');
    expect(counted.statements).toEqual([]);
  });

  it('is vouched for by a new workspace’s shard; a move fences the source, and only the flip makes the target vouch', async () => {
    const user = await signUp();
    const [from, to] = [user.shard, otherShard(user)];
    const vouches = (shard: number) => shardVouches(shardDbOf(env, shard), user.workspaceId, shard);
    expect(await vouches(from)).toBe(true);
    await copyBeforeFence(env, user.workspaceId, to);
    // The copy carried the source's row: it names the source, so the target vouches for nothing yet.
    expect(await rowsOn(to, 'SELECT shard, fenced FROM workspace_placement WHERE workspace_id = ?', user.workspaceId)).toEqual([{ shard: from, fenced: 0 }]);
    expect(await vouches(to)).toBe(false);
    await raiseFence(env, user.workspaceId, from, to);
    expect(await vouches(from)).toBe(false);

    // A write that started on the source waits for the fence to lift, then lands on the target.
    const counted = recordedGlobal();
    const db = directoryRoutedShardDb(counted.env, user.workspaceId, from);
    const write = db
      .insert(memory)
      .values({ workspaceId: user.workspaceId, content: 'written through the move', updatedBy: user.user.id, updatedAt: Date.now() })
      .onConflictDoUpdate({
        target: memory.workspaceId,
        set: { content: 'written through the move' },
      });
    const landed = write.then(() => 'landed');
    expect((await move(user.workspaceId, to)).status).toBe(200);
    expect(await landed).toBe('landed');
    expect(counted.statements.length).toBeGreaterThan(0);
    expect(await vouches(to)).toBe(true);
    expect(await rowsOn(from, 'SELECT * FROM workspace_placement WHERE workspace_id = ?', user.workspaceId)).toEqual([]);
    expect(await rowsOn(to, 'SELECT content FROM memory WHERE workspace_id = ?', user.workspaceId)).toEqual([{ content: 'written through the move' }]);
  });
});
