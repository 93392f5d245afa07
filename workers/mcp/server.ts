import { McpServer, type CacheHint, type McpRequestContext } from '@modelcontextprotocol/server';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/server/validators/cf-worker';
import { CAPABILITIES } from '../capabilities';
import { handleSetLevel } from './logging';
import { registerResourcesAndPrompts } from './resources';
import { capabilityTool, offersTool, type ToolContext } from './tool';

/** Every tool the endpoint offers: the MCP view of each capability that has one. */
export const MCP_TOOLS = CAPABILITIES.filter(offersTool).map(capabilityTool);

/** The server's name and version, in `initialize` results and in every 2026-07-28 result's `_meta`. */
export const SERVER_INFO = { name: 'workspace-skills-service', version: '1.0.0' };

/** Lists that are the same for every caller and change only with a deployment. */
const DEPLOYMENT_WIDE: CacheHint = { ttlMs: 3_600_000, cacheScope: 'public' };
/** A workspace's own lists: fresh for a minute, and a listen stream says at once when they change. */
const WORKSPACE_LIST: CacheHint = { ttlMs: 60_000, cacheScope: 'private' };

/**
 * 2026-07-28 cache hints (`ttlMs`, `cacheScope`). Tools, templates and the server's description
 * do not depend on who asks; prompts and resources are the workspace's installed skills,
 * files and workflows; a resource read (memory, an artifact) may change at any time.
 */
const CACHE_HINTS = {
  'server/discover': DEPLOYMENT_WIDE,
  'tools/list': DEPLOYMENT_WIDE,
  'resources/templates/list': DEPLOYMENT_WIDE,
  'prompts/list': WORKSPACE_LIST,
  'resources/list': WORKSPACE_LIST,
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
} satisfies Record<string, CacheHint>;

/**
 * A fresh server per request, for either era. 2026-07-28 clients learn of prompt and resource
 * list changes on a `subscriptions/listen` stream; a 2025 client gets no stream it could hear
 * them on (stateless), so none is claimed. The tool list never changes while a deployment runs.
 * The SDK's default JSON Schema validator compiles with `new Function`, which Workers forbid;
 * @cfworker's does not.
 */
export function createMcpServer(ctx: ToolContext, era: McpRequestContext['era']): McpServer {
  const listChanged = era === 'modern';
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, logging: {}, resources: { listChanged }, prompts: { listChanged }, completions: {} },
    jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
    cacheHints: CACHE_HINTS,
  });
  for (const tool of MCP_TOOLS) tool.register(server, ctx);
  registerResourcesAndPrompts(server, ctx);
  handleSetLevel(server, ctx.globalDb, ctx.actor);
  return server;
}
