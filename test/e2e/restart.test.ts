import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonEvents, sseEvents, sseReader } from '../helpers/sse';
import { newAccount, startService, type RunningService } from './helpers';
import { startPrepared } from './prepared';

/**
 * The local model's words come this far apart, so a run lasts several seconds and can be killed
 * mid-answer; two executions work at once (the skill run and the workflow's step), each holding
 * up to 200 Ds of credit.
 */
const ARGS = ['--var', 'LOCAL_MODEL_DELAY_MS:150', '--var', 'MAX_ACTIVE_EXECUTIONS:2', '--var', 'WELCOME_CREDITS:1000'];
const SLEEP_MS = 15_000;
/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const STEP_INPUT = 'Plan the launch. Write the notes. Tell the team.';
const SKILL = { name: 'E2E Restart', description: 'Summarises.', category: 'productivity', prompt: '# E2E Restart\nSummarise.\n1. Read it.\n2. Sum it up.' };
const mapping = (id: string, config: Record<string, unknown>) => ({ type: 'mapping', id, mapConfig: JSON.stringify(config) });
const workflow = (id: string, graph: unknown[]) => ({ id, inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, graph });

/**
 * Faults (issue 11, part 4): `wrangler dev` killed with SIGKILL, as in a crash, while a skill run
 * streams its answer, a workflow run sleeps and another workflow run's step works; then started
 * again on the same local state. The run ends (not stuck in `working`) with its event log whole,
 * and both workflow runs finish with each step recorded once.
 */
