import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService, signedDelivery } from './helpers';
import { startPrepared } from './prepared';

/** Generous: two cores shared with other work can make a start slow. */
const READY_MS = 150_000;

describe('workflow triggers against wrangler dev', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startPrepared(READY_MS);
  });
  afterAll(async () => {
    await service?.stop();
  });

  const api = async (path: string, body?: unknown) => {
    const res = await fetch(`${service.base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  const triageRuns = async () =>
    ((await api('/api/v1/workflows/runs?limit=200')).body.runs as { runId: string; workflowId: string }[]).filter((r) => r.workflowId === 'triage');

  it('a signed POST to the trigger URL starts the run; the replayed delivery starts nothing new; a bad signature is 401', async () => {
    const triage = JSON.parse(readFileSync('examples/workflows/triage.json', 'utf8'));
    expect((await api('/api/v1/workflows/triage/install', triage)).status).toBe(201);
    const created = await api('/api/v1/workflows/triage/triggers', { name: 'issue tracker' });
    expect(created.status).toBe(201);
    const { url, secret } = created.body as { url: string; secret: string };
    expect(url).toBe(`${service.base}/hooks/workflows/${created.body.id}`);

    const input = { title: 'Login fails', priority: 4, labels: ['bug'] };
    const started = await signedDelivery(url, secret, 'msg_e2e_1', input);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const { runId } = started.body as { runId: string };
    let run: any;
    for (let i = 0; i < 100; i++) {
      run = (await api(`/api/v1/workflows/runs/${runId}`)).body.run;
      if (run?.status === 'success') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(run.status).toBe('success');
    expect(run.snapshot.context.input).toEqual(input);
    expect(run.snapshot.result).toEqual({ urgent: { title: 'Login fails' }, bug: { title: 'Login fails' }, unassigned: { title: 'Login fails' } });

    const replayed = await signedDelivery(url, secret, 'msg_e2e_1', input);
    expect(replayed.status).toBe(202);
    expect(replayed.body.runId).toBe(runId);

    const forged = await signedDelivery(url, `whsec_${Buffer.from('not the secret, 32 bytes long!!!').toString('base64')}`, 'msg_e2e_2', input);
    expect(forged.status).toBe(401);
    expect(forged.body.error.code).toBe('UNAUTHORIZED');
    expect((await triageRuns()).map((r) => r.runId)).toEqual([runId]);
  });

  it('a GitHub webhook delivery of an opened pull request starts the declaring workflow with the pull request as input', async () => {
    const review = JSON.parse(readFileSync('examples/workflows/review-pull-request.json', 'utf8'));
    expect((await api('/api/v1/workflows/review-pull-request/install', review)).status).toBe(201);
    const created = await api('/api/v1/workflows/review-pull-request/triggers', { source: 'github', repository: 'octo/hello' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { url, secret } = created.body as { url: string; secret: string };

    /** As GitHub's webhook delivery sends an event: X-Hub-Signature-256 over the body, keyed with the secret. */
    const github = async (event: string, delivery: string, payload: unknown) => {
      const body = JSON.stringify(payload);
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': event,
          'x-github-delivery': delivery,
          'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
        },
        body,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const repository = { full_name: 'octo/hello' };
    expect((await github('ping', 'gh-e2e-0', { zen: 'Design for failure.', repository })).body.status).toBe('pong');
    const opened = {
      action: 'opened',
      number: 12,
      pull_request: { number: 12, title: 'Add dark mode', html_url: 'https://github.com/octo/hello/pull/12', head: { ref: 'dark', sha: 'c'.repeat(40) } },
      repository,
      sender: { login: 'ana' },
    };
    const started = await github('pull_request', 'gh-e2e-1', opened);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    let run: any;
    for (let i = 0; i < 100; i++) {
      run = (await api(`/api/v1/workflows/runs/${started.body.runId}`)).body.run;
      if (run?.status === 'suspended') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(run.status).toBe('suspended');
    expect(run.snapshot.context.input).toMatchObject({
      event: 'pull_request',
      action: 'opened',
      repository: 'octo/hello',
      pullRequest: { number: 12, title: 'Add dark mode' },
    });
    expect((await github('pull_request', 'gh-e2e-1', opened)).body.runId).toBe(started.body.runId);
    expect((await github('pull_request', 'gh-e2e-2', { ...opened, action: 'closed' })).body.status).toBe('ignored');
  });
});
