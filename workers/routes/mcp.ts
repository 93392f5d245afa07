import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  InMemoryServerEventBus,
  isLegacyRequest,
  type ClientCapabilities,
  type McpRequestContext,
} from '@modelcontextprotocol/server';
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import { isLoopbackHost } from '../lib/addresses';
import type { RouteAccess } from '../auth/access';
import type { Principal } from '../auth/principal';
import { hasScope, type Scope } from '../auth/scopes';
import type { AppEnv, Env } from '../env';
import { AppError, forbidden, unauthorized } from '../errors';
import { identify } from '../middleware/authenticate';
import { isLocalDevelopment } from '../lib/local-development';
import { heldStream, streamHolderOf } from '../lib/stream-slots';
import { mcpWwwAuthenticate, stepUpScopes } from '../mcp/challenge';
import { logLevelOf } from '../mcp/logging';
import { PROMPT_CAPABILITY, resourceCapability } from '../mcp/resources';
import { followWorkspaceChanges } from '../mcp/changes';
import { honoredTaskIds, listenedTaskIds, withTaskNotifications } from '../mcp/task-listen';
import { legacyTransport } from '../mcp/legacy-transport';
import { TASKS_EXTENSION } from '../mcp/client-capabilities';
import { createMcpServer, MCP_TOOLS, taskAccess } from '../mcp/server';
import type { ToolContext } from '../mcp/tool';
import { documentedProtocol } from './openapi';

/**
 * Spec 2.2's interface labels for MCP clients, from the User-Agent: 2025 requests carry no client
 * info past `initialize`, and 2026-07-28's per-request `clientInfo` is for display only.
 */
function clientInterface(userAgent: string | undefined): string {
  if (/\b(vscode|visual studio code)\b/i.test(userAgent ?? '')) return 'mcp-vscode';
  if (/\bcursor\b/i.test(userAgent ?? '')) return 'mcp-cursor';
  return 'mcp';
}

const isLoopbackOrigin = (origin: string) => URL.canParse(origin) && isLoopbackHost(new URL(origin).hostname);

/** The browser origins that may call /mcp: the configured public origin and MCP_ALLOWED_ORIGINS. */
const allowedOrigins = (env: Env) =>
  [env.PUBLIC_ORIGIN, ...(env.MCP_ALLOWED_ORIGINS ?? '').split(',')].map((o) => o?.trim().replace(/\/+$/, '')).filter((o): o is string => !!o);

/**
 * Browsers send Origin: a page of another site must not drive a user's MCP session (the MCP
 * transport spec's DNS-rebinding rule). The check is against configured origins, and loopback
 * hosts only in local development (in a deployment, any program on the person's machine could
 * serve such a page); never the request's own Host, which a rebinding attacker controls.
 * Clients that are not browsers send none.
 */
const originAllowed = (env: Env, origin: string) => allowedOrigins(env).includes(origin) || (isLocalDevelopment(env) && isLoopbackOrigin(origin));

/** Why the request's Origin may not call, or null (clients that are not browsers send none). */
function originRefusal(c: Context<AppEnv>): AppError | null {
  const origin = c.req.header('origin');
  return origin !== undefined && !originAllowed(c.env, origin) ? forbidden(`Origin ${origin} may not call this MCP endpoint`) : null;
}

type ChallengeProblem = Parameters<typeof mcpWwwAuthenticate>[1];

/**
 * Every 401 and 403 of /mcp carries the whole challenge (RFC 9728 5.1, RFC 6750 3): where the
 * authorization server is, which scopes to ask for, and what was wrong. `c.header` replaces the
 * short challenge `identify` set for the REST routes; a header handed to `c.json` would not.
 */
function refuse(c: Context<AppEnv>, error: AppError, problem?: ChallengeProblem): Response {
  c.header('www-authenticate', mcpWwwAuthenticate(new URL(c.req.url).origin, problem));
  return c.json(error.toEnvelope(), error.status as 401 | 403);
}

