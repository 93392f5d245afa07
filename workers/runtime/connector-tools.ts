import type { ShardDb, Env } from '../env';
import type { TurnInput } from '../services/execution-events';
import type { AgentTool } from './agent-loop';
import { capabilityRunTools } from './capability-tools';

/**
 * The tools a run started with `connector: {type:'github', fields:{repo}}` gets: the views
 * offered to a repository's run, which list and read the files of that one repository as the
 * run's actor. The token is read from D1 at each call (never kept in the turn or the Durable
 * Object), so a disconnect takes effect mid-run. `remote` adds no tools.
 */
export const connectorRunTools = (db: ShardDb, env: Env, turn: TurnInput): AgentTool[] => capabilityRunTools(db, env, turn, 'repository');
