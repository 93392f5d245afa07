import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Env } from '../../workers/env';
import { advanceClock, freezeClock, now, resetClock } from '../../workers/lib/clock';
import { parseId } from '../../workers/lib/ids';
import { costInHundredths } from '../../workers/runtime/pricing';
import { LOCAL_MODEL } from '../../workers/runtime/providers/local';
import { startTurn } from '../../workers/services/execution-lifecycle';
import { executions } from '../../schema';
import { call, expectError, sessionPrincipal, signUp, waitForStatus, type TestUser } from '../helpers/api';
import { shardDbFor } from '../helpers/shards';
import { eq } from 'drizzle-orm';
import { join } from '../helpers/members';

afterEach(() => resetClock());

/** Stops the clock at `at` (epoch ms). */
function setClock(at: number) {
  freezeClock();
  advanceClock(at - now());
}

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
/** The local model counts four characters a token: this input alone costs about 0.63 Ds a turn. */
const LONG_INPUT = 'Summarise this. '.repeat(6_250);

const limits = (user: TestUser, workspaceId = user.workspaceId) => call(`/api/v1/workspaces/${workspaceId}/limits`, { token: user.token });
const setLimits = (user: TestUser, body: unknown, workspaceId = user.workspaceId) =>
  call(`/api/v1/workspaces/${workspaceId}/limits`, { token: user.token, method: 'PUT', body });

async function withSkill() {
  const user = await signUp();
  expect((await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL })).status).toBeLessThan(300);
  return user;
}

const run = (user: TestUser, body: Record<string, unknown> = {}) =>
  call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Plan it.', ...body } });

async function eventsOf(executionId: string) {
  return env.EXECUTION_SESSION.getByName(executionId).events(0);
}

describe('GET and PUT /api/v1/workspaces/:id/limits', () => {
  it('answers no limits and nothing used, then what the owner set, and clears a limit with null', async () => {
    setClock(Date.UTC(2026, 10, 28, 12));
    const user = await signUp();
    expect((await limits(user)).body).toEqual({
      monthly: null,
      daily: null,
      usage: { month: { used: 0, resetsAt: '2026-12-01T00:00:00.000Z' }, day: { used: 0, resetsAt: '2026-11-29T00:00:00.000Z' } },
    });
    const set = await setLimits(user, { monthly: 250.5, daily: 20 });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ monthly: 250.5, daily: 20 });
    expect((await setLimits(user, { daily: null })).body).toMatchObject({ monthly: 250.5, daily: null });
    expect((await limits(user)).body).toMatchObject({ monthly: 250.5, daily: null });
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    expect(audit.body.data[0]).toMatchObject({ action: 'workspace.limits_updated', resourceId: user.workspaceId, metadata: { daily: null } });
  });

  it('refuses amounts that are not positive Ds with at most two decimals with 400 INVALID_INPUT naming the field', async () => {
    const user = await signUp();
    for (const [body, field] of [
      [{ monthly: 0 }, 'monthly'],
      [{ daily: -5 }, 'daily'],
      [{ monthly: 1.005 }, 'monthly'],
      [{ daily: '20' }, 'daily'],
    ] as const) {
      const error = expectError(await setLimits(user, body), 400, 'INVALID_INPUT');
      expect(error.details?.field).toBe(field);
    }
    expect((await limits(user)).body).toMatchObject({ monthly: null, daily: null });
  });

  it('lets members read but not change them (403), and answers 404 for a workspace other than the current one', async () => {
    const owner = await signUp();
    const member = await signUp();
    const outsider = await signUp();
    await join(owner, member, 'member');
    await setLimits(owner, { monthly: 10 });

    expect((await limits(member, owner.workspaceId)).body).toMatchObject({ monthly: 10 });
    expectError(await setLimits(member, { monthly: 1000 }, owner.workspaceId), 403, 'FORBIDDEN');
    expectError(await limits(outsider, owner.workspaceId), 404, 'NOT_FOUND');
    expectError(await setLimits(outsider, { monthly: 1 }, owner.workspaceId), 404, 'NOT_FOUND');
    expect((await limits(owner)).body.monthly).toBe(10);
  });
});

