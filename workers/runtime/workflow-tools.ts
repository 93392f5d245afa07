import type { ShardDb, Env } from '../env';
import type { TurnInput } from '../services/execution-events';
import type { AgentTool } from './agent-loop';
import { capabilityRunTools } from './capability-tools';

/**
 * The tools a chat turn gets when its caller may launch workflows (`turn.threadId` is set only
 * then, see startRun): the views offered to a thread's turn, start_workflow, which starts one of
 * the workspace's workflows from the thread so the run reports its completion, failure or
 * suspension back into the same thread (spec 4.8).
 */
export const threadRunTools = (db: ShardDb, env: Env, turn: TurnInput): AgentTool[] => capabilityRunTools(db, env, turn, 'thread');
