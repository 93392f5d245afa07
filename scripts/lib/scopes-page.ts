import type { RouteAccess } from '../../workers/auth/access';
import { ROUTE_ACCESS } from '../../workers/auth/route-scopes';
import { MCP_TOOLS } from '../../workers/mcp/server';

/**
 * docs/scopes.md, rendered from the route-to-scope table the auth middleware enforces
 * (`npm run docs:scopes` writes it; a test fails when the file and the table differ).
 */

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Rows by path, then method, so a resource's routes stand together. */
const byPath = (a: string, b: string) => {
  const [methodA, pathA] = a.split(' ') as [string, string];
  const [methodB, pathB] = b.split(' ') as [string, string];
  return pathA === pathB ? METHODS.indexOf(methodA) - METHODS.indexOf(methodB) : pathA < pathB ? -1 : 1;
};

const describeAccess = (access: RouteAccess) =>
  access.auth === 'public'
    ? 'none'
    : access.auth === 'session'
      ? 'session only'
      : access.auth === 'agent'
        ? 'API key (also unactivated)'
        : access.auth === 'key'
          ? `API key with \`${access.scope}\``
          : `\`${access.scope}\``;

export const SCOPES_PAGE = 'docs/scopes.md';

export const scopesPage = () =>
  [
    '# Which scope each route needs',
    '',
    '<!-- Generated from the route-to-scope table (workers/auth/route-scopes.ts, with the capabilities of workers/capabilities/) by `npm run docs:scopes`; do not edit by hand. -->',
    '',
    'Sessions and `*` keys skip the scope check; other API keys and OAuth access tokens need the scope',
    'listed. A missing scope is 403 `FORBIDDEN` naming the scope in the message and in `details.scope`',
    '(OAuth tokens also get `WWW-Authenticate: Bearer error="insufficient_scope"`). A route missing from',
    'the table is refused. "API key (also unactivated)" marks the agent routes: API keys only,',
    "unactivated ones included, no scope check. A key lacking a route's scope still passes while it holds",
    'a session grant of it, or by spending a one-time grant ([auth.md](auth.md#how-an-agent-obtains-a-scope)).',
    '',
    '| Method | Path | Scope |',
    '|---|---|---|',
    ...Object.entries(ROUTE_ACCESS)
      .sort(([a], [b]) => byPath(a, b))
      .map(([key, access]) => {
        const [method, path] = key.split(' ');
        return `| ${method} | \`${path}\` | ${describeAccess(access)} |`;
      }),
    '',
    '## MCP tools',
    '',
    'Each tool of the MCP endpoint (`POST /mcp`, [mcp.md](mcp.md)) is checked the same way. The connector',
    'tools also need `connector:<app>:read` to read sources and `connector:<app>:exec` to connect,',
    'disconnect and run actions, which write to the provider. "step-up" marks a scope an MCP client is',
    'not asked for at sign-in but when it first calls the tool ([mcp.md](mcp.md)).',
    '',
    '| Tool | Scope |',
    '|---|---|',
    ...MCP_TOOLS.map((tool) => `| \`${tool.name}\` | ${describeAccess(tool.access)}${tool.stepUp ? ' (step-up)' : ''} |`),
    '',
  ].join('\n');
