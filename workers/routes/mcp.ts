import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Hono, type Context } from 'hono';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import type { AppEnv } from '../env';
import { AppError, forbidden, unauthorized } from '../errors';
import { identify } from '../middleware/authenticate';
import { createMcpServer } from '../mcp/server';

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

async function handle(c: Context<AppEnv>): Promise<Response> {
  checkOrigin(c);
  const principal = await identify(c).catch((error: unknown) => {
    if (error instanceof AppError && error.status === 401) return undefined;
    throw error;
  });
  if (!principal) {
    // RFC 9728 §5.1: point the client at the protected resource metadata to find the authorization server.
    const challenge = `Bearer resource_metadata="${new URL(c.req.url).origin}/.well-known/oauth-protected-resource/mcp"`;
    return c.json(unauthorized().toEnvelope(), 401, { 'www-authenticate': challenge });
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
export const mcp = new Hono<AppEnv>().post('/mcp', handle).post('/mcp/', handle).on(['GET', 'DELETE', 'PUT', 'PATCH'], ['/mcp', '/mcp/'], postOnly);
