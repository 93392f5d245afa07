/**
 * A crash must never lock a workspace. Each step after a run's claim is made to fail or to
 * "crash" (the request dies and nothing it would have done next happens), by handing the
 * service a real D1 and real Durable Object namespace with one fault injected. Afterwards the
 * workspace must run again (at once, or once the reconciler's grace period has passed), no
 * credit hold may be left, the balance must be the start minus what was charged, and every
 * stream of the lost run must end.
 */
import { env, exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Env } from '../../workers/env';
import type { TurnInput } from '../../workers/services/execution-events';
import { AppError } from '../../workers/errors';
import { CLAIM_GRACE_MS, releaseOrphanedHolds } from '../../workers/services/execution-reconciler';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { postEvents, runSkill } from '../../workers/services/executions';
import { BASE, call, sessionPrincipal, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { allShards, shardD1, shardDbFor } from '../helpers/shards';
import { turnOf } from '../helpers/turns';
import { globalDbOf, openShard } from '../../workers/lib/db';
import { closeTurn } from '../../workers/services/execution-runs';
import { reserveCredits } from '../helpers/credits';
import { runHousekeeping } from '../helpers/housekeeping';

afterEach(() => resetClock());

const SKILL = { name: 'Notes', description: 'Summarises notes.', category: 'productivity', prompt: '# Notes\nSummarise the notes.' };

async function setup() {
  const user = await signUp();
  await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
  return user;
}

/** The user's ledger straight from the global D1, in hundredths: balance, what is held, what usage charged. */
async function ledger(user: TestUser) {
  const row = await env.DB.prepare(
    `SELECT a.balance AS balance, a.reserved AS reserved,
       (SELECT COUNT(*) FROM credit_reservations r WHERE r.user_id = a.user_id AND r.settled_at IS NULL) AS holds,
       (SELECT COALESCE(-SUM(t.amount), 0) FROM credit_transactions t WHERE t.user_id = a.user_id AND t.type = 'usage') AS charged,
       (SELECT COALESCE(SUM(t.amount), 0) FROM credit_transactions t WHERE t.user_id = a.user_id AND t.type = 'purchase') AS granted
     FROM credit_accounts a WHERE a.user_id = ?`,
  )
    .bind(user.user.id)
    .first<{ balance: number; reserved: number; holds: number; charged: number; granted: number }>();
  return row!;
}

/** No hold left, and the balance is exactly what was granted minus what was charged. */
async function expectSettledLedger(user: TestUser) {
  const { balance, reserved, holds, charged, granted } = await ledger(user);
  expect({ reserved, holds }).toEqual({ reserved: 0, holds: 0 });
  expect(balance).toBe(granted - charged);
  expect((await call('/api/v1/billing/balance', { token: user.token })).body.canExecute).toBe(true);
}

const executionRow = (id: string) =>
  allShards
    .prepare('SELECT status, turn_key AS turnKey FROM executions WHERE id = ?')
    .bind(Number(id.slice(5)))
    .first<{ status: string; turnKey: string | null }>();

const newestExecution = async (user: TestUser) =>
  (await (
    await shardD1(user.workspaceId)
  )
    .prepare('SELECT id, status FROM executions WHERE workspace_id = ? ORDER BY id DESC LIMIT 1')
    .bind(user.workspaceId)
    .first<{ id: number; status: string }>())!;

const run = (user: TestUser, input = 'We ship Friday. Ana writes the notes.') => call('/api/v1/skills/notes/run', { token: user.token, body: { input } });

/** Runs once the workspace is free, and waits for the run to complete. */
async function runToCompletion(user: TestUser) {
  const started = await run(user);
  expect(started.status).toBe(200);
  await waitForStatus(user, started.body.executionId, 'completed');
  return started.body.executionId as string;
}

type StartTurn = (input: TurnInput) => Promise<unknown>;

/**
 * The real namespace with the object's `startTurn` replaced by `start` (given the real one)
 * and, with `unreachable`, every other call failing too, as when the process dies.
 */
function sessions(start: (real: StartTurn, input: TurnInput) => Promise<unknown>, unreachable = false): Env['EXECUTION_SESSION'] {
  const namespace = env.EXECUTION_SESSION;
  return new Proxy(namespace, {
    get(target, prop) {
      if (prop !== 'getByName') return Reflect.get(target, prop);
      return (name: string) => {
        const stub = target.getByName(name);
        return new Proxy(stub, {
          get(real, method) {
            if (method === 'startTurn') return (input: TurnInput) => start((i) => real.startTurn(i), input);
            if (unreachable) return () => Promise.reject(new Error('injected: the object cannot be reached'));
            return Reflect.get(real, method);
          },
        });
      };
    },
  });
}

/** The real D1 `database` with the first statement matching `failOn` throwing, as a failed write would. */
function faultyD1(database: D1Database, failOn: RegExp): D1Database {
  const REAL = Symbol('real');
  const SQL = Symbol('sql');
  let tripped = false;
  const check = (sql: string) => {
    if (!tripped && failOn.test(sql)) {
      tripped = true;
      throw new Error(`injected D1 failure: ${sql.slice(0, 60)}`);
    }
  };
  const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement =>
    new Proxy(statement, {
      get(target, prop) {
        if (prop === REAL) return target;
        if (prop === SQL) return sql;
        if (prop === 'bind') return (...values: unknown[]) => wrap(target.bind(...values), sql);
        if (prop === 'run' || prop === 'all' || prop === 'first' || prop === 'raw') {
          return (...args: unknown[]) => {
            check(sql);
            return (target[prop] as (...a: unknown[]) => unknown)(...args);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return new Proxy(database, {
    get(target, prop) {
      if (prop === 'prepare') return (sql: string) => wrap(target.prepare(sql), sql);
      if (prop === 'batch') {
        return (statements: D1PreparedStatement[]) => {
          for (const s of statements) check((s as unknown as Record<symbol, string>)[SQL]!);
          return target.batch(statements.map((s) => (s as unknown as Record<symbol, D1PreparedStatement>)[REAL]!));
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const withSessions = (namespace: Env['EXECUTION_SESSION']): Env => ({ ...env, EXECUTION_SESSION: namespace });

/** What a service call threw, as the API would answer it. */
async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

/** The execution's event log, from its object. */
const log = (id: string) => env.EXECUTION_SESSION.getByName(id).events(0);

describe('a step after the claim fails', () => {
  it('the object refuses the turn (overloaded, reset): 503 at once, nothing held, nothing left behind, the next run starts', async () => {
    const user = await setup();
    const before = await ledger(user);
    const refusing = sessions(() => Promise.reject(new Error('injected: Durable Object is overloaded')));
    const error = await refusal(runSkill(await shardDbFor(user.workspaceId), withSessions(refusing), sessionPrincipal(user), 'notes', { input: 'Plan it.' }));
    expect([error.status, error.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(error.message).toContain('nothing was charged');
    // The run route leaves no execution behind; the credits are as they were.
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
    expect(await ledger(user)).toEqual(before);
    await runToCompletion(user);
    await expectSettledLedger(user);
  });

  it('a user.message whose start fails leaves the execution idle, and it takes the message again', async () => {
    const user = await setup();
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Plan it.' } });
    const id = created.body.id as string;
    const refusing = sessions(() => Promise.reject(new Error('injected: connection reset')));
    const body = { events: [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'Plan it.' }] }] };
    expect((await refusal(postEvents(await shardDbFor(user.workspaceId), withSessions(refusing), sessionPrincipal(user), id, body))).status).toBe(503);
    expect(await executionRow(id)).toMatchObject({ status: 'idle' });
    // The object fenced the withdrawn turn off: a late start with its key is refused.
    const { turnKey } = (await executionRow(id))!;
    const late = turnOf(user, {
      executionId: Number(id.slice(5)),
      turnKey: turnKey!,
      skillName: SKILL.name,
      skillSlug: 'notes',
      system: SKILL.prompt,
      text: 'Plan it.',
    });
    expect(await env.EXECUTION_SESSION.getByName(id).startTurn(late)).toEqual({ accepted: false });
    const again = await call(`/api/v1/executions/${id}/events`, { token: user.token, body });
    expect(again.status).toBe(200);
    await waitForStatus(user, id, 'completed');
    await expectSettledLedger(user);
  });

  it('the object took the turn but its answer was lost: the run goes on and is answered, charged once', async () => {
    const user = await setup();
    const lostAnswer = sessions(async (real, input) => {
      await real(input);
      throw new Error('injected: the connection dropped after the object answered');
    });
    const started = (await runSkill(await shardDbFor(user.workspaceId), withSessions(lostAnswer), sessionPrincipal(user), 'notes', { input: 'Plan it.' })) as {
      executionId: string;
    };
    await waitForStatus(user, started.executionId, 'completed');
    const events = await log(started.executionId);
    expect(events.filter((e) => e.type === 'user.message')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'session.status_idle')).toHaveLength(1);
    await expectSettledLedger(user);
    expect((await ledger(user)).charged).toBeGreaterThan(0);
  });

  it('a D1 write throws (the credit hold): 503, the execution is not left working, nothing held', async () => {
    const user = await setup();
    // The hold goes to the global ledger, after the claim on the shard.
    const failingHold: Env = { ...env, DB: faultyD1(env.DB, /insert into "credit_reservations"/i) };
    const error = await refusal(runSkill(await shardDbFor(user.workspaceId), failingHold, sessionPrincipal(user), 'notes', { input: 'Plan it.' }));
    expect(error.status).toBe(503);
    expect((await call('/api/v1/executions', { token: user.token })).body.items).toEqual([]);
    await runToCompletion(user);
    await expectSettledLedger(user);
  });

  it('a D1 write throws while the failed start is undone: the reconciler settles it after the grace period', async () => {
    const user = await setup();
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Plan it.' } });
    const id = created.body.id as string;
    // The start fails and so does the compensation's write of the execution back to idle (on the shard).
    const failingUndo = openShard(faultyD1(await shardD1(user.workspaceId), /update "executions" set "status" = \?, "completed_at"/i), user.shard);
    const refusing = sessions(() => Promise.reject(new Error('injected: connection reset')));
    const body = { events: [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'Plan it.' }] }] };
    const error = await refusal(postEvents(failingUndo, withSessions(refusing), sessionPrincipal(user), id, body));
    expect([error.status, error.message]).toEqual([503, expect.stringContaining('within 15 seconds')]);
    expect(await executionRow(id)).toMatchObject({ status: 'working' });
    advanceClock(CLAIM_GRACE_MS + 1000);
    expect((await call(`/api/v1/executions/${id}/status`, { token: user.token })).body.status).toBe('failed');
    await runToCompletion(user);
    await expectSettledLedger(user);
  });
});

describe('between the shard and the ledger', () => {
  /** An idle execution of `user`'s, claimed for the turn `turnKey` and held for, as a run's start leaves it (claim on the shard, hold on the ledger). */
  async function claimedAndHeld(user: TestUser) {
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Plan it.' } });
    const id = created.body.id as string;
    const turnKey = `${id}:${crypto.randomUUID()}`;
    await (
      await shardD1(user.workspaceId)
    )
      .prepare("UPDATE executions SET status = 'working', turn_key = ?, claimed_at = ? WHERE id = ?")
      .bind(turnKey, Date.now(), Number(id.slice(5)))
      .run();
    const held = await reserveCredits(globalDbOf(env), { userId: user.user.id, executionId: id, turnKey, amount: 2000, workspaceId: user.workspaceId });
    expect(held).toEqual({ reserved: true, amount: 2000 });
    return { id, turnKey };
  }

  const closing = (user: TestUser, id: string, turnKey: string) => ({
    executionId: Number(id.slice(5)),
    turnKey,
    reason: 'end_turn' as const,
    settlement: { userId: user.user.id, executionId: id, turnKey, cost: 300, description: 'Notes: 10 input and 20 output tokens' },
    totals: { inputTokens: 10, outputTokens: 20, elapsedMs: 5 },
    output: null,
  });

  it("the ledger settles, then the shard's record fails: the close sent again records the run once and charges it once", async () => {
    const user = await setup();
    const { id, turnKey } = await claimedAndHeld(user);
    const shard = await shardD1(user.workspaceId);
    const failingRecord = openShard(faultyD1(shard, /update "executions" set "status" = \?, "cost"/i), user.shard);
    await expect(closeTurn(failingRecord, globalDbOf(env), closing(user, id, turnKey))).rejects.toThrow('injected D1 failure');
    // Charged on the ledger, the hold settled; the execution is still in the turn, so its owner's object closes it again.
    expect(await ledger(user)).toMatchObject({ reserved: 0, holds: 0, charged: 300 });
    expect(await executionRow(id)).toMatchObject({ status: 'working', turnKey });
    const db = await shardDbFor(user.workspaceId);
    expect(await closeTurn(db, globalDbOf(env), closing(user, id, turnKey))).toMatchObject({ charged: 300 });
    // A third send (the object cut off once more) changes nothing.
    expect(await closeTurn(db, globalDbOf(env), closing(user, id, turnKey))).toMatchObject({ charged: 300 });
    const details = await call(`/api/v1/executions/${id}`, { token: user.token });
    expect(details.body).toMatchObject({ status: 'completed', cost: 3 });
    expect(await ledger(user)).toMatchObject({ charged: 300 });
    await expectSettledLedger(user);
  });

  it("a hold that landed after its claim was given back is released by the orphaned-hold sweep; a run's hold is kept while its claim stands", async () => {
    const user = await setup();
    const orphan = await claimedAndHeld(user);
    // The reconciler gave the claim back (a start stalled past the grace period) before the hold landed.
    await (
      await shardD1(user.workspaceId)
    )
      .prepare("UPDATE executions SET status = 'failed', completed_at = ? WHERE id = ?")
      .bind(Date.now(), Number(orphan.id.slice(5)))
      .run();
    const other = await setup();
    const claimed = await claimedAndHeld(other);
    // Within the grace period nothing is touched: the claim may still be on its way.
    expect(await releaseOrphanedHolds(env)).toBe(0);
    expect(await ledger(user)).toMatchObject({ reserved: 2000, holds: 1 });
    advanceClock(CLAIM_GRACE_MS + 1000);
    expect(await releaseOrphanedHolds(env)).toBe(1);
    await expectSettledLedger(user);
    expect(await ledger(user)).toMatchObject({ charged: 0 });
    expect(await ledger(other)).toMatchObject({ reserved: 2000, holds: 1 });
    expect(await executionRow(claimed.id)).toMatchObject({ status: 'working', turnKey: claimed.turnKey });
  });
});

describe('the process dies between the claim and the object', () => {
  /** A run whose request died after its claim and hold: the object never answered, and nothing after that happened. */
  async function crashMidStart(user: TestUser, reachesObject: boolean) {
    const dying = sessions(async (real, input) => {
      if (reachesObject) await real(input);
      throw new Error('injected: the process died');
    }, true);
    await refusal(runSkill(await shardDbFor(user.workspaceId), withSessions(dying), sessionPrincipal(user), 'notes', { input: 'Plan it.' }));
    return `exec_${(await newestExecution(user)).id}`;
  }

  it('the object never got the turn: the workspace is locked only for the grace period, then runs; the lost run failed, its hold released', async () => {
    const user = await setup();
    const lost = await crashMidStart(user, false);
    expect(await executionRow(lost)).toMatchObject({ status: 'working' });
    expect((await ledger(user)).holds).toBe(1);

    // Within the grace period the slot is taken: the answer names the holder and when to retry.
    const early = await run(user);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ error: 'EXECUTION_RUNNING', executionId: lost, retryAfterSeconds: expect.any(Number) });
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(early.headers.get('retry-after'))).toBeLessThanOrEqual(CLAIM_GRACE_MS / 1000);

    advanceClock(CLAIM_GRACE_MS + 1000);
    const next = await runToCompletion(user);
    expect(next).not.toBe(lost);
    expect(await executionRow(lost)).toMatchObject({ status: 'failed' });
    const events = await log(lost);
    expect(events.map((e) => e.type)).toEqual(['agent.info', 'session.status_idle']);
    expect(events[0]!.payload.message).toContain('Nothing was charged');
    expect(events[1]!.payload).toEqual({ stop_reason: { type: 'error' } });
    await expectSettledLedger(user);
  });

  it("a member's lost start releases that member's hold, not the execution creator's", async () => {
    const owner = await setup();
    const member = await signUp();
    const invitation = await call(`/api/v1/workspaces/${owner.workspaceId}/invitations`, { token: owner.token, body: { email: member.email, role: 'member' } });
    expect((await call('/api/v1/invitations/accept', { token: member.token, body: { token: invitation.body.token } })).status).toBe(200);
    const id = (await call('/api/v1/executions', { token: owner.token, body: { skill_slug: 'notes', input: 'Plan it.' } })).body.id as string;

    // The member posts to the owner's execution and the process dies before the object has the turn.
    const dying = sessions(() => Promise.reject(new Error('injected: the process died')), true);
    const asMember = { ...sessionPrincipal(member), workspaceId: owner.workspaceId, shard: owner.shard, role: 'member' as const };
    const db = await shardDbFor(owner.workspaceId);
    const body = { events: [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'Plan it.' }] }] };
    await refusal(postEvents(db, withSessions(dying), asMember, id, body));
    expect((await ledger(member)).holds).toBe(1);

    advanceClock(CLAIM_GRACE_MS + 1000);
    expect((await call(`/api/v1/executions/${id}/status`, { token: owner.token })).body.status).toBe('failed');
    await expectSettledLedger(member);
    await expectSettledLedger(owner);

    // The same when the owner cancels such a start within the grace period.
    const next = (await call('/api/v1/executions', { token: owner.token, body: { skill_slug: 'notes', input: 'Plan it.' } })).body.id as string;
    await refusal(postEvents(db, withSessions(dying), asMember, next, body));
    expect((await ledger(member)).holds).toBe(1);
    expect((await call(`/api/v1/executions/${next}/cancel`, { method: 'POST', token: owner.token })).body).toMatchObject({ actualStatus: 'idle' });
    await expectSettledLedger(member);
  });

  it('the object got the turn: the run completes, charged once, and the workspace runs again', async () => {
    const user = await setup();
    const lost = await crashMidStart(user, true);
    await waitForStatus(user, lost, 'completed');
    await runToCompletion(user);
    await expectSettledLedger(user);
  });

  it('a stream opened on the lost run ends when the reconciler settles it', async () => {
    const user = await setup();
    const created = await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'notes', input: 'Plan it.' } });
    const id = created.body.id as string;
    const url = new URL((await call(`/api/v1/executions/${id}/stream-token`, { token: user.token })).body.sseUrl);
    const stream = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`);
    const dying = sessions(() => Promise.reject(new Error('injected: the process died')), true);
    const body = { events: [{ type: 'user.message' as const, content: [{ type: 'text' as const, text: 'Plan it.' }] }] };
    await refusal(postEvents(await shardDbFor(user.workspaceId), withSessions(dying), sessionPrincipal(user), id, body));

    advanceClock(CLAIM_GRACE_MS + 1000);
    expect((await call(`/api/v1/executions/${id}/status`, { token: user.token })).body.status).toBe('failed');
    const text = await stream.text();
    expect(text).toContain('"type":"session.status_idle","payload":{"stop_reason":{"type":"error"}}');
    await expectSettledLedger(user);
  });

  it('cancel frees the slot at once, even within the grace period, and says what it did', async () => {
    const user = await setup();
    const lost = await crashMidStart(user, false);
    const cancelled = await call(`/api/v1/executions/${lost}/cancel`, { method: 'POST', token: user.token });
    expect(cancelled.body).toEqual({ success: true, message: expect.stringContaining('had not started'), processKilled: false, actualStatus: 'idle' });
    expect(await executionRow(lost)).toMatchObject({ status: 'idle' });
    expect((await log(lost)).map((e) => e.type)).toEqual(['user.interrupt', 'session.status_idle']);
    await expectSettledLedger(user);
    await runToCompletion(user);
  });

  it('a list of the executions settles a lost run past the grace period, though nobody reads the run itself', async () => {
    const user = await setup();
    const listed = async (query = '') => {
      const { body } = await call(`/api/v1/executions${query}`, { token: user.token });
      return ((body.items ?? body.data) as { executionId: string; status: string }[]).map((e) => [e.executionId, e.status]);
    };
    const lost = await crashMidStart(user, false);
    // Within the grace period the claim may yet be a run starting: it is listed as such.
    expect(await listed()).toEqual([[lost, 'working']]);
    advanceClock(CLAIM_GRACE_MS + 1000);
    expect(await listed()).toEqual([[lost, 'failed']]);
    expect((await log(lost)).map((e) => e.type)).toEqual(['agent.info', 'session.status_idle']);
    await expectSettledLedger(user);

    // The cursor form (the console's paging) settles one too.
    const second = await crashMidStart(user, false);
    advanceClock(CLAIM_GRACE_MS + 1000);
    expect(await listed(`?after_id=exec_${BigInt(second.slice(5)) + 1n}`)).toEqual([
      [second, 'failed'],
      [lost, 'failed'],
    ]);
    await expectSettledLedger(user);
  });

  it('the hourly sweep settles lost runs of every workspace', async () => {
    const first = await setup();
    const second = await setup();
    const lost = [await crashMidStart(first, false), await crashMidStart(second, false)];
    advanceClock(CLAIM_GRACE_MS + 1000);
    await runHousekeeping();
    for (const id of lost) expect(await executionRow(id)).toMatchObject({ status: 'failed' });
    await expectSettledLedger(first);
    await expectSettledLedger(second);
  });
});

describe('cancel of a live run', () => {
  it('waits for the run to stop and answers the status it reached', async () => {
    const user = await setup();
    const started = await run(user, 'A plan with several steps. Step one. Step two. Step three. Step four.');
    const cancelled = await call(`/api/v1/executions/${started.body.executionId}/cancel`, { method: 'POST', token: user.token });
    // The run either was stopped (idle) or had already finished when the cancel arrived.
    if (cancelled.body.processKilled)
      expect(cancelled.body).toEqual({ success: true, message: 'The run was interrupted', processKilled: true, actualStatus: 'idle' });
    else expect(cancelled.body.actualStatus).toBe('completed');
    await expectSettledLedger(user);
  });
});
