import { z } from 'zod';
import type { WorkflowRunRow } from '../../schema/shard/workflows';
import type { Principal } from '../auth/principal';
import type { ShardDb, Env } from '../env';
import { notFound } from '../errors';
import { toIso } from '../lib/clock';
import { type OwnStream, sseStream } from '../lib/sse';
import type { RunEvent } from '../../durable-objects/WorkflowRun';
import { CLOSING, followRunRecord } from './run-follow';
import { findRun, launchWorkflow, resumeRun } from './workflow-runs';

const encoder = new TextEncoder();

export const snapshotFrame = (row: WorkflowRunRow) => ({
  type: 'workflow-snapshot' as const,
  runId: row.runId,
  workflowId: row.workflowId,
  status: row.status,
  updatedAt: toIso(row.updatedAt),
  snapshot: JSON.parse(row.snapshot) as Record<string, unknown>,
});

/** What a snapshot frame shows; a new record version that shows the same (a step's execution polled) is not sent again. */
const visible = (row: WorkflowRunRow) => `${row.status}\n${row.snapshot}`;

/** A change-log frame: the event's seq is its SSE id, so Last-Event-ID (or `lastSeq`) resumes after it. */
const changeFrame = (runId: string, event: RunEvent) =>
  `id: ${event.seq}\ndata: ${JSON.stringify({ type: event.type, runId, seq: event.seq, at: toIso(event.at), ...(JSON.parse(event.payload) as Record<string, unknown>) })}\n\n`;

export const RunEventsQuery = z.object({
  changes: z
    .enum(['true', 'false'])
    .optional()
    .describe('true adds the run’s change log (step started and finished, suspended, resumed, finished) between the workflow-snapshot frames; default false'),
  lastSeq: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('With changes=true: replay the change log after this seq (as Last-Event-ID does)'),
});

/**
 * GET /workflows/runs/:runId/events: the current `workflow-snapshot` on connect, then one
 * `workflow-snapshot` per change to what it shows (spec 4.8: every frame is a snapshot), the
 * record read once per change notice of the run's object (run-follow.ts); a `:` comment for a
 * read that finds the run gone. `changes` is null for that stream; given, the
 * run's change log after `changes.lastSeq` (step started, the execution a step started, step
 * finished with a summary, suspended, resumed, finished) comes too, each change followed by a
 * snapshot when what it shows changed.
 */
export async function runEvents(
  db: ShardDb,
  env: Env,
  principal: Principal,
  runId: string,
  changes: { lastSeq: number } | null,
  signal: AbortSignal,
): Promise<OwnStream> {
  if (!(await findRun(db, principal, runId))) throw notFound('Workflow run');
  const { writer, response } = sseStream();
  const abort = new AbortController();
  signal.addEventListener('abort', () => abort.abort(), { once: true });
  const write = (text: string) => writer.write(encoder.encode(text)).catch(() => abort.abort());
  const run = env.WORKFLOW_RUN.getByName(runId);
  let seq = changes?.lastSeq ?? 0;
  let shown: string | null = null;
  const changeLog = async () => {
    // The log is read after the record, so it holds every change the record shows.
    for (let page = await run.events(seq); page.length; page = await run.events(seq)) {
      for (const event of page) await write(changeFrame(runId, event));
      seq = page.at(-1)!.seq;
    }
  };
  const snapshot = async (row: WorkflowRunRow) => {
    if (visible(row) === shown) return;
    shown = visible(row);
    await write(`data: ${JSON.stringify(snapshotFrame(row))}\n\n`);
  };
  const onRow = async (row: WorkflowRunRow) => {
    // The current snapshot comes first; the last frame before the server closes is a snapshot too.
    if (changes) {
      if (shown === null && !CLOSING.has(row.status)) await snapshot(row);
      await changeLog();
    }
    await snapshot(row);
  };
  const ended = followRunRecord(env, db, principal, runId, { signal: abort.signal, onRow, onMissing: () => write(': heartbeat\n\n') })
    .catch((error) => console.error(JSON.stringify({ level: 'error', runId, error: String(error) })))
    .finally(() => writer.close().catch(() => undefined));
  return { response, ended };
}

export const StreamBody = z.union([
  z.object({ inputData: z.record(z.string(), z.unknown()) }),
  z.object({ runId: z.string().min(1).max(100), step: z.string().min(1).max(64).optional(), resumeData: z.unknown().optional() }),
]);
export type StreamBody = z.infer<typeof StreamBody>;

/**
 * POST /workflows/:id/stream: launches (`{inputData}`) or resumes (`{runId, step, resumeData}`)
 * and answers an AI SDK UI message stream (SSE of `{type: ...}` parts, header
 * `x-vercel-ai-ui-message-stream: v1`): `start`, one `data-workflow` part per snapshot, a text
 * part saying how the run ended, `finish`, then `[DONE]`. Launch and resume errors answer
 * before the stream starts, in their usual shapes.
 */
export async function streamWorkflow(
  db: ShardDb,
  env: Env,
  principal: Principal,
  id: string,
  body: StreamBody,
  signal: AbortSignal,
): Promise<Response | OwnStream> {
  let runId: string;
  if ('inputData' in body) runId = (await launchWorkflow(db, env, principal, { workflowId: id, inputs: body.inputData })).runId;
  else {
    const answer = await resumeRun(db, env, principal, body.runId, { stepId: body.step, resumeData: body.resumeData });
    if (answer.status !== 200) return Response.json(answer.body, { status: answer.status });
    runId = body.runId;
  }
  const { writer, response } = sseStream({ 'x-vercel-ai-ui-message-stream': 'v1' });
  const abort = new AbortController();
  signal.addEventListener('abort', () => abort.abort(), { once: true });
  const part = (value: unknown) => writer.write(encoder.encode(`data: ${JSON.stringify(value)}\n\n`)).catch(() => abort.abort());
  const messageId = `wf-${runId}`;
  let last: WorkflowRunRow | null = null;
  const ended = (async () => {
    await part({ type: 'start', messageId });
    await followRunRecord(env, db, principal, runId, {
      signal: abort.signal,
      onRow: async (row) => {
        const repeated = last !== null && visible(last) === visible(row);
        last = row;
        if (!repeated) await part({ type: 'data-workflow', id: runId, data: snapshotFrame(row) });
      },
      onMissing: async () => undefined,
    });
    const ended = last as WorkflowRunRow | null;
    if (ended) {
      const text = `Workflow ${ended.workflowId} run ${runId}: ${ended.status}`;
      await part({ type: 'text-start', id: `${messageId}-status` });
      await part({ type: 'text-delta', id: `${messageId}-status`, delta: text });
      await part({ type: 'text-end', id: `${messageId}-status` });
    }
    await part({ type: 'finish' });
    await writer.write(encoder.encode('data: [DONE]\n\n')).catch(() => undefined);
  })()
    .catch((error) => console.error(JSON.stringify({ level: 'error', runId, error: String(error) })))
    .finally(() => writer.close().catch(() => undefined));
  return { response, ended };
}
