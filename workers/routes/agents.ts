import { Hono } from 'hono';
import { agentsArea } from '../capabilities/agents';
import { capabilityRoutes } from '../capabilities/rest';
import type { AppEnv } from '../env';
import { agentPermissionsRoutes } from './agent-permissions';

/**
 * Everything under /api/v1/agents: the workspace agents that workflow `agent` steps run
 * (workers/capabilities/agents.ts), then how agents connect and ask for scopes (agent-permissions.ts).
 */
export const agentsRoutes = new Hono<AppEnv>().route('/', capabilityRoutes(agentsArea)).route('/', agentPermissionsRoutes);
