import {
  LOG_LEVEL_META_KEY,
  type CallToolResult,
  type InputRequiredResult,
  type LoggingLevel,
  type McpServer,
  type ServerContext,
  type ToolAnnotations,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { RouteAccess } from '../auth/access';
import { ToolFailure, type Capability, type CapabilityContext, type ProgressReport } from '../capabilities/capability';
import { AppError } from '../errors';
import { traceparentOf } from '../lib/otlp';
import { authorizeWithGrants } from '../auth/actor';
import { announceToolChange } from './changes';
import { ASKS } from './asks';
import { connectorSignIn } from './connector-sign-in';
import { askForScope } from './scope-request';
import { takesTasks } from './client-capabilities';
import { runViewToolMeta } from './run-view';
import { createdTask, TASK_TOOLS, toolResult } from './tasks';

/** What every tool call runs with: what a REST call's operation gets, plus the MCP request's own settings. */
export interface ToolContext extends CapabilityContext {
  /**
   * The level live run text is logged at or above, if any: a 2025 client's `logging/setLevel`
   * (kept per credential), a 2026-07-28 request's own `_meta` level. Without one, no log messages.
   */
  logLevel?: LoggingLevel;
}

const LOG_LEVELS: LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

function progressReport(ctx: ToolContext, call: ServerContext, progressToken: string | number, logger: string): ProgressReport {
  // The envelope's keys are the SDK's wire-only fields; the SDK has checked the level's value.
  const envelope = call.mcpReq.envelope as Record<string, LoggingLevel | undefined> | undefined;
  const level = envelope ? envelope[LOG_LEVEL_META_KEY] : ctx.logLevel;
  const logs = level !== undefined && LOG_LEVELS.indexOf(level) <= LOG_LEVELS.indexOf('info');
  return {
    progress: (progress, message) => call.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, message } }),
    log: async (text) => {
      if (logs) await call.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', logger, data: text } });
    },
  };
}

/** An MCP tool as the SDK registers it: a capability's MCP view (see capabilityTool). */
interface ServiceTool<Shape extends z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  access: RouteAccess;
  input: z.ZodObject<Shape>;
  /**
   * The answer's shape, as the MCP `outputSchema`: the SDK checks `structuredContent` against
   * it. The connector tools, whose answers carry the provider's own objects, declare none.
   */
  output?: z.ZodObject;
  annotations: Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'>>;
  /** The service's answer: a JSON object (lists are wrapped), sent as text and as `structuredContent`. */
  run: (ctx: ToolContext, args: z.infer<z.ZodObject<Shape>>) => Promise<object>;
  /**
   * For a tool that starts long work: when the call carried a `progressToken`, reports on that
   * work until it ends, before the result is answered (the response is then an SSE stream).
   */
  follow?: (ctx: ToolContext, result: never, report: ProgressReport) => Promise<void>;
  /** Its scope is asked for through the step-up challenge, not at sign-in (McpView.stepUp). */
  stepUp?: true;
}

/** A failed call: an MCP tool error whose text is the service's error envelope, code first. */
function toolError(error: unknown, requestId: string): CallToolResult {
  if (error instanceof ToolFailure) return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.body) }] };
  const known =
    error instanceof AppError
      ? error
      : (console.error(JSON.stringify({ level: 'error', requestId, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })),
        new AppError('INTERNAL_ERROR', 500, 'An unexpected error occurred'));
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(known.toEnvelope()) }] };
}

/** The call's context, its actor carrying the `_meta.traceparent` the call sent (the parent of the traces of runs it starts). */
function withTraceparent(ctx: ToolContext, value: unknown): ToolContext {
  const traceparent = traceparentOf(value);
  return traceparent === null ? ctx : { ...ctx, actor: { ...ctx.actor, origin: { ...ctx.actor.origin, traceparent } } };
}

/** The MCP tool: `access` checked (with grants), `run`, and its answer as JSON text plus `structuredContent`. */
function mcpTool<Shape extends z.ZodRawShape>(tool: ServiceTool<Shape>) {
  const ask = ASKS[tool.name];
  const startsTask = tool.name in TASK_TOOLS;
  return {
    name: tool.name,
    access: tool.access,
    follows: tool.follow !== undefined,
    stepUp: tool.stepUp === true,
    register(server: McpServer, registered: ToolContext) {
      server.registerTool(
        tool.name,
        {
          title: tool.title,
          description: tool.description,
          inputSchema: tool.input,
          outputSchema: tool.output,
          annotations: { title: tool.title, ...tool.annotations },
          _meta: runViewToolMeta(tool.name),
        },
        // The SDK's callback type cannot be resolved for a generic shape; at run time `args` is
        // the input parsed against `tool.input`.
        (async (given: z.infer<z.ZodObject<Shape>>, call: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
          const ctx = withTraceparent(registered, call.mcpReq._meta?.traceparent);
          try {
            const refused = await authorizeWithGrants(ctx.globalDb, tool.access, ctx.actor, ctx.grantToken).then(
              () => null,
              async (error: unknown) => (await askForScope(ctx, tool.name, error, call)) ?? Promise.reject(error),
            );
            if (refused) return refused;
            const asked = ask ? await ask(ctx, given, call) : { args: given };
            if ('answer' in asked) return asked.answer;
            const result = await tool.run(ctx, asked.args as z.infer<z.ZodObject<Shape>>);
            if (!tool.annotations.readOnlyHint) await announceToolChange(ctx, tool.name);
            // A client that takes tasks polls the run instead of following it on this call.
            if (startsTask && takesTasks(call)) return (await createdTask(ctx, tool.name, result)) as CallToolResult;
            const progressToken = call.mcpReq._meta?.progressToken;
            if (progressToken !== undefined && tool.follow) await tool.follow(ctx, result as never, progressReport(ctx, call, progressToken, tool.name));
            return toolResult(result);
          } catch (error) {
            return connectorSignIn(error, call, ctx.baseUrl) ?? toolError(error, ctx.requestId);
          }
        }) as never,
      );
    },
  };
}

/** Whether a capability is an MCP tool: every one is, unless its `mcp` view is `false` (REST only). */
export const offersTool = (capability: Capability) => capability.mcp !== false;

/** The arguments of a capability's tool: its MCP view's, or the capability's input. */
export const toolArguments = (capability: Capability): z.ZodObject => (capability.mcp || undefined)?.args ?? capability.input;

/** The MCP view of a capability: its input, output (or the view's), access and annotations. */
export function capabilityTool(capability: Capability) {
  const view = capability.mcp || undefined;
  return mcpTool({
    name: capability.name,
    title: capability.title,
    description: capability.description,
    access: capability.access,
    input: toolArguments(capability),
    // An answer that is not an object of known shape (the provider's own objects) declares none.
    output: view?.output ?? (capability.output instanceof z.ZodObject ? capability.output : undefined),
    annotations: capability.annotations,
    run: async (ctx, input) => {
      const output = await capability.run(ctx, input);
      return view?.present ? view.present(ctx, output) : (output as object);
    },
    follow: view?.follow,
    stepUp: view?.stepUp,
  });
}