describe('spend limits on runs', () => {
  it('counts what runs were charged, and refuses a run past the limit with 402 saying which limit, what was used and when it resets', async () => {
    setClock(Date.UTC(2026, 10, 28, 12));
    const user = await withSkill();
    const first = await run(user, { input: LONG_INPUT });
    expect(first.status).toBe(200);
    await waitForStatus(user, first.body.executionId, 'completed');
    const [charge] = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    const used = (await limits(user)).body.usage;
    expect(used.month.used).toBe(-charge.amount);
    expect(used.day.used).toBe(-charge.amount);
    expect(used.month.used).toBeGreaterThan(0.5);

    await setLimits(user, { daily: 0.5 });
    const refused = await run(user);
    expect(refused.status).toBe(402);
    // The skill run route answers in the flat legacy shape.
    expect(refused.body).toMatchObject({
      error: 'INSUFFICIENT_CREDITS',
      limit: 'daily',
      limitAmount: 0.5,
      used: used.day.used,
      resetsAt: '2026-11-29T00:00:00.000Z',
    });
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Again.' } });
    const message = await call(`/api/v1/executions/${created.body.id}/events`, {
      token: user.token,
      body: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Go.' }] }] },
    });
    expect(expectError(message, 402, 'INSUFFICIENT_CREDITS').details).toMatchObject({ limit: 'daily', resetsAt: '2026-11-29T00:00:00.000Z' });

    // The next day the daily count starts again.
    advanceClock(12 * 3_600_000);
    expect((await limits(user)).body.usage.day).toEqual({ used: 0, resetsAt: '2026-11-30T00:00:00.000Z' });
    expect((await limits(user)).body.usage.month.used).toBe(used.month.used);
    const next = await run(user);
    expect(next.status).toBe(200);
    await waitForStatus(user, next.body.executionId, 'completed');
  });

  it('never lets concurrent starts claim more than the limit: each takes its allowance in the statement that takes its slot', async () => {
    const user = await withSkill();
    await setLimits(user, { monthly: 5 });
    const db = await shardDbFor(user.workspaceId);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++)
      ids.push((await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: `Run ${i}.`, budget: 1 } })).body.id);
    // Eight slots, so only the limit can stop a start.
    const roomy = { ...env, MAX_ACTIVE_EXECUTIONS: '8' } as Env;
    const principal = sessionPrincipal(user);
    const rows = await Promise.all(
      ids.map(
        async (id) =>
          (
            await db
              .select()
              .from(executions)
              .where(eq(executions.id, parseId('exec', id)!))
          )[0]!,
      ),
    );
    const outcomes = await Promise.allSettled(rows.map((row) => startTurn(db, roomy, principal, row, { text: row.inputText })));
    const started = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
    expect(started).toHaveLength(5);
    expect(refused).toHaveLength(3);
    for (const error of refused) expect(error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', status: 402, details: { limit: 'monthly', limitAmount: 5 } });
    for (const id of ids) {
      const status = (await call(`/api/v1/executions/${id}/status`, { token: user.token })).body.status;
      if (status !== 'idle') await waitForStatus(user, id, 'completed');
    }
    const used = (await limits(user)).body.usage.month.used;
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(5);
  });
});

describe('run budgets', () => {
  it('stops a run at its budget with limit_reached naming it, charges exactly what was used, and continues when a message raises it', async () => {
    const user = await withSkill();
    const started = await run(user, { input: LONG_INPUT, budget: 0.1 });
    expect(started.status).toBe(200);
    const id = started.body.executionId;
    await waitForStatus(user, id, 'idle');
    const events = await eventsOf(id);
    expect(events.at(-1)).toMatchObject({
      type: 'session.status_idle',
      payload: { stop_reason: { type: 'limit_reached', limit: 'budget', budget: 0.1, allowance: 0.1 } },
    });
    const result = events.findLast((e) => e.type === 'execution.result')!.payload as {
      cost: number;
      tokenUsage: { input_tokens: number; output_tokens: number };
    };
    const exact = costInHundredths(LOCAL_MODEL, result.tokenUsage.input_tokens, result.tokenUsage.output_tokens) / 100;
    expect(result.cost).toBe(exact);
    const [charge] = (await call('/api/v1/billing/transactions', { token: user.token })).body.transactions;
    expect(charge).toMatchObject({ type: 'usage', amount: -exact, executionId: id });

    // Spent: a message without a higher budget is refused, naming the budget.
    const say = (body: Record<string, unknown>) =>
      call(`/api/v1/executions/${id}/events`, {
        token: user.token,
        body: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'Go on.' }], ...body }] },
      });
    expect(expectError(await say({}), 402, 'INSUFFICIENT_CREDITS').details).toMatchObject({ limit: 'budget', budget: 0.1 });
    expect((await say({ budget: 10 })).status).toBe(200);
    await waitForStatus(user, id, 'completed');
    const after = await eventsOf(id);
    expect(after.at(-1)).toMatchObject({ type: 'session.status_idle', payload: { stop_reason: { type: 'end_turn' } } });
    const execution = (await call(`/api/v1/executions/${id}`, { token: user.token })).body;
    expect(execution.cost).toBeLessThanOrEqual(10);
  });

  it('refuses a budget that is not a positive amount of Ds with 400 INVALID_INPUT naming it', async () => {
    const user = await withSkill();
    for (const budget of [0, -1, 0.001, 'ten']) {
      const res = await run(user, { budget });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'INVALID_INPUT', details: { field: 'budget' } });
    }
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
  });
});
