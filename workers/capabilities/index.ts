import { agentsArea } from './agents';
import { artifactsArea } from './artifacts';
import type { Area, Capability } from './capability';
import { connectorsArea } from './connectors';
import { executionsArea } from './executions';
import { memoryArea } from './memory';
import { workflowsArea } from './workflows';

/** Every area declared as capabilities; its REST routes, access entries, MCP tools and run tools are generated from these. */
export const AREAS: readonly Area[] = [memoryArea, executionsArea, artifactsArea, connectorsArea, workflowsArea, agentsArea];

export const CAPABILITIES: readonly Capability[] = AREAS.flatMap((area) => area.capabilities);
