import { z } from 'zod';
import { followWorkflowRun } from './follow';
import { optionalJsonBody } from '../middleware/validate';
import { workflowDefinitionBody } from '../routes/openapi';
import {
  DefinitionItem,
  getWorkflow,
  installFromArtifact,
  InstallBody,
  installWorkflow,
  listDefinitions,
  listWorkflows,
  uninstallWorkflow,
  WorkflowRecord,
  WorkflowSlug,
} from '../services/workflow-definitions';
import {
  cancelRun,
  dequeueRun,
  getRun,
  Launched,
  LaunchInput,
  launchWorkflow,
  listQueue,
  QueueEntry,
  listRuns,
  ListRunsInput,
  Rerun,
  RerunBody,
  rerunRun,
  ResumeAnswer,
  ResumeBody,
  Resumed,
  resumeRun,
  RunDetails,
  RunRecord,
  RunsQuery,
} from '../services/workflow-runs';
import { deleteSchedulesOf } from '../services/workflow-schedules';
import { deleteTriggersOf } from '../services/workflow-triggers';
import { defineCapability, READ_ONLY, ToolFailure, type Area } from './capability';
import { scheduleCapabilities } from './workflow-schedules';
import { triggerCapabilities } from './workflow-triggers';

// Reading workflows and their runs needs library:read, installing library:write, running workflow:run.
const READ = { auth: 'credential', scope: 'library:read' } as const;
const WRITE = { auth: 'credential', scope: 'library:write' } as const;
const RUN = { auth: 'credential', scope: 'workflow:run' } as const;
const WRITES = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;
const REMOVES = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;

const RunId = z.object({ runId: z.string().min(1).max(100).describe('The workflow run id') });
const Slug = z.object({ slug: WorkflowSlug });
const Success = z.object({ success: z.literal(true) });
/** What a caller names when it launches: a thread is the chat turn's own, never an argument. */
const LaunchArgs = LaunchInput.omit({ threadId: true });

/** Uninstalling has two routes, `POST /:slug/uninstall` and `DELETE /:slug`. */
const uninstallCapability = (name: string, method: 'POST' | 'DELETE', path: string) =>
  defineCapability({
    name,
    title: 'Uninstall a workflow',
    description: 'Uninstalls a workflow: its record, its stored definition, its schedules and its trigger URLs; runs already started keep going.',
    access: WRITE,
    input: Slug,
    output: Success,
    annotations: REMOVES,
    http: { method, path, summary: 'Uninstall' },
    mcp: false,
    run: async (ctx, { slug }) => {
      const uninstalled = await uninstallWorkflow(ctx.db, ctx.env.BUCKET, ctx.actor, slug);
      await deleteSchedulesOf(ctx.db, ctx.env, ctx.actor.workspaceId, slug);
      await deleteTriggersOf(ctx.db, ctx.env, ctx.actor.workspaceId, slug);
      return uninstalled;
    },
  });

/** One installed workflow: the MCP resource workflow://{workflowId} reads through it too. */
export const getWorkflowCapability = defineCapability({
  name: 'get-workflow',
  title: 'Get a workflow',
  description: 'One installed workflow and its definition.',
  access: READ,
  input: Slug,
  output: WorkflowRecord,
  annotations: READ_ONLY,
  http: { method: 'GET', path: '/:slug', summary: 'One installed workflow' },
  mcp: false,
  run: (ctx, { slug }) => getWorkflow(ctx.db, ctx.actor, slug),
});

/**
 * Workflows (spec 4.8): installed definitions and their runs. Static paths come before `/:slug`
 * so `runs`, `queue` and `definitions` are never read as slugs (and, in this order, the OpenAPI
 * document lists `runs/{runId}` before `{id}/launch`, the order its linter's accepted list names). The two Server-Sent Events
 * routes are written by hand in workers/routes/workflows.ts.
 */
