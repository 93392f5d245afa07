import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import backfill from '../../schema/migrations/0012_traces_backfill.sql?raw';
import { call, signUp } from '../helpers/api';

/** Runs migration 0012 again, as it ran on a database that had executions before traces existed. */
const runBackfill = () => env.DB.batch(backfill.split('--> statement-breakpoint').map((sql) => env.DB.prepare(sql)));

describe('migration 0012 (traces for older executions)', () => {
  it('makes one trace per lineage with its cost, latest status and first title, once', async () => {
    const user = await signUp();
    const insert = env.DB.prepare(
      'INSERT INTO executions (workspace_id, user_id, skill_slug, skill_name, status, input_text, trace_key, started_at, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const t0 = Date.now() - 60_000;
    await env.DB.batch([
      insert.bind(user.workspaceId, user.user.id, 'notes', 'Notes', 'completed', 'Before lineage keys.', '', t0, 150),
      insert.bind(user.workspaceId, user.user.id, 'notes', 'Notes', 'completed', 'First of a lineage.', 'old-lineage', t0 + 1000, 200),
      insert.bind(user.workspaceId, user.user.id, 'notes', 'Notes', 'failed', 'Its rerun.', 'old-lineage', t0 + 2000, 75),
      insert.bind(user.workspaceId, user.user.id, 'agent:writer', 'Writer', 'completed', 'A workflow step.', 'agent-lineage', t0 + 3000, 10),
    ]);
    await runBackfill();
    await runBackfill();

    const items = (await call('/api/v1/traces', { token: user.token })).body.items;
    expect(items.map((t: { title: string; status: string; totalCost: number }) => [t.title, t.status, t.totalCost])).toEqual([
      ['Notes: First of a lineage.', 'failed', 2.75],
      ['Notes: Before lineage keys.', 'completed', 1.5],
    ]);
    expect(items[1].traceKey).not.toBe('');
    expect(items[0]).toMatchObject({
      traceKey: 'old-lineage',
      startedAt: new Date(t0 + 1000).toISOString(),
      lastActivityAt: new Date(t0 + 2000).toISOString(),
    });
    expect(items[0].id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
