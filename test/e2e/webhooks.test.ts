import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningService, until } from './helpers';
import { startPrepared } from './prepared';

/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;
/**
 * Loopback receivers need LOCAL_DEVELOPMENT; a 1-second retry base makes the schedule 1, 4,
 * 16… seconds instead of 5, 20, 80… (docs/webhooks.md).
 */
const ARGS = ['--var', 'LOCAL_DEVELOPMENT:true', '--var', 'WEBHOOK_RETRY_BASE_SECONDS:1'];

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  answered: number;
}

/**
 * A local HTTP receiver in the test process: it records every request; `/fail3` answers 500 to
 * its first three requests, then 200 (a receiver that is down and recovers).
 */
function receiver() {
  const requests: Received[] = [];
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    const earlier = requests.filter((r) => r.path === path).length;
    const answered = path === '/fail3' && earlier < 3 ? 500 : 200;
    requests.push({ path, headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), answered });
    res.writeHead(answered).end();
  });
  return { server, requests };
}

describe('webhooks against wrangler dev', () => {
  let service: RunningService;
  const { server, requests } = receiver();
  let origin = '';
  beforeAll(async () => {
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${port}`;
    service = await startPrepared(READY_MS, { args: ARGS });
  });
  afterAll(async () => {
    await service?.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  const api = async (path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') => {
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('delivers signed execution.completed and workflow_run.succeeded, and retries a failing receiver until it recovers', async () => {
    const ok = await api('/api/v1/webhooks', { url: `${origin}/ok`, events: ['execution.completed', 'workflow_run.succeeded'] });
    expect(ok.status).toBe(201);
    const failing = await api('/api/v1/webhooks', { url: `${origin}/fail3`, events: ['execution.completed'] });
    expect(failing.status).toBe(201);

    await api(
      '/api/v1/skills/e2e-hooks',
      { name: 'E2E Hooks', description: 'Summarises.', category: 'productivity', prompt: '# E2E Hooks\nSummarise.' },
      'PUT',
    );
    const run = await api('/api/v1/skills/e2e-hooks/run', { input: 'Ship it.' });
    expect(run.status).toBe(200);
    const executionId = run.body.executionId as string;

    const workflow = {
      id: 'e2e-hooks-flow',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      graph: [{ type: 'mapping', id: 'echo', mapConfig: JSON.stringify({ name: { initData: true, path: 'name' } }) }],
    };
    expect((await api('/api/v1/workflows/e2e-hooks-flow/install', workflow)).status).toBe(201);
    const launched = await api('/api/v1/workflows/e2e-hooks-flow/launch', { inputs: { name: 'a' } });
    expect(launched.status).toBe(201);
    const runId = launched.body.runId as string;

    const verified = (r: Received, secret: string) => new Webhook(secret).verify(r.body, r.headers) as { type: string; data: Record<string, unknown> };
    const completed = await until('execution.completed at /ok', () =>
      requests.find((r) => r.path === '/ok' && verified(r, ok.body.secret).type === 'execution.completed'),
    );
    expect(verified(completed, ok.body.secret)).toMatchObject({ type: 'execution.completed', data: { executionId, status: 'completed' } });
    const succeeded = await until('workflow_run.succeeded at /ok', () =>
      requests.find((r) => r.path === '/ok' && verified(r, ok.body.secret).type === 'workflow_run.succeeded'),
    );
    expect(verified(succeeded, ok.body.secret)).toMatchObject({ data: { runId, status: 'success' } });

    // The failing receiver: three 500s, then the same event (same webhook-id) once it answers 200.
    const recovered = await until('the fourth request at /fail3', () => requests.filter((r) => r.path === '/fail3')[3]);
    const atFail3 = requests.filter((r) => r.path === '/fail3');
    expect(atFail3.map((r) => r.answered)).toEqual([500, 500, 500, 200]);
    expect(new Set(atFail3.map((r) => r.headers['webhook-id']))).toEqual(new Set([completed.headers['webhook-id']]));
    expect(verified(recovered, failing.body.secret)).toMatchObject({ type: 'execution.completed', data: { executionId } });

    const log = await until('the delivery log of the fourth attempt', async () => {
      const page = await api(`/api/v1/webhooks/${failing.body.id}/deliveries`);
      return page.body.data[0]?.status === 'succeeded' ? page.body.data : undefined;
    });
    expect(log).toHaveLength(1);
    expect(log[0].attempts.map((a: { attempt: number; statusCode: number }) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
      [4, 200],
    ]);
    // Each wait as long as the schedule says, 1, 4 and 16 seconds at this base (less the moment between queuing the next attempt and logging this one).
    const times: number[] = log[0].attempts.map((a: { at: string }) => Date.parse(a.at));
    expect(times.slice(1).map((t, i) => t - times[i]! >= [1000, 4000, 16000][i]! - 500)).toEqual([true, true, true]);
    await new Promise((r) => setTimeout(r, 2000));
    expect(requests.filter((r) => r.path === '/fail3')).toHaveLength(4);
  });
});
