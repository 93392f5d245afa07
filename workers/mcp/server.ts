import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { artifactsArea } from '../capabilities/artifacts';
import { connectorsArea } from '../capabilities/connectors';
import { executionsArea } from '../capabilities/executions';
import type { Area } from '../capabilities/capability';
import { memoryArea } from '../capabilities/memory';
import { workflowsArea } from '../capabilities/workflows';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import { handleSetLevel } from './logging';
import { registerResourcesAndPrompts } from './resources';
import { capabilityTool, type ToolContext } from './tool';
import { billingTools } from './tools/billing.tools';
import { executionTools } from './tools/executions.tools';
import { marketplaceTools } from './tools/marketplace.tools';
import { skillTools } from './tools/skills.tools';

const toolsOf = (area: Area) => area.capabilities.filter((capability) => capability.mcp !== false).map(capabilityTool);

/** Every tool the endpoint offers: the capabilities' MCP views and thin adapters over workers/services/. */
export const MCP_TOOLS = [
  ...skillTools,
  ...marketplaceTools,
  ...executionTools,
  ...toolsOf(executionsArea),
  ...toolsOf(artifactsArea),
  ...toolsOf(memoryArea),
  ...billingTools,
  ...toolsOf(workflowsArea),
  ...toolsOf(connectorsArea),
];

/**
 * A fresh server per request (stateless Streamable HTTP). The SDK's default
 * JSON Schema validator compiles with `new Function`, which Workers forbid; @cfworker's does not.
 */
export function createMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer(
    { name: 'workspace-skills-service', version: '1.0.0' },
    { capabilities: { tools: {}, logging: {} }, jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
  );
  for (const tool of MCP_TOOLS) tool.register(server, ctx);
  registerResourcesAndPrompts(server, ctx);
  handleSetLevel(server, ctx.db, ctx.actor);
  // A stateless server has no stream to announce list changes on; the SDK claims it can.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}
