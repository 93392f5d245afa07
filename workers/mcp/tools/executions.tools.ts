import { z } from 'zod';
import {
  CancelResult,
  cancelExecution,
  ExecutionStatus,
  getExecutionStatus,
  HistoryPage,
  ListExecutionsQuery,
  listExecutions,
  runSkill,
  RunSkillBody,
  StartedRun,
} from '../../services/executions';
import { SkillSlug } from '../../services/skills';
import { followExecution } from '../progress';
import { READ_ONLY } from '../../capabilities/capability';
import { defineTool } from '../tool';

const executionId = z.string().min(1).max(40).describe('The execution id, exec_<n> or <n>');

export const executionTools = [
  defineTool({
    name: 'execute-skill',
    title: 'Run a skill',
    description:
      'Starts a run of an installed skill with the given input and answers at once with its executionId (status "started"); poll get-execution-status for progress and output. With a progressToken the answer waits for the run to end, sending progress (and, once logging/setLevel is info or lower, the run’s text) meanwhile. Costs credits (at least 50 Ds must be available, INSUFFICIENT_CREDITS otherwise); one run at a time per workspace (EXECUTION_RUNNING).',
    route: 'POST /api/v1/skills/:slug/run',
    input: {
      slug: SkillSlug.describe('The installed skill to run'),
      input: z.string().trim().min(1).max(100_000).describe('What the skill should work on: the instructions or material for this run'),
      interface: z.string().trim().min(1).max(40).optional().describe('A label for the client, recorded on the execution; defaults to the detected MCP client'),
      connector: RunSkillBody.shape.connector.describe(
        '{type:"github", fields:{repo:"owner/repo"}} gives the run read tools for that repository (needs connector:github:read and a connection); {type:"remote", fields:{}} means no source',
      ),
    },
    output: StartedRun,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    run: (ctx, args) =>
      runSkill(
        ctx.db,
        ctx.env,
        ctx.actor,
        args.slug,
        { input: args.input, interface: args.interface ?? ctx.clientInterface, connector: args.connector },
        'mcp',
      ),
    follow: (ctx, started: { executionId: string }, report) => followExecution(ctx, started.executionId, report),
  }),
  defineTool({
    name: 'list-executions',
    title: 'List executions',
    description:
      'Lists this workspace’s executions, newest first, with status, cost in Ds, source and interface. Offset paging; filter by source channels or interfaces.',
    route: 'GET /api/v1/executions',
    input: {
      limit: z.number().int().min(1).max(100).optional().describe('Page size (default 10)'),
      offset: z.number().int().min(0).max(100_000).optional().describe('How many to skip (default 0)'),
      channels: z.array(z.string().max(40)).max(20).optional().describe('Only these sources, e.g. ["api", "mcp"]'),
      interfaces: z.array(z.string().max(40)).max(20).optional().describe('Only these interfaces, e.g. ["mcp-vscode"]'),
    },
    output: HistoryPage,
    annotations: READ_ONLY,
    run: (ctx, args) =>
      listExecutions(
        ctx.db,
        ctx.actor,
        ListExecutionsQuery.parse({ limit: args.limit, offset: args.offset, channels: args.channels?.join(','), interfaces: args.interfaces?.join(',') }),
      ),
  }),
  defineTool({
    name: 'get-execution-status',
    title: 'Get execution status',
    description:
      'Shows an execution’s status (idle, working, completed, failed), its output blocks so far, cost in Ds and time in ms. Pass blocksAfter to get only newer blocks.',
    route: 'GET /api/v1/executions/:id/status',
    input: { executionId, blocksAfter: z.number().int().min(0).max(100_000).optional().describe('Skip the first n output blocks (delta polling)') },
    output: ExecutionStatus,
    annotations: READ_ONLY,
    run: (ctx, args) => getExecutionStatus(ctx.db, ctx.env, ctx.actor, args.executionId, args.blocksAfter ?? 0),
  }),
  defineTool({
    name: 'cancel-execution',
    title: 'Cancel an execution',
    description: 'Interrupts a working execution (it becomes idle and can take a new message); does nothing to one that is not working.',
    route: 'POST /api/v1/executions/:id/cancel',
    input: { executionId },
    output: CancelResult,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: (ctx, { executionId }) => cancelExecution(ctx.db, ctx.env, ctx.actor, executionId),
  }),
];
