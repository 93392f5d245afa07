import { z } from 'zod';
import { AgentRecord, CreateAgentBody, listAgents, saveAgent } from '../services/agents';
import { defineCapability, READ_ONLY, type Area } from './capability';

/**
 * The workspace agents that workflow `agent` steps run (docs/workflows.md). How agents connect
 * and ask for scopes, under the same mount path, is agent-permissions.ts.
 */
export const agentsArea: Area = {
  mount: '/api/v1/agents',
  tag: 'Agents',
  capabilities: [
    defineCapability({
      name: 'list-agents',
      title: 'List agents',
      description: 'Lists the workspace agents, by slug, with their instructions and model.',
      access: { auth: 'credential', scope: 'agent:list' },
      input: z.object({}),
      output: z.array(AgentRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: 'The workspace agents, by slug' },
      mcp: false,
      run: (ctx) => listAgents(ctx.db, ctx.actor),
    }),
    defineCapability({
      name: 'save-agent',
      title: 'Save an agent',
      description: 'Creates a workspace agent, or replaces the one with the same slug.',
      access: { auth: 'credential', scope: 'library:write' },
      input: CreateAgentBody,
      output: AgentRecord,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      http: { method: 'POST', path: '/', status: 201, summary: 'Create an agent, or replace the one with the same slug' },
      mcp: false,
      run: (ctx, body) => saveAgent(ctx.db, ctx.actor, body),
    }),
  ],
};
