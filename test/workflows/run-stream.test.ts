import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { BASE, call, expectError, signUp, type TestUser } from '../helpers/api';
import { sseEvents } from '../helpers/sse';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

/** Following a workflow run: its skill runs are recorded as workflow runs, and its stream says what changed. */

const SKILL = {
  name: 'Meeting Summarizer',
  description: 'Summarises notes.',
  category: 'productivity',
  prompt: '# Meeting Summarizer\nYou summarise meeting notes.',
};

const graph = [
  mapping('prep', { slug: { value: 'meeting-summarizer' }, input: { template: 'Notes: ${initData.notes}' } }),
  { type: 'tool', id: 'summarize', toolId: 'execute-skill' },
  { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Ship the summary?' } } },
  mapping('done', { shipped: { step: 'approve', path: 'ok' } }),
];

async function setup() {
  const user = await signUp();
  await call('/api/v1/skills/meeting-summarizer', { method: 'PUT', token: user.token, body: SKILL });
  await install(user, 'digest', definition('digest', graph));
  return user;
}

type Frame = { id: number | null; type: string; [key: string]: any };

/** Reads the run stream until the server closes it; `query` as the client sends it (`?changes=true` for the change log). */
async function readStream(user: TestUser, runId: string, query = '', headers: Record<string, string> = {}): Promise<Frame[]> {
  const res = await exports.default.fetch(`${BASE}/api/v1/workflows/runs/${runId}/events${query}`, { headers: { 'x-auth-token': user.token, ...headers } });
  expect(res.status).toBe(200);
  return sseEvents<Frame>(await res.text());
}

const changes = (frames: Frame[]) => frames.filter((f) => f.type !== 'workflow-snapshot');
const brief = (f: Frame) => [f.type, f.stepId ?? f.status ?? null];

describe('a skill step', () => {
  it('is recorded with source and interface workflow, so channels=workflow finds it', async () => {
    const user = await setup();
    const runId = await launch(user, 'digest', { notes: 'We ship Friday.' });
    const { steps } = await waitForRun(user, runId, ['suspended']);
    const executionId = steps.summarize.output.executionId as string;
    const found = (await call('/api/v1/executions?channels=workflow', { token: user.token })).body.items;
    expect(found.map((i: { executionId: string }) => i.executionId)).toEqual([executionId]);
    expect(found[0]).toMatchObject({ source: 'workflow', interface: 'workflow', skillSlug: 'meeting-summarizer' });
    expect((await call('/api/v1/executions?channels=api', { token: user.token })).body.items).toEqual([]);
  });
});

describe('the run stream', () => {
  it('sends only workflow-snapshot frames, each with its snapshot, unless the client asks for changes', async () => {
    const user = await setup();
    const runId = await launch(user, 'digest', { notes: 'We ship Friday.' });
    const onlySnapshots = (frames: Frame[]) => {
      expect(frames.length).toBeGreaterThan(0);
      for (const frame of frames) {
        expect(frame).toMatchObject({
          type: 'workflow-snapshot',
          runId,
          workflowId: expect.any(String),
          status: expect.any(String),
          updatedAt: expect.any(String),
          id: null,
        });
        expect(frame.snapshot).toEqual(expect.any(Object));
      }
    };
    const first = await readStream(user, runId);
    onlySnapshots(first);
    expect(first.at(-1)).toMatchObject({ status: 'suspended' });
    // A position is about the change log: without changes=true it changes nothing.
    onlySnapshots(await readStream(user, runId, '?lastSeq=0', { 'last-event-id': '1' }));
    onlySnapshots(await readStream(user, runId, '?changes=false'));
    expect((await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { ok: true } } })).status).toBe(200);
    const second = await readStream(user, runId);
    onlySnapshots(second);
    expect(second.at(-1)).toMatchObject({ status: 'success', snapshot: { result: { shipped: true } } });
    expectError(await call(`/api/v1/workflows/runs/${runId}/events?changes=yes`, { token: user.token }), 400, 'INVALID_INPUT');
  });

  it('with changes=true says what changed, names the execution a skill step started, and never repeats a snapshot', async () => {
    const user = await setup();
    const runId = await launch(user, 'digest', { notes: 'We ship Friday.' });
    const first = await readStream(user, runId, '?changes=true');
    expect(first[0]).toMatchObject({ type: 'workflow-snapshot', runId, id: null });
    expect(first.at(-1)).toMatchObject({ type: 'workflow-snapshot', status: 'suspended' });
    expect(changes(first).map(brief)).toEqual([
      ['workflow-step-started', 'prep'],
      ['workflow-step-finished', 'prep'],
      ['workflow-step-started', 'summarize'],
      ['workflow-step-execution', 'summarize'],
      ['workflow-step-finished', 'summarize'],
      ['workflow-step-started', 'approve'],
      ['workflow-suspended', null],
    ]);
    const seqs = changes(first).map((f) => f.id!);
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    expect(changes(first).every((f) => f.seq === f.id && f.runId === runId && typeof f.at === 'string')).toBe(true);

    const execution = changes(first).find((f) => f.type === 'workflow-step-execution')!;
    expect(execution).toMatchObject({
      executionId: expect.stringMatching(/^exec_\d+$/),
      streamTokenPath: `/api/v1/executions/${execution.executionId}/stream-token`,
    });
    // The path is one a client can follow to the execution's own stream.
    expect((await call(execution.streamTokenPath, { token: user.token })).body.sseUrl).toContain(`/streams/executions/${execution.executionId}`);
    const finished = changes(first).find((f) => f.type === 'workflow-step-finished' && f.stepId === 'summarize')!;
    expect(finished.status).toBe('success');
    expect(finished.summary).toContain(execution.executionId);
    expect(finished.summary.length).toBeLessThanOrEqual(280);
    expect(changes(first).at(-1)).toMatchObject({ steps: [{ stepId: 'approve', prompt: 'Ship the summary?' }] });

    const snapshots = first.filter((f) => f.type === 'workflow-snapshot').map((f) => JSON.stringify([f.status, f.snapshot]));
    for (let i = 1; i < snapshots.length; i++) expect(snapshots[i]).not.toBe(snapshots[i - 1]);

    // After the resume, the stream picks up after the last change the client saw (Last-Event-ID).
    expect((await call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { ok: true } } })).status).toBe(200);
    const second = await readStream(user, runId, '?changes=true', { 'last-event-id': String(seqs.at(-1)) });
    expect(changes(second).map(brief)).toEqual([
      ['workflow-resumed', 'approve'],
      ['workflow-step-finished', 'approve'],
      ['workflow-step-started', 'done'],
      ['workflow-step-finished', 'done'],
      ['workflow-finished', 'success'],
    ]);
    expect(changes(second).at(-1)!.summary).toBe(JSON.stringify({ shipped: true }));
    expect(second.at(-1)).toMatchObject({ type: 'workflow-snapshot', status: 'success', snapshot: { result: { shipped: true } } });

    // Without a position the whole log replays, and lastSeq in the query works like the header.
    expect(changes(await readStream(user, runId, '?changes=true'))).toEqual([...changes(first), ...changes(second)]);
    expect(changes(await readStream(user, runId, `?changes=true&lastSeq=${seqs.at(-1)}`))).toEqual(changes(second));
  });

  it('reports a failed step and the failed run', async () => {
    const user = await signUp();
    await install(
      user,
      'broken',
      definition('broken', [
        mapping('prep', { slug: { value: 'not-installed-anywhere' }, input: { value: 'x' } }),
        { type: 'tool', id: 'summarize', toolId: 'execute-skill' },
      ]),
    );
    const runId = await launch(user, 'broken');
    const frames = await readStream(user, runId, '?changes=true');
    const failed = changes(frames).filter((f) => f.status === 'failed');
    expect(failed.map(brief)).toEqual([
      ['workflow-step-finished', 'summarize'],
      ['workflow-finished', 'failed'],
    ]);
    expect(failed[0]!.error).toContain('NOT_FOUND');
    expect(frames.at(-1)).toMatchObject({ type: 'workflow-snapshot', status: 'failed' });
  });
});