/** Browser clients need the preflight answered and the challenge header readable. */
const mcpCors = cors({
  origin: (origin, c: Context<AppEnv>) => (originAllowed(c.env, origin) ? origin : null),
  allowMethods: ['POST', 'GET', 'DELETE', 'OPTIONS'],
  allowHeaders: [
    'authorization',
    'content-type',
    'accept',
    'x-api-key',
    'x-workspace-id',
    'mcp-protocol-version',
    'mcp-method',
    'mcp-name',
    'mcp-session-id',
    'last-event-id',
    GRANT_TOKEN_HEADER,
  ],
  exposeHeaders: [
    'www-authenticate',
    'mcp-session-id',
    'mcp-protocol-version',
    'x-ratelimit-limit',
    'x-ratelimit-remaining',
    'x-ratelimit-reset',
    'retry-after',
  ],
  maxAge: 600,
});

type JsonRpcMessage = {
  id?: string | number | null;
  method?: unknown;
  params?: { name?: unknown; uri?: unknown; taskId?: unknown; _meta?: { progressToken?: unknown; [CLIENT_CAPABILITIES_META_KEY]?: ClientCapabilities } };
};

/** The request body, parsed once here and handed to the transport; undefined if it is not JSON (the transport answers that). */
async function bodyOf(c: Context<AppEnv>): Promise<unknown> {
  return c.req.raw
    .clone()
    .json()
    .catch(() => undefined);
}

/** JSON-RPC batches exist only in the 2025-03-26 revision; later ones removed them. */
const BATCHES_REMOVED_IN = '2025-06-18';
/** The most messages one batch may carry; each counts one request against the rate limit. */
export const MAX_BATCH_MESSAGES = 20;

function protocolVersionOf(c: Context<AppEnv>, messages: JsonRpcMessage[]): string {
  const init = messages.find((m) => m.method === 'initialize')?.params as { protocolVersion?: unknown } | undefined;
  return typeof init?.protocolVersion === 'string' ? init.protocolVersion : (c.req.header('mcp-protocol-version') ?? '2025-03-26');
}

/** Why a batch is refused, if it is: batches left MCP after 2025-03-26, and one carries so many messages at most. */
function batchRefusal(c: Context<AppEnv>, size: number, messages: JsonRpcMessage[]): string | undefined {
  const version = protocolVersionOf(c, messages);
  if (version >= BATCHES_REMOVED_IN) return `JSON-RPC batches are not part of MCP ${version}: send one message per request`;
  if (size > MAX_BATCH_MESSAGES) return `A batch may carry at most ${MAX_BATCH_MESSAGES} messages; this one has ${size}`;
  return undefined;
}

const jsonRpcError = (id: JsonRpcMessage['id'], code: number, message: string, status: 200 | 400 = 200, data?: unknown) =>
  Response.json({ jsonrpc: '2.0', id: id ?? null, error: { code, message, ...(data === undefined ? {} : { data }) } }, { status });

const toolNamed = (name: unknown) => MCP_TOOLS.find((tool) => tool.name === name);

/** The access a message needs: a tool's own, or that of the operation a resource or the prompts read through. */
function accessOf(message: JsonRpcMessage): RouteAccess | undefined {
  if (message.method === 'tools/call') return toolNamed(message.params?.name)?.access;
  if (message.method === 'resources/read' && typeof message.params?.uri === 'string') return resourceCapability(message.params.uri)?.access;
  if (message.method === 'prompts/get') return PROMPT_CAPABILITY.access;
  if ((message.method === 'tasks/get' || message.method === 'tasks/update' || message.method === 'tasks/cancel') && typeof message.params?.taskId === 'string')
    return taskAccess(message.method, message.params.taskId);
  return undefined;
}

/**
 * The scope an OAuth token lacks for what this request does, if any. API keys get the same
 * refusal as a tool (or JSON-RPC) error instead: they have no authorization server to step up with.
 */
function scopeMissing(principal: Principal, messages: JsonRpcMessage[]): Scope | null {
  for (const message of messages) {
    const access = accessOf(message);
    if (access && (access.auth === 'credential' || access.auth === 'key') && !hasScope(principal.scopes, access.scope)) return access.scope;
  }
  return null;
}

