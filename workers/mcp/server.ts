import { McpServer, type CacheHint, type McpRequestContext } from '@modelcontextprotocol/server';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/server/validators/cf-worker';
import { CAPABILITIES } from '../capabilities';
import { handleSetLevel } from './logging';
import { registerResourcesAndPrompts } from './resources';
import { UI_EXTENSION } from './run-view';
import { TASKS_EXTENSION } from './client-capabilities';
import { registerTasks, type TaskAccess } from './tasks';
import { capabilityTool, offersTool, type ToolContext } from './tool';

/** Every tool the endpoint offers: the MCP view of each capability that has one. */
export const MCP_TOOLS = CAPABILITIES.filter(offersTool).map(capabilityTool);

const accessOfTool = (name: string) => MCP_TOOLS.find((tool) => tool.name === name)?.access;

/** A task method needs the access of the tool doing the same to the execution (`exec_<n>`) or the workflow run. */
export const taskAccess: TaskAccess = (method, taskId) => {
  const execution = taskId.startsWith('exec_');
  if (method === 'tasks/get') return accessOfTool(execution ? 'get-execution-status' : 'get-workflow-run');
  if (method === 'tasks/cancel') return accessOfTool(execution ? 'cancel-execution' : 'cancel-workflow-run');
  return accessOfTool(execution ? 'get-execution-status' : 'resume-workflow-run');
};

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
 * 2026-07-28 clients are offered Tasks (`tasks/get`, `tasks/update`, `tasks/cancel`); the 2025
 * revisions' experimental tasks are not offered. Both eras are offered the MCP Apps extension
 * (the run view, ./run-view.ts). The SDK's default JSON Schema validator compiles with `new Function`, which Workers forbid;
 * @cfworker's does not.
 */
export function createMcpServer(ctx: ToolContext, era: McpRequestContext['era']): McpServer {
  const modern = era === 'modern';
  const server = new McpServer(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: false },
      logging: {},
      resources: { listChanged: modern },
      prompts: { listChanged: modern },
      completions: {},
      extensions: { ...UI_EXTENSION, ...(modern ? { [TASKS_EXTENSION]: {} } : {}) },
    },
    jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
    cacheHints: CACHE_HINTS,
  });
  for (const tool of MCP_TOOLS) tool.register(server, ctx);
  registerResourcesAndPrompts(server, ctx);
  handleSetLevel(server, ctx.globalDb, ctx.actor);
  if (modern) registerTasks(server, ctx, taskAccess);
  return server;
}
