import { z } from 'zod';
import { cursorEnvelope } from '../lib/pagination';
import { serviceCodeErrors } from '../middleware/legacy-errors';
import { ExecutionDetails, getExecutionDetails } from '../services/execution-details';
import { createStreamUrl } from '../services/execution-streams';
import {
  CancelResult,
  cancelExecution,
  executionToolCalls,
  createExecution,
  CreateExecutionBody,
  ExecutionStatus,
  followUp,
  FollowUpBody,
  FollowUpRun,
  getExecutionStatus,
  HistoryItem,
  HistoryPage,
  IdleExecution,
  listExecutions,
  ListExecutionsInput,
  ListExecutionsQuery,
  postEvents,
  PostEventsBody,
  StatusQuery,
  ToolCall,
} from '../services/executions';
import { defineCapability, READ_ONLY, type Area } from './capability';

const ExecutionId = z.object({ executionId: z.string().min(1).max(40).describe('The execution id, exec_<n> or <n>') });
const byId = { id: 'executionId' };
const RUN = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;

const EventList = z.object({
  data: z.array(z.object({ id: z.string(), type: z.string(), sequence: z.number(), payload: z.record(z.string(), z.unknown()) })),
});

/** A rerun or a remix: the same skill with new instructions, in the same lineage or a new one. */
const followUpCapability = (kind: 'rerun' | 'remix', summary: string) =>
  defineCapability({
    name: `${kind}-execution`,
    title: kind === 'rerun' ? 'Rerun an execution' : 'Remix an execution',
    description: summary,
    access: { auth: 'credential', scope: 'tool:execute' },
    input: ExecutionId.extend(FollowUpBody.shape),
    output: FollowUpRun,
    annotations: RUN,
    http: { method: 'POST', path: `/:id/${kind}`, params: byId, before: [serviceCodeErrors], summary: `${summary} (errors carry details.serviceCode)` },
    mcp: false,
    run: (ctx, { executionId, input }) => followUp(ctx.db, ctx.env, ctx.actor, executionId, { input }, kind),
  });

/** Creating an execution: a workflow's agent step does it too. */
export const createExecutionCapability = defineCapability({
  name: 'create-execution',
  title: 'Create an execution',
  description: 'Creates an idle execution of an installed skill; nothing runs until a user.message is sent to it.',
  access: { auth: 'credential', scope: 'tool:execute' },
  input: CreateExecutionBody,
  output: IdleExecution,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  http: { method: 'POST', path: '/', status: 201, summary: 'Create an idle execution of an installed skill; nothing runs yet' },
  mcp: false,
  run: (ctx, body) => createExecution(ctx.db, ctx.globalDb, ctx.actor, body),
});

/** Runs of skills: their history, status, events, follow-ups and streams. */
export const executionsArea: Area = {
  mount: '/api/v1/executions',
  tag: 'Executions',
  capabilities: [
    defineCapability({
      name: 'list-executions',
      title: 'List executions',
      description:
        'Lists this workspace’s executions, newest first, with status, cost in Ds, source and interface. Offset paging; filter by source channels or interfaces.',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: ListExecutionsInput,
      output: z.union([HistoryPage, cursorEnvelope(HistoryItem)]),
      annotations: READ_ONLY,
      http: {
        method: 'GET',
        path: '/',
        query: ListExecutionsQuery,
        summary: 'History: the offset form, or the cursor form when after_id or before_id is present',
      },
      // The tool keeps to the offset form, so its answer has one shape.
      mcp: { args: ListExecutionsInput.omit({ after_id: true, before_id: true }), output: HistoryPage },
      run: (ctx, query) => listExecutions(ctx.db, ctx.env, ctx.actor, query),
    }),
    followUpCapability('rerun', 'Run the same skill again with new instructions, in the same lineage'),
    followUpCapability('remix', 'Run the same skill with new instructions as a new lineage'),
    createExecutionCapability,
    defineCapability({
      name: 'post-execution-events',
      title: 'Send events to an execution',
      description: 'Sends user.message (starts a run) or user.interrupt to an execution.',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: ExecutionId.extend(PostEventsBody.shape),
      output: EventList,
      annotations: RUN,
      http: { method: 'POST', path: '/:id/events', params: byId, summary: 'Send user.message (starts a run) or user.interrupt' },
      mcp: false,
      run: (ctx, { executionId, events }) => postEvents(ctx.db, ctx.env, ctx.actor, executionId, { events }),
    }),
    defineCapability({
      name: 'get-execution',
      title: 'Get an execution',
      description: 'One execution: its history item, token usage, time and artifacts.',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: ExecutionId,
      output: ExecutionDetails,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id', params: byId },
      mcp: false,
      run: (ctx, { executionId }) => getExecutionDetails(ctx.db, ctx.actor, executionId),
    }),
    defineCapability({
      name: 'get-execution-status',
      title: 'Get execution status',
      description:
        'Shows an execution’s status (idle, working, completed, failed), its output blocks so far, cost in Ds and time in ms. Pass blocksAfter to get only newer blocks. Also answers the run’s tool calls so far (name and label).',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: ExecutionId.extend({ blocksAfter: z.number().int().min(0).max(100_000).optional().describe('Skip the first n output blocks (delta polling)') }),
      output: ExecutionStatus,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id/status', params: byId, query: StatusQuery, summary: 'Status, output blocks (delta with blocksAfter), cost and time' },
      // The tool answers the run's tool calls too, which the run view (an MCP App) draws as the console does from the stream.
      mcp: {
        output: ExecutionStatus.extend({ toolCalls: z.array(ToolCall) }),
        present: async (ctx, status) => ({ ...status, toolCalls: await executionToolCalls(ctx.db, ctx.env, ctx.actor, status.executionId) }),
      },
      run: (ctx, { executionId, blocksAfter }) => getExecutionStatus(ctx.db, ctx.env, ctx.actor, executionId, blocksAfter ?? 0),
    }),
    defineCapability({
      name: 'cancel-execution',
      title: 'Cancel an execution',
      description: 'Interrupts a working execution (it becomes idle and can take a new message); does nothing to one that is not working.',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: ExecutionId,
      output: CancelResult,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      http: { method: 'POST', path: '/:id/cancel', params: byId, summary: 'Interrupt a working execution' },
      run: (ctx, { executionId }) => cancelExecution(ctx.db, ctx.env, ctx.actor, executionId),
    }),
    defineCapability({
      name: 'get-stream-token',
      title: 'Get a stream URL',
      description: 'A short-lived signed SSE URL for an execution’s events; append lastSeq=<n> to resume after event n.',
      access: { auth: 'credential', scope: 'tool:execute' },
      input: ExecutionId,
      output: z.object({ sseUrl: z.string() }),
      annotations: READ_ONLY,
      http: {
        method: 'GET',
        path: '/:id/stream-token',
        params: byId,
        summary: 'A short-lived signed SSE URL; append lastSeq=<n> to resume after event n',
        // The URL is the service's own: absolute on the origin the request reached.
        respond: { schema: z.object({ sseUrl: z.string() }), send: (c, { sseUrl }) => c.json({ sseUrl: new URL(sseUrl, c.req.url).href }) },
      },
      mcp: false,
      run: (ctx, { executionId }) => createStreamUrl(ctx.db, ctx.env, ctx.actor, executionId),
    }),
  ],
};
