import { getExecutionStatus } from '../services/executions';
import { getRun } from '../services/workflow-runs';
import type { CapabilityContext, ProgressReport } from './capability';
import { sleep } from '../lib/clock';

/** How often a followed run is read again, and how long a call follows it at most. */
const POLL_MS = 250;
const FOLLOW_LIMIT_MS = 10 * 60_000;

/** Reads `step` until it says the work ended (or the limit passed). */
async function pollUntilEnded(step: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + FOLLOW_LIMIT_MS;
  while (!(await step()) && Date.now() < deadline) await sleep(POLL_MS);
}

/**
 * Follows a skill run through the execution service's own status: each poll sends the text
 * streamed since the last as a log message, and a progress notification counting its characters.
 */
export async function followExecution(ctx: CapabilityContext, executionId: string, report: ProgressReport): Promise<void> {
  let sent = 0;
  let progress = 0;
  await pollUntilEnded(async () => {
    const status = await getExecutionStatus(ctx.db, ctx.env, ctx.actor, executionId);
    const text = status.outputBlocks.map((b) => b.text).join('\n\n');
    const ended = status.status !== 'working';
    const news = text.length > sent;
    if (news) {
      await report.log(text.slice(sent));
      sent = text.length;
    }
    // Progress must grow: one step per poll that brought news, and one at the end.
    if (news || ended) await report.progress(++progress, ended ? `Run ${status.status}` : `Working: ${sent} characters so far`);
    return ended;
  });
}

/** Follows a workflow run: a progress notification each time a step ends, until the run stops running. */
export async function followWorkflowRun(ctx: CapabilityContext, runId: string, report: ProgressReport): Promise<void> {
  const reported = new Set<string>();
  await pollUntilEnded(async () => {
    const { run, steps } = await getRun(ctx.db, ctx.actor, runId);
    for (const [id, step] of Object.entries(steps)) {
      if (step.status === 'running' || reported.has(id)) continue;
      reported.add(id);
      await report.log(`Step ${id}: ${step.status}`);
      await report.progress(reported.size, `Step ${id} ${step.status}`);
    }
    const ended = run.status !== 'running';
    if (ended) await report.progress(reported.size + 1, `Run ${run.status}`);
    return ended;
  });
}