/**
 * A tools/call of a tool that follows its run when the client sent a progressToken: answered as
 * SSE. A 2026-07-28 client that takes tasks gets the run as a task instead, answered at once.
 */
const followsProgress = (message: JsonRpcMessage) =>
  message.method === 'tools/call' &&
  message.params?._meta?.progressToken !== undefined &&
  message.params._meta[CLIENT_CAPABILITIES_META_KEY]?.extensions?.[TASKS_EXTENSION] === undefined &&
  toolNamed(message.params.name)?.follows === true;

async function handle(c: Context<AppEnv>): Promise<Response> {
  const foreignOrigin = originRefusal(c);
  if (foreignOrigin) return refuse(c, foreignOrigin);
  const body = await bodyOf(c);
  const messages = (Array.isArray(body) ? body : [body]).filter((m): m is JsonRpcMessage => typeof m === 'object' && m !== null);
  const batchRefused = Array.isArray(body) ? batchRefusal(c, body.length, messages) : undefined;
  // Each message of a batch is a request of its own for the rate limit, counted all or none; a
  // refused batch counts once.
  const weight = Array.isArray(body) && !batchRefused ? Math.max(1, body.length) : 1;
  let principal: Principal | undefined;
  try {
    principal = await identify(c, { mcp: true, weight });
  } catch (error) {
    // A refused credential (unknown, expired, revoked, unactivated, its owner gone) is an invalid token, said why.
    if (error instanceof AppError && (error.status === 401 || error.status === 403))
      return refuse(c, error, { error: 'invalid_token', description: error.message });
    throw error;
  }
  const base = new URL(c.req.url).origin;
  // RFC 9728 §5.1: point the client at the protected resource metadata to find the authorization server.
  if (!principal) return refuse(c, unauthorized());
  if (batchRefused) return jsonRpcError(null, -32600, batchRefused, 400);
  const legacy = Array.isArray(body) || (await isLegacyRequest(c.req.raw, body));
  // A 2025 request naming an unknown tool is answered with the protocol error before anything else; a
  // 2026-07-28 request's envelope and Mcp-* headers are checked first, by the SDK, which then answers the same.
  const unknownTool = legacy && messages.find((m) => m.method === 'tools/call' && !toolNamed(m.params?.name));
  if (unknownTool && !Array.isArray(body)) return jsonRpcError(unknownTool.id, -32602, `Unknown tool: ${String(unknownTool.params?.name)}`);
  const missing = principal.credential.type === 'oauth' ? scopeMissing(principal, messages) : null;
  if (missing) {
    // MCP authorization, scope challenge: the client asks the person again for what the token
    // holds plus what it lacks (its new grant replaces the old one), then retries.
    const refusal = forbidden(`This token lacks the scope "${missing}"`, { scope: missing });
    return refuse(c, refusal, { error: 'insufficient_scope', scope: stepUpScopes(principal.scopes, missing) });
  }
  const live = messages.some(followsProgress);
  const ctx: ToolContext = {
    db: c.var.db,
    globalDb: c.var.globalDb,
    env: c.env,
    actor: principal,
    clientInterface: clientInterface(c.req.header('user-agent')),
    baseUrl: base,
    requestOrigin: c.var.origin,
    source: 'mcp',
    requestId: c.var.requestId,
    grantToken: c.req.header(GRANT_TOKEN_HEADER),
  };
  const holder = streamHolderOf(principal);
  let response: Response;
  if (legacy) {
    // 2025 revisions: a stateless server per request, JSON answers unless a followed call streams.
    if (live) ctx.logLevel = await logLevelOf(c.var.globalDb, principal);
    const transport = legacyTransport(!live);
    await createMcpServer(ctx, 'legacy').connect(transport);
    const answer = () => transport.handleRequest(c.req.raw, body === undefined ? undefined : { parsedBody: body });
    // A followed call answers as an event stream: it holds one of the credential's stream slots.
    response = live ? await followedStream(c, ctx, holder, answer) : await answer();
  } else {
    response = await serveModern(c, ctx, holder, body, live);
  }
  // Headers set on the context (x-ratelimit-*, CORS) are not on a Response returned as is.
  for (const [name, value] of c.res.headers) if (name.startsWith('x-ratelimit-') || name.startsWith('access-control-')) response.headers.set(name, value);
  return response;
}