describe('a crash of wrangler dev and a restart on the same state', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-e2e-restart-'));
  let service: RunningService;
  let skillRun: string;
  let napRun: string;
  let napLaunchedAt: number;
  let stepRun: string;
  let stepExecution: string;
  /** A person signed up on this service (with its WELCOME_CREDITS): their session token. */
  let token: string;

  const api = async (path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') => {
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  const openStream = async (executionId: string) => {
    const { sseUrl } = (await api(`/api/v1/executions/${executionId}/stream-token`)).body as { sseUrl: string };
    const url = new URL(sseUrl);
    return fetch(`${service.base}${url.pathname}${url.search}`);
  };

  /** The execution's whole event log: the replay of a fresh stream URL, which ends after session.status_idle. */
  const eventLog = async (executionId: string) => {
    const res = await openStream(executionId);
    expect(res.status).toBe(200);
    return sseEvents<{ type: string; payload: any }>(await res.text());
  };

  /** Reads the live stream until the answer has streamed a few words: the run is mid-answer. */
  const untilAnswering = async (executionId: string) => {
    const stream = sseReader((await openStream(executionId)).body!);
    await stream.until((messages) => jsonEvents(messages).filter((e) => e.type === 'agent.message').length >= 5);
    await stream.cancel();
  };

  /** Polls once a second (the key's rate limit is 100 requests a minute); on timeout, `state` says where things stood. */
  const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, state?: () => Promise<unknown>): Promise<T> => {
    const until = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < until) {
      const value = await probe().catch((error: unknown) => void (last = error));
      if (value !== undefined) return value;
      await pause(1_000);
    }
    throw new Error(`${what} did not happen in ${timeoutMs} ms (last error: ${String(last)}; state: ${JSON.stringify(await state?.())})`);
  };

  beforeAll(
    async () => {
      service = await startPrepared(READY_MS, { stateDir, args: ARGS });
      ({ token } = await newAccount(service.base, 'Restart'));
      expect((await api('/api/v1/skills/e2e-restart', SKILL, 'PUT')).status).toBeLessThan(300);
      const installs = [
        workflow('e2e-nap', [
          mapping('before', { n: { value: 1 } }),
          { type: 'sleep', id: 'nap', duration: SLEEP_MS },
          mapping('after', { woke: { value: true } }),
        ]),
        workflow('e2e-step', [
          mapping('shape', { slug: { value: 'e2e-restart' }, input: { value: STEP_INPUT } }),
          { type: 'tool', id: 'run', toolId: 'execute-skill' },
          mapping('after', { summary: { template: '${stepResults.run.text}' } }),
        ]),
      ];
      for (const def of installs) expect((await api(`/api/v1/workflows/${def.id}/install`, def)).status).toBe(201);

      napLaunchedAt = Date.now();
      napRun = (await api('/api/v1/workflows/e2e-nap/launch', { inputs: {} })).body.runId;
      stepRun = (await api('/api/v1/workflows/e2e-step/launch', { inputs: {} })).body.runId;
      const run = await api('/api/v1/skills/e2e-restart/run', { input: 'Ship the release on Friday. Tell Ana and Bo. Check the docs first.' });
      expect(run.status).toBe(200);
      skillRun = run.body.executionId;

      stepExecution = await waitFor(
        "the workflow step's execution",
        async () =>
          (await api('/api/v1/executions?limit=10')).body.items.find((e: { inputText: string }) => e.inputText === STEP_INPUT)?.executionId as
            string | undefined,
        30_000,
        async () => [await api(`/api/v1/workflows/runs/${stepRun}`), await api('/api/v1/executions?limit=10')],
      );
      await Promise.all([untilAnswering(skillRun), untilAnswering(stepExecution)]);
      const nap = (await api(`/api/v1/workflows/runs/${napRun}`)).body;
      expect(nap.run.snapshot.value).toEqual({ nap: 'running' });
      for (const id of [skillRun, stepExecution]) expect((await api(`/api/v1/executions/${id}/status`)).body.status).toBe('working');
      expect((await api(`/api/v1/workflows/runs/${stepRun}`)).body.run.snapshot.value).toEqual({ run: 'running' });

      await service.stop('SIGKILL');
      service = await startService(READY_MS, { stateDir, args: ARGS, restart: true });
    },
    2 * READY_MS + 60_000,
  );

  afterAll(async () => {
    await service?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('ends the skill run that was working, its event log readable and closed with session.status_idle', async () => {
    const status = await waitFor(
      'the run ending',
      async () => {
        const res = await api(`/api/v1/executions/${skillRun}/status`);
        return res.body.status === 'working' ? undefined : res.body;
      },
      60_000,
    );
    expect(status.status).toBe('completed');
    // The answer once: the text the cut-off request had streamed is superseded by the resumed one.
    expect(status.outputBlocks).toHaveLength(1);
    expect(status.outputBlocks[0].text).toMatch(/^## E2E Restart\n/);
    expect(status.outputBlocks[0].text.split('## E2E Restart')).toHaveLength(2);
    const events = await eventLog(skillRun);
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'user.message')).toHaveLength(1);
    expect(events.some((e) => e.type === 'agent.info' && /restart/.test(e.payload.message ?? ''))).toBe(true);
    expect(types.slice(-2)).toEqual(['execution.result', 'session.status_idle']);
    expect(events.at(-1)!.payload).toEqual({ stop_reason: { type: 'end_turn' } });
    // notes.md was written once, before the crash: the resumed turn goes on from its checkpoint.
    expect(types.filter((t) => t === 'agent.tool_use')).toHaveLength(1);
  });

  /** The run's detail once it has left running and suspended (within a minute). */
  const finished = (runId: string) =>
    waitFor(
      `run ${runId} finishing`,
      async () => {
        const res = await api(`/api/v1/workflows/runs/${runId}`);
        return ['running', 'suspended'].includes(res.body.run.status) ? undefined : res.body;
      },
      60_000,
    );

  it('finishes the workflow run that was asleep, after its sleep, each step once', async () => {
    const detail = await finished(napRun);
    expect(detail.run.status).toBe('success');
    expect(Date.now() - napLaunchedAt).toBeGreaterThanOrEqual(SLEEP_MS);
    expect(detail.steps).toEqual({
      before: { status: 'success', output: { n: 1 } },
      nap: { status: 'success', output: { n: 1 } },
      after: { status: 'success', output: { woke: true } },
    });
    expect(detail.run.snapshot.result).toEqual({ woke: true });
  });

  it('finishes the workflow run whose step was working, each step once', async () => {
    const detail = await finished(stepRun);
    expect(detail.run.status).toBe('success');
    expect(Object.keys(detail.steps).sort()).toEqual(['after', 'run', 'shape']);
    // The step's execution is the one that was cut off, resumed and completed: not a second run.
    expect(detail.steps.run).toEqual({
      status: 'success',
      output: { executionId: stepExecution, status: 'completed', text: expect.stringMatching(/^## E2E Restart\n/) },
    });
    expect(detail.steps.run.output.text.split('## E2E Restart')).toHaveLength(2);
    expect(detail.run.snapshot.result).toEqual({ summary: detail.steps.run.output.text });
    const history = (await api('/api/v1/executions?limit=10')).body.items as { executionId: string; inputText: string; status: string }[];
    expect(history.filter((e) => e.inputText === STEP_INPUT)).toEqual([expect.objectContaining({ executionId: stepExecution, status: 'completed' })]);
  });
});
