import { followExecutionStream, type StreamedEvent } from '../services/execution-stream';
import { getExecutionStatus, outputBlocks } from '../services/executions';
import { notFound } from '../errors';
import { CLOSING, followRunRecord } from '../services/run-follow';
import { runSteps } from '../services/workflow-runs';
import type { CapabilityContext, ProgressReport } from './capability';
import { sleep } from '../lib/clock';

/** How often a polled run is read again (and a followed run's text sent at most), and how long a call follows it at most. */
const POLL_MS = 250;
const FOLLOW_LIMIT_MS = 10 * 60_000;

/** Aborts when the call's client has gone, or once the call has followed its run for FOLLOW_LIMIT_MS. */
const followSignal = (ctx: CapabilityContext) => AbortSignal.any([AbortSignal.timeout(FOLLOW_LIMIT_MS), ...(ctx.signal ? [ctx.signal] : [])]);

/** Reads `step` until it says the work ended (or `signal` aborted). */
async function pollUntilEnded(step: () => Promise<boolean>, signal: AbortSignal): Promise<void> {
  while (!signal.aborted && !(await step())) await sleep(POLL_MS, signal);
}

/**
 * Runs `work` when asked, at most once every `everyMs`: asking while a run waits for its turn
 * joins that run. `stop` drops a run still waiting (its caller does the work itself), and
 * settles once the one under way has run, throwing what any run threw.
 */
function throttled(work: () => Promise<void>, everyMs: number) {
  let runs = Promise.resolve();
  let waiting: AbortController | undefined;
  let ranAt = Number.NEGATIVE_INFINITY;
  return {
    ask() {
      if (waiting) return;
      const turn = (waiting = new AbortController());
      runs = runs.then(async () => {
        if (!turn.signal.aborted) await sleep(ranAt + everyMs - Date.now(), turn.signal);
        waiting = undefined;
        if (turn.signal.aborted) return;
        ranAt = Date.now();
        await work();
      });
      // A failure is thrown by `stop`, not reported now as an unhandled rejection.
      runs.catch(() => undefined);
    },
    stop() {
      waiting?.abort();
      return runs;
    },
  };
}

const textOf = (blocks: { text: string }[]) => blocks.map((b) => b.text).join('\n\n');

/**
 * Follows a skill run through its execution's event stream: the text streamed since the last
 * report goes out as a log message, with a progress notification counting its characters, at
 * most once every POLL_MS (a fast model's words share one). The execution's status (D1) is read
 * only when the stream ends: once the run ended, the rest of its text and how it ended are sent.
 * Where the stream cannot be followed, the status is polled every POLL_MS instead.
 */
export async function followExecution(ctx: CapabilityContext, executionId: string, report: ProgressReport): Promise<void> {
  let sent = 0;
  let progress = 0;
  /** Sends the text after what was sent; `status` other than working: the run ended, which the progress says. */
  const send = async (text: string, status: string) => {
    const ended = status !== 'working';
    const news = text.length > sent;
    if (news) {
      await report.log(text.slice(sent));
      sent = text.length;
    }
    // Progress must grow: one step per report that brought news, and one at the end.
    if (news || ended) await report.progress(++progress, ended ? `Run ${status}` : `Working: ${sent} characters so far`);
    return ended;
  };
  const step = async () => {
    const status = await getExecutionStatus(ctx.db, ctx.env, ctx.actor, executionId);
    return send(textOf(status.outputBlocks), status.status);
  };

  const streamed: StreamedEvent[] = [];
  const streamedNews = throttled(async () => void (await send(textOf(outputBlocks(streamed)), 'working')), POLL_MS);
  const onEvent = (event: StreamedEvent) => {
    streamed.push(event);
    // Only text brings news.
    if (event.type === 'agent.message') streamedNews.ask();
  };
  // The status read sends whatever text still waits, with how the run ended once it has.
  const ended = async () => {
    await streamedNews.stop();
    return step();
  };
  const signal = followSignal(ctx);
  const followed = await followExecutionStream(ctx.env, executionId, { afterSeq: 0, signal, onEvent, ended });
  if (!followed) {
    await streamedNews.stop();
    await pollUntilEnded(step, signal);
  }
}

/**
 * Follows a workflow run through its record's follower (read once now, then once per change
 * notice of the run's object): a progress notification each time a step ends, until the run
 * stops running (done, failed, canceled or waiting for input) or the client goes.
 */
export async function followWorkflowRun(ctx: CapabilityContext, runId: string, report: ProgressReport): Promise<void> {
  const reported = new Set<string>();
  await followRunRecord(ctx.env, ctx.db, ctx.actor, runId, {
    signal: followSignal(ctx),
    onRow: async (row) => {
      for (const [id, step] of Object.entries(await runSteps(ctx.db, runId))) {
        if (step.status === 'running' || reported.has(id)) continue;
        reported.add(id);
        await report.log(`Step ${id}: ${step.status}`);
        await report.progress(reported.size, `Step ${id} ${step.status}`);
      }
      if (CLOSING.has(row.status)) await report.progress(reported.size + 1, `Run ${row.status}`);
    },
    onMissing: () => Promise.reject(notFound('Workflow run')),
  });
}