export const workflowsArea: Area = {
  mount: '/api/v1/workflows',
  tag: 'Workflows',
  capabilities: [
    defineCapability({
      name: 'list-workflow-runs',
      title: 'List workflow runs',
      description: 'Lists this workspace’s workflow runs, newest first, with status (running, suspended, success, failed, canceled) and snapshot.',
      access: READ,
      input: ListRunsInput,
      output: z.object({ runs: z.array(RunRecord) }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/runs', query: RunsQuery, summary: 'Runs of this workspace, newest first' },
      run: (ctx, { limit }) => listRuns(ctx.db, ctx.actor, limit),
    }),
    defineCapability({
      name: 'get-workflow-run',
      title: 'Get a workflow run',
      description: 'Shows one workflow run and the status and output of each of its steps; a suspended run names the step waiting for human input.',
      access: READ,
      input: RunId,
      output: RunDetails,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/runs/:runId', summary: 'A run and its step results' },
      run: (ctx, { runId }) => getRun(ctx.db, ctx.actor, runId),
    }),
    defineCapability({
      name: 'cancel-workflow-run',
      title: 'Cancel a workflow run',
      description: 'Cancels a run that has not finished, stopping pending sleeps and in-flight skill executions; a finished run is left as it is.',
      access: RUN,
      input: RunId,
      output: Success.extend({ runId: z.string() }),
      annotations: REMOVES,
      http: { method: 'POST', path: '/runs/:runId/cancel', summary: 'Cancel a run that has not finished' },
      run: (ctx, { runId }) => cancelRun(ctx.db, ctx.env, ctx.actor, runId),
    }),
    defineCapability({
      name: 'rerun-workflow-run',
      title: 'Rerun a workflow run from a step',
      description:
        'Starts a new run of a finished run’s workflow from one of its top-level steps: the steps before it keep the outputs the run recorded (they do not run again), that step runs on `input` if given, and every step after it runs anew. Answers the new run, linked to the original.',
      access: RUN,
      input: RunId.extend(RerunBody.shape),
      output: Rerun,
      annotations: WRITES,
      http: { method: 'POST', path: '/runs/:runId/rerun', status: 201, summary: 'Rerun a finished run from one of its steps' },
      run: (ctx, { runId, ...body }) => rerunRun(ctx.db, ctx.env, ctx.actor, runId, body),
    }),
    defineCapability({
      name: 'resume-workflow-run',
      title: 'Resume a workflow run',
      description:
        'Resumes a run suspended for human input: resumeData becomes the suspended step’s output. Fails with NOT_SUSPENDED, STEP_MISMATCH, RESUME_IN_PROGRESS or NO_SUSPEND_FRAME, or {cancelled: true, error} for a finished run.',
      access: RUN,
      input: RunId.extend(ResumeBody.shape),
      output: ResumeAnswer,
      annotations: WRITES,
      // Spec 7.3 gives resume its own error answers: the route sends them with their status, the tool as its error.
      http: {
        method: 'POST',
        path: '/runs/:runId/resume',
        before: [optionalJsonBody],
        summary: 'Resume a suspended step',
        respond: { schema: Resumed, send: (c, answer) => c.json(answer.body, answer.status) },
      },
      mcp: {
        output: Resumed,
        present: async (_ctx, answer) => {
          if (answer.status !== 200) throw new ToolFailure(answer.body);
          return answer.body;
        },
      },
      // A `human-input` step waits for this operation: the resume data becomes its output.
      workflowStep: { kind: 'input', toolId: 'human-input' },
      run: (ctx, { runId, resumeData, stepId }) => resumeRun(ctx.db, ctx.env, ctx.actor, runId, { resumeData, stepId }),
    }),
    defineCapability({
      name: 'list-workflows',
      title: 'List workflows',
      description: 'Lists the workflows installed in this workspace, by slug, with their definitions.',
      access: READ,
      input: z.object({}),
      output: z.array(WorkflowRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: 'Installed workflows' },
      mcp: false,
      run: (ctx) => listWorkflows(ctx.db, ctx.actor),
    }),
    defineCapability({
      name: 'list-workflow-definitions',
      title: 'List workflow definitions',
      description: 'The catalog of installed definitions without their graphs: ids, inputs, outputs, triggers.',
      access: READ,
      input: z.object({}),
      output: z.object({ workflows: z.array(DefinitionItem), format: z.literal('service-v1'), exportable: z.boolean(), count: z.number() }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/definitions', summary: 'The installed definitions without their graphs' },
      mcp: false,
      run: (ctx) => listDefinitions(ctx.db, ctx.actor),
    }),
    defineCapability({
      name: 'install-workflow-from-artifact',
      title: 'Install a workflow from an artifact',
      description: 'Installs the workflow.json of an artifact (the file itself or a bundle holding it) under the definition’s id.',
      access: WRITE,
      input: z.object({ artifactId: z.string().min(1).max(40).describe('The artifact id, art_<n> or <n>') }),
      output: WorkflowRecord,
      annotations: { ...WRITES, idempotentHint: true },
      http: { method: 'POST', path: '/install-from-artifact', status: 201, summary: 'Install the workflow.json of an artifact bundle' },
      mcp: false,
      run: (ctx, { artifactId }) => installFromArtifact(ctx.db, ctx.env.BUCKET, ctx.actor, artifactId),
    }),
    defineCapability({
      name: 'list-workflow-queue',
      title: 'List queued workflow runs',
      description:
        'The runs of this workspace that have not finished, oldest first: those waiting for a slot of their concurrency key (status queued), running or suspended.',
      access: READ,
      input: z.object({}),
      output: z.object({
        queued: z.array(QueueEntry),
        total: z.number(),
      }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/queue', summary: 'Runs of this workspace that have not finished' },
      mcp: false,
      run: (ctx) => listQueue(ctx.db, ctx.actor),
    }),
    defineCapability({
      name: 'dequeue-workflow-run',
      title: 'Cancel a queued workflow run',
      description: 'Cancels a run that has not finished, as cancel-workflow-run does.',
      access: RUN,
      input: RunId,
      output: Success,
      annotations: REMOVES,
      http: { method: 'DELETE', path: '/queue/:runId', summary: 'Cancel a queued run' },
      mcp: false,
      run: (ctx, { runId }) => dequeueRun(ctx.db, ctx.env, ctx.actor, runId),
    }),
    getWorkflowCapability,
    defineCapability({
      name: 'install-workflow',
      title: 'Install a workflow',
      description: 'Compiles a definition against this workspace’s agents and tools and installs it under the slug, replacing one installed there.',
      access: WRITE,
      input: Slug.extend({ definition: z.unknown().describe('The workflow definition') }),
      output: WorkflowRecord,
      annotations: { ...WRITES, idempotentHint: true },
      http: {
        method: 'POST',
        path: '/:slug/install',
        status: 201,
        before: [optionalJsonBody],
        body: InstallBody,
        requestBody: workflowDefinitionBody,
        summary: 'Compile and install a definition under this slug (overwrites)',
      },
      mcp: false,
      run: (ctx, { slug, definition }) => installWorkflow(ctx.db, ctx.env.BUCKET, ctx.actor, slug, definition),
    }),
    uninstallCapability('uninstall-workflow', 'POST', '/:slug/uninstall'),
    uninstallCapability('delete-workflow', 'DELETE', '/:slug'),
    defineCapability({
      name: 'start-workflow',
      title: 'Start a workflow',
      description:
        'Launches an installed workflow (by slug, namespaced runtime id or declared id) with inputs checked against its inputSchema; answers {runId, workflowId, status: "started"} at once. Follow it with get-workflow-run. With a progressToken the answer waits until the run stops running (done, failed or waiting for input), sending progress per step meanwhile.',
      access: RUN,
      input: LaunchInput,
      output: Launched,
      annotations: { ...WRITES, openWorldHint: true },
      http: { method: 'POST', path: '/:id/launch', status: 201, params: { id: 'workflowId' }, before: [optionalJsonBody], summary: 'Start a run' },
      // Runs reach threads from a chat turn (the agent-run view, bound to the turn's thread), not from an MCP tool call.
      mcp: {
        args: LaunchArgs,
        follow: (ctx, started, report) => followWorkflowRun(ctx, started.runId, report),
      },
      // Spec 4.8: a chat turn whose caller may launch workflows starts one from its thread, which gets the run's outcome.
      agentTool: {
        offeredTo: 'thread',
        name: 'start_workflow',
        description:
          "Start one of this workspace's installed workflows. Its outcome (finished, failed, or waiting for input) is posted to this conversation when it happens.",
        displayName: 'Start workflow',
        label: (args) => String(args.workflowId ?? 'workflow').slice(0, 200),
        args: LaunchArgs,
        invalid: { inputs: 'inputs must be an object' },
        input: (args, { threadId }) => ({ ...args, threadId }),
        answer: (launched) => `Started workflow ${launched.workflowId} as run ${launched.runId}; its outcome will be posted to this conversation.`,
      },
      // In a run, the tool call launches once however often a cut-off turn makes it.
      run: (ctx, input) => launchWorkflow(ctx.db, ctx.env, ctx.actor, { ...input, toolCallKey: ctx.toolCallKey }),
    }),
    ...scheduleCapabilities,
    ...triggerCapabilities,
  ],
};