/**
 * A followed call's answer, holding one of the credential's stream slots while it streams: its
 * tool stops following the run (`ctx.signal`) once the client has gone or the slot was lost.
 */
function followedStream(c: Context<AppEnv>, ctx: ToolContext, holder: string, answer: () => Promise<Response>): Promise<Response> {
  return heldStream(c, holder, (signal) => {
    ctx.signal = signal;
    return answer();
  });
}

/**
 * 2026-07-28: the SDK's per-request handler checks the `_meta` envelope and the `Mcp-*` headers,
 * answers `server/discover`, and adds `resultType`, `serverInfo` and cache hints. A
 * `subscriptions/listen` stream hears the workspace's changes through its channel, and the
 * status of the tasks its filter names (`taskIds`, ../mcp/task-listen.ts); it holds a stream
 * slot as a followed call does. When the channel's stream ends (the object was evicted, the slot
 * lost), the listen ends gracefully and the client listens again.
 */
async function serveModern(c: Context<AppEnv>, ctx: ToolContext, holder: string, body: unknown, live: boolean): Promise<Response> {
  const factory = ({ era }: McpRequestContext) => createMcpServer(ctx, era);
  const message = body as JsonRpcMessage | undefined;
  if (message?.method !== 'subscriptions/listen') {
    const answer = () => createMcpHandler(factory, { legacy: 'reject' }).fetch(c.req.raw, { parsedBody: body });
    return live ? followedStream(c, ctx, holder, answer) : answer();
  }
  const listened = listenedTaskIds(message.params);
  if ('refusal' in listened) {
    const { code, message: text, data, status } = listened.refusal;
    return jsonRpcError(message.id, code, text, status, data);
  }
  return heldStream(c, holder, async (signal) => {
    // Aborted when the client goes, or by the task notifications once their stream has ended.
    const stop = new AbortController();
    signal.addEventListener('abort', () => stop.abort(), { once: true });
    const bus = new InMemoryServerEventBus();
    const { ended } = await followWorkspaceChanges(c.env, ctx.actor.workspaceId, bus, stop.signal);
    const handler = createMcpHandler(factory, { legacy: 'reject', bus });
    c.executionCtx.waitUntil(ended.then(() => handler.close()));
    const taskIds = listened.taskIds && (await honoredTaskIds(ctx, listened.taskIds));
    const answer = await handler.fetch(c.req.raw, { parsedBody: body });
    return taskIds ? withTaskNotifications(ctx, answer, taskIds, stop) : answer;
  });
}

/** Stateless Streamable HTTP has no stream to open (GET) and no session to end (DELETE). */
const postOnly = (c: Context<AppEnv>) => {
  c.header('allow', 'POST');
  throw new AppError('INVALID_INPUT', 405, 'This MCP endpoint is stateless: send JSON-RPC requests with POST', { field: 'method', rule: 'post_only' });
};

/** `POST /mcp` and `/mcp/` (spec 4.11): every service operation as an MCP tool. */
const mcpDoc = documentedProtocol(
  'MCP',
  'Every service operation as an MCP tool, plus prompts and resources (stateless; JSON responses, SSE for calls followed with a progressToken)',
  'MCP Streamable HTTP transport',
  200,
  'application/json',
);

// '/mcp/' is the same endpoint, documented once under '/mcp'.
export const mcpRoutes = new Hono<AppEnv>()
  .use('/mcp', mcpCors)
  .use('/mcp/', mcpCors)
  .post('/mcp', mcpDoc, handle)
  .post('/mcp/', handle)
  .on(['GET', 'DELETE', 'PUT', 'PATCH'], ['/mcp', '/mcp/'], postOnly);
