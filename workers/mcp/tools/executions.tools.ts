import { z } from 'zod';
import { runSkill, RunSkillBody, StartedRun } from '../../services/executions';
import { SkillSlug } from '../../services/skills';
import { followExecution } from '../progress';
import { defineTool } from '../tool';

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
];
