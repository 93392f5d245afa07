import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import { handleSetLevel } from './logging';
import { registerResourcesAndPrompts } from './resources';
import type { ToolContext } from './tool';
import { artifactTools } from './tools/artifacts.tools';
import { billingTools } from './tools/billing.tools';
import { connectorTools } from './tools/connectors.tools';
import { executionTools } from './tools/executions.tools';
import { marketplaceTools } from './tools/marketplace.tools';
import { memoryTools } from './tools/memory.tools';
import { skillTools } from './tools/skills.tools';
import { workflowTools } from './tools/workflows.tools';

/** Every tool the endpoint offers, each a thin adapter over workers/services/. */
export const MCP_TOOLS = [
  ...skillTools,
  ...marketplaceTools,
  ...executionTools,
  ...artifactTools,
  ...memoryTools,
  ...billingTools,
  ...workflowTools,
  ...connectorTools,
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
  handleSetLevel(server, ctx.db, ctx.principal);
  // A stateless server has no stream to announce list changes on; the SDK claims it can.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}
