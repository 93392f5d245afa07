import type { TurnInput } from '../services/execution-events';
import type { Db, Env } from '../env';
import { toolCallKey } from '../services/run-tool-calls';
import { launchWorkflow } from '../services/workflow-runs';
import type { AgentTool } from './agent-loop';
import { failed } from './tool-errors';
import { actingAs } from './tools';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The tool a chat turn gets when its caller may launch workflows (`turn.threadId` is set only
 * then, see startRun): start one of the workspace's workflows from the thread, so the run
 * reports its completion, failure or suspension back into the same thread (spec 4.8).
 */
export function threadRunTools(db: Db, env: Env, turn: TurnInput): AgentTool[] {
  const threadId = turn.threadId;
  if (threadId === undefined) return [];
  return [
    {
      spec: {
        name: 'start_workflow',
        description:
          "Start one of this workspace's installed workflows. Its outcome (finished, failed, or waiting for input) is posted to this conversation when it happens.",
        inputSchema: {
          type: 'object',
          properties: {
            workflowId: { type: 'string', description: "The workflow's slug or declared id" },
            inputs: { type: 'object', description: "The run's inputs, matching the workflow's inputSchema" },
          },
          required: ['workflowId'],
        },
      },
      displayName: 'Start workflow',
      label: (args) => String(args.workflowId ?? 'workflow').slice(0, 200),
      run: actingAs(db, turn.actor, 'POST /api/v1/workflows/:id/launch', async (args, call) => {
        const inputs = args.inputs ?? {};
        if (!isRecord(inputs)) return { content: 'inputs must be an object', isError: true };
        try {
          const key = await toolCallKey(turn.turnKey, call);
          const launched = await launchWorkflow(db, env, turn.actor, { workflowId: String(args.workflowId ?? ''), inputs, threadId, toolCallKey: key });
          return { content: `Started workflow ${launched.workflowId} as run ${launched.runId}; its outcome will be posted to this conversation.` };
        } catch (error) {
          return failed(error, 'The workflow could not be started');
        }
      }),
    },
  ];
}
