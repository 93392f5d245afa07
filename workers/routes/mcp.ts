import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono, type Context } from 'hono';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import { mcpWwwAuthenticate } from '../auth/oauth/metadata';
import type { Principal } from '../auth/principal';
import { ROUTE_ACCESS } from '../auth/route-scopes';
import { hasScope, type Scope } from '../auth/scopes';
import type { AppEnv } from '../env';
import { AppError, forbidden, unauthorized } from '../errors';
import { identify } from '../middleware/authenticate';
import { createMcpServer, MCP_TOOLS } from '../mcp/server';
import { documentedProtocol } from './openapi';

/** Spec 2.2's interface labels for MCP clients; stateless requests carry no client info past initialize, so the User-Agent tells. */
function clientInterface(userAgent: string | undefined): string {
  if (/\b(vscode|visual studio code)\b/i.test(userAgent ?? '')) return 'mcp-vscode';
  if (/\bcursor\b/i.test(userAgent ?? '')) return 'mcp-cursor';
  return 'mcp';
}

/**
 * Browsers send Origin: a page of another site must not drive a user's MCP session (the MCP
 * transport spec's DNS-rebinding rule). Clients that are not browsers send none.
 */
function checkOrigin(c: Context<AppEnv>): void {
  const origin = c.req.header('origin');
  if (origin === undefined || origin === new URL(c.req.url).origin) return;
  const allowed = (c.env.MCP_ALLOWED_ORIGINS ?? '').split(',').map((o) => o.trim());
  if (!allowed.includes(origin)) throw forbidden(`Origin ${origin} may not call this MCP endpoint`);
}

/**
 * The scope an OAuth token lacks for the tool this request calls, if any. API keys get the
 * same refusal as a tool error instead: they have no authorization server to step up with.
 */
async function scopeMissingForCall(c: Context<AppEnv>, principal: Principal): Promise<Scope | null> {
  const message: unknown = await c.req.raw
    .clone()
    .json()
    .catch(() => null);
  if (!message || typeof message !== 'object' || (message as { method?: unknown }).method !== 'tools/call') return null;
  const name = (message as { params?: { name?: unknown } }).params?.name;
  const access = ROUTE_ACCESS[MCP_TOOLS.find((tool) => tool.name === name)?.route ?? ''];
  if (!access || (access.auth !== 'credential' && access.auth !== 'key')) return null;
  return hasScope(principal.scopes, access.scope) ? null : access.scope;
}

async function handle(c: Context<AppEnv>): Promise<Response> {
  checkOrigin(c);
  const principal = await identify(c).catch((error: unknown) => {
    if (error instanceof AppError && error.status === 401) return undefined;
    throw error;
  });
  const base = new URL(c.req.url).origin;
  if (!principal) {
    // RFC 9728 §5.1: point the client at the protected resource metadata to find the authorization server.
    const refused = c.req.header('x-api-key') !== undefined || c.req.header('authorization') !== undefined;
    return c.json(unauthorized().toEnvelope(), 401, { 'www-authenticate': mcpWwwAuthenticate(base, refused ? { error: 'invalid_token' } : undefined) });
  }
  const missing = principal.credential.type === 'oauth' ? await scopeMissingForCall(c, principal) : null;
  if (missing) {
    // MCP authorization, scope challenge: an OAuth client can ask the user for more scope and retry.
    const error = forbidden(`This token lacks the scope "${missing}"`, { scope: missing });
    return c.json(error.toEnvelope(), 403, { 'www-authenticate': mcpWwwAuthenticate(base, { error: 'insufficient_scope', scope: missing }) });
  }
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const server = createMcpServer({
    db: c.var.db,
    env: c.env,
    principal,
    clientInterface: clientInterface(c.req.header('user-agent')),
    requestId: c.var.requestId,
    grantToken: c.req.header(GRANT_TOKEN_HEADER),
  });
  await server.connect(transport);
  const response = await transport.handleRequest(c.req.raw);
  // Headers set on the context (x-ratelimit-*) are not on a Response returned as is.
  for (const [name, value] of c.res.headers) if (name.startsWith('x-ratelimit-')) response.headers.set(name, value);
  return response;
}

/** Stateless Streamable HTTP has no stream to open (GET) and no session to end (DELETE). */
const postOnly = (c: Context<AppEnv>) => {
  c.header('allow', 'POST');
  throw new AppError('INVALID_INPUT', 405, 'This MCP endpoint is stateless: send JSON-RPC requests with POST', { field: 'method', rule: 'post_only' });
};

/** `POST /mcp` and `/mcp/` (spec 4.11): every service operation as an MCP tool. */
const mcpDoc = documentedProtocol('MCP', 'Every service operation as an MCP tool (stateless, JSON responses)', 'MCP Streamable HTTP transport', 200, 'application/json');

// '/mcp/' is the same endpoint, documented once under '/mcp'.
export const mcp = new Hono<AppEnv>().post('/mcp', mcpDoc, handle).post('/mcp/', handle).on(['GET', 'DELETE', 'PUT', 'PATCH'], ['/mcp', '/mcp/'], postOnly);
