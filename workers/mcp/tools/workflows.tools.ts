import { z } from 'zod';
import { cancelRun, getRun, launchWorkflow, listRuns, resumeRun, RunRecord } from '../../services/workflows';
import { followWorkflowRun } from '../progress';
import { READ_ONLY } from '../../capabilities/capability';
import { defineTool, ToolFailure } from '../tool';

const runId = z.string().min(1).max(100).describe('The workflow run id');

export const workflowTools = [
  defineTool({
    name: 'start-workflow',
    title: 'Start a workflow',
    description:
      'Launches an installed workflow (by slug, namespaced runtime id or declared id) with inputs checked against its inputSchema; answers {runId, workflowId, status: "started"} at once. Follow it with get-workflow-run. With a progressToken the answer waits until the run stops running (done, failed or waiting for input), sending progress per step meanwhile.',
    route: 'POST /api/v1/workflows/:id/launch',
    input: {
      workflowId: z.string().min(1).max(200).describe('The workflow’s slug, runtime id or declared id'),
      inputs: z.record(z.string(), z.unknown()).optional().describe('The run’s input data (initData), validated against the workflow’s inputSchema'),
    },
    output: z.object({ runId: z.string(), workflowId: z.string(), status: z.literal('started'), conversationId: z.string().optional() }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    run: (ctx, args) => launchWorkflow(ctx.db, ctx.env, ctx.actor, args.workflowId, args.inputs ?? {}),
    follow: (ctx, started: { runId: string }, report) => followWorkflowRun(ctx, started.runId, report),
  }),
  defineTool({
    name: 'list-workflow-runs',
    title: 'List workflow runs',
    description: 'Lists this workspace’s workflow runs, newest first, with status (running, suspended, success, failed, canceled) and snapshot.',
    route: 'GET /api/v1/workflows/runs',
    input: { limit: z.number().int().min(1).max(200).optional().describe('How many (default 50)') },
    output: z.object({ runs: z.array(RunRecord) }),
    annotations: READ_ONLY,
    run: (ctx, args) => listRuns(ctx.db, ctx.actor, args.limit ?? 50),
  }),
  defineTool({
    name: 'get-workflow-run',
    title: 'Get a workflow run',
    description: 'Shows one workflow run and the status and output of each of its steps; a suspended run names the step waiting for human input.',
    route: 'GET /api/v1/workflows/runs/:runId',
    input: { runId },
    output: z.object({ run: RunRecord, steps: z.record(z.string(), z.object({ status: z.string(), output: z.unknown() })) }),
    annotations: READ_ONLY,
    run: (ctx, { runId }) => getRun(ctx.db, ctx.actor, runId),
  }),
  defineTool({
    name: 'cancel-workflow-run',
    title: 'Cancel a workflow run',
    description: 'Cancels a run that has not finished, stopping pending sleeps and in-flight skill executions; a finished run is left as it is.',
    route: 'POST /api/v1/workflows/runs/:runId/cancel',
    input: { runId },
    output: z.object({ success: z.literal(true), runId: z.string() }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: (ctx, { runId }) => cancelRun(ctx.db, ctx.env, ctx.actor, runId),
  }),
  defineTool({
    name: 'resume-workflow-run',
    title: 'Resume a workflow run',
    description:
      'Resumes a run suspended for human input: resumeData becomes the suspended step’s output. Fails with NOT_SUSPENDED, STEP_MISMATCH, RESUME_IN_PROGRESS or NO_SUSPEND_FRAME, or {cancelled: true, error} for a finished run.',
    route: 'POST /api/v1/workflows/runs/:runId/resume',
    input: {
      runId,
      resumeData: z.unknown().optional().describe('The human input: what the suspended step outputs'),
      stepId: z.string().min(1).max(64).optional().describe('The suspended step’s id, when the run waits at more than one'),
    },
    output: z.object({ runId: z.string(), status: z.literal('running') }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: async (ctx, args) => {
      const answer = await resumeRun(ctx.db, ctx.env, ctx.actor, args.runId, { resumeData: args.resumeData, stepId: args.stepId });
      if (answer.status !== 200) throw new ToolFailure(answer.body);
      return answer.body;
    },
  }),
];
