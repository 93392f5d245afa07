import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import { AgentRecord, CreateAgentBody, listAgents, saveAgent } from '../services/agents';
import { agentPermissionsRoutes } from './agent-permissions';
import { documented } from './openapi';

/**
 * Everything under /api/v1/agents: the workspace agents that workflow `agent` steps run
 * (docs/workflows.md), then how agents connect and ask for scopes (agent-permissions.ts).
 */
export const agentsRoutes = new Hono<AppEnv>()
  .get('/', documented('Agents', 'The workspace agents, by slug', 200, z.array(AgentRecord)), async (c) => c.json(await listAgents(c.var.db, principalOf(c))))
  .post('/', documented('Agents', 'Create an agent, or replace the one with the same slug', 201, AgentRecord), validate('json', CreateAgentBody), async (c) =>
    c.json(await saveAgent(c.var.db, principalOf(c), c.req.valid('json')), 201),
  )
  .route('/', agentPermissionsRoutes);
