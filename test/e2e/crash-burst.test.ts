import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, startService, type RunningService } from './helpers';
import { startPrepared } from './prepared';

const WORKSPACES = 16;
/**
 * Each user holds all of their 120 Ds for a run (a hold takes up to 200 Ds), so a hold the
 * crash leaked would leave nothing to start the next run with: a run that starts again proves
 * the lost run's credits came back.
 */
const ARGS = ['--var', 'LOCAL_MODEL_DELAY_MS:40', '--var', 'WELCOME_CREDITS:120'];
const READY_MS = 150_000;
/** The grace period (15 s) plus room for two slow cores. */
const RECOVERY_MS = 90_000;
/** How long after the restart a history list may still show a lost run `working`: the grace period (15 s from its claim) and room. */
const LISTED_WORKING_MS = 30_000;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SKILL = { name: 'Burst', description: 'Summarises.', category: 'productivity', prompt: '# Burst\nSummarise.' };
const INPUT = 'Ship the release on Friday. Tell Ana and Bo. Check the docs first.';

/**
 * When the crash strikes, counted from the burst's first request: 120 ms in (as in the chaos run
 * that found lost runs listed `working`), and later, while the starts are between their claim
 * and their turn's start (on two busy cores the burst's claims and starts fall within its first
 * two seconds, its answers later).
 */
const KILL_AFTER_MS = [120, 500, 1_000, 2_000];

type Listed = { executionId: string; status: string; cost: number };

/**
 * The crash of the crash-safety issue, black-box: sixteen workspaces start a skill run at once,
 * `wrangler dev` is killed (SIGKILL of its process group) in the middle of the burst and
 * started again on the same state, at several points of the burst in turn. The owners of the
 * starts the crash cut off never learned their runs' ids: with nothing but the history list
 * read, no list shows a run `working` 30 s after the restart. Then every workspace runs again,
 * every run's log ends with `session.status_idle`, and every user's balance is what they were
 * granted minus what they were charged.
 */
describe('a crash in the middle of a burst of run starts', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-e2e-burst-'));
  let service: RunningService;
  const tokens: string[] = [];

  const api = async (token: string, path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') => {
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as any };
  };

  const history = async (token: string) => (await api(token, '/api/v1/executions?limit=20')).body.items as Listed[];

  /** The execution's whole log: a fresh stream URL's replay, which ends after session.status_idle. */
  const eventTypes = async (token: string, executionId: string) => {
    const { sseUrl } = (await api(token, `/api/v1/executions/${executionId}/stream-token`)).body as { sseUrl: string };
    const url = new URL(sseUrl);
    const text = await (await fetch(`${service.base}${url.pathname}${url.search}`)).text();
    return [...text.matchAll(/^data: (.*)$/gm)].map((m) => (JSON.parse(m[1]!) as { type: string }).type);
  };

  beforeAll(async () => {
    service = await startPrepared(READY_MS, { stateDir, args: ARGS });
    const made = await Promise.all(
      Array.from({ length: WORKSPACES }, async (_, i) => {
        const { token } = await newAccount(service.base, `Burst ${i}`);
        expect((await api(token, '/api/v1/skills/burst', SKILL, 'PUT')).status).toBe(200);
        return token;
      }),
    );
    tokens.push(...made);
  }, READY_MS + 60_000);

  afterAll(async () => {
    await service?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  for (const killAfter of KILL_AFTER_MS) {
    it(
      `killed ${killAfter} ms into the burst: with only the history read, no list shows a run working ${LISTED_WORKING_MS / 1000} s after the restart`,
      async () => {
        const burst = tokens.map((token) => api(token, '/api/v1/skills/burst/run', { input: INPUT }).catch(() => null));
        await pause(killAfter);
        await service.stop('SIGKILL');
        const answers = (await Promise.all(burst)).filter((res) => res !== null).length;
        service = await startService(READY_MS, { stateDir, args: ARGS, restart: true });
        const restartedAt = Date.now();

        // Nothing but the lists is read (no run's status, no new run): the list alone must settle a lost run.
        const workingAtRestart = (await Promise.all(tokens.map(history))).flat().filter((e) => e.status === 'working').length;
        let listed: Listed[] = [];
        for (;;) {
          listed = (await Promise.all(tokens.map(history))).flat();
          if (listed.every((e) => e.status !== 'working') || Date.now() - restartedAt > LISTED_WORKING_MS) break;
          await pause(1_000);
        }
        expect(
          listed.filter((e) => e.status === 'working'),
          `still working ${Date.now() - restartedAt} ms after the restart`,
        ).toEqual([]);
        const failed = listed.filter((e) => e.status === 'failed').length;
        console.log(
          `killed ${killAfter} ms into the burst (${answers} starts answered): ${workingAtRestart} listed working at the restart, none after ${Date.now() - restartedAt} ms; ${failed} lost runs failed so far`,
        );
      },
      2 * READY_MS + LISTED_WORKING_MS,
    );
  }

  it(
    'lets every workspace run again, and leaves no log open and no credit held',
    async () => {
      // Every lost run is settled: each workspace starts a run at once.
      const started = await Promise.all(tokens.map((token) => api(token, '/api/v1/skills/burst/run', { input: INPUT })));
      for (const res of started) expect(res.status, JSON.stringify(res.body)).toBe(200);

      const seen: string[] = [];
      // The workspaces side by side: each one's runs end on their own.
      await Promise.all(
        tokens.map(async (token) => {
          // Every run of the workspace ends (the lost ones failed, the rest completed), its log closed.
          let listed: Listed[] = [];
          for (const until = Date.now() + RECOVERY_MS; Date.now() < until; await pause(1000)) {
            listed = await history(token);
            if (listed.every((e) => e.status !== 'working')) break;
          }
          // A start cut off before its claim leaves an idle execution that never ran (and holds nothing); every other one ended.
          const ended = listed.filter((e) => !(e.status === 'idle' && e.cost === 0));
          expect(
            ended.map((e) => e.status).every((s) => s === 'completed' || s === 'failed'),
            JSON.stringify(listed),
          ).toBe(true);
          seen.push(...listed.map((e) => e.status));
          for (const types of await Promise.all(ended.map(({ executionId }) => eventTypes(token, executionId)))) {
            expect(types.at(-1)).toBe('session.status_idle');
          }

          const { transactions } = (await api(token, '/api/v1/billing/transactions')).body as { transactions: { amount: number; type: string }[] };
          const granted = transactions.filter((t) => t.type === 'purchase').reduce((sum, t) => sum + t.amount, 0);
          const charged = -transactions.filter((t) => t.type === 'usage').reduce((sum, t) => sum + t.amount, 0);
          const balance = (await api(token, '/api/v1/billing/balance')).body;
          expect(balance.balance).toBeCloseTo(granted - charged, 2);
          expect(balance.canExecute).toBe(true);
        }),
      );
      // What the crashes left (each strikes at a different point): failed runs never reached their session.
      console.log(
        `runs after the crashes: ${JSON.stringify(Object.fromEntries(['completed', 'failed', 'idle'].map((s) => [s, seen.filter((x) => x === s).length])))}`,
      );
    },
    2 * RECOVERY_MS,
  );
});
