import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/cfworker';
import { CAPABILITIES } from '../capabilities';
import { handleSetLevel } from './logging';
import { registerResourcesAndPrompts } from './resources';
import { capabilityTool, offersTool, type ToolContext } from './tool';

/** Every tool the endpoint offers: the MCP view of each capability that has one. */
export const MCP_TOOLS = CAPABILITIES.filter(offersTool).map(capabilityTool);

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
  handleSetLevel(server, ctx.globalDb, ctx.actor);
  // A stateless server has no stream to announce list changes on; the SDK claims it can.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}
