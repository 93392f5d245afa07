import { describe, expect, it } from 'vitest';
import connectorsDoc from '../../docs/connectors.md?raw';
import mcpDoc from '../../docs/mcp.md?raw';
import scopesDoc from '../../docs/scopes.md?raw';
import { scopesPage } from '../../scripts/lib/scopes-page';
import { TOOL_TABLES, toolTable, withToolTable } from '../../scripts/lib/tool-tables';
import { createApp } from '../../workers/app';
import { ROUTE_ACCESS, routeKey } from '../../workers/auth/route-scopes';
import { MCP_TOOLS } from '../../workers/mcp/server';
import { CONSOLE_PAGES } from '../../workers/console/pages';
import { BASE, call } from '../helpers/api';

const mountedRoutes = () =>
  [
    ...new Set(
      createApp()
        .routes.filter((r) => r.method !== 'ALL')
        .map((r) => routeKey(r.method, r.path)),
    ),
  ].sort();
const mountedApiRoutes = () => mountedRoutes().filter((key) => key.split(' ')[1]!.startsWith('/api/v1/'));

/** Mounted routes the OpenAPI document leaves out, and why. */
const NOT_IN_OPENAPI: Record<string, string> = {
  'GET /api/v1/openapi.json': 'the document itself',
  'GET /docs': 'Swagger UI over the document',
  'GET /docs/assets/:file': "the reference UI's script and stylesheet",
  'GET /': 'the home page, for browsers',
  'GET /schemas/workflow-definition.json': 'a JSON Schema document, linked from the workflow install body',
  'POST /mcp/': 'the same endpoint as POST /mcp, documented there',
  'POST /operator/workspaces/:workspaceId/move': 'an operator route behind OPERATOR_SECRET, not part of the API (docs/operations.md)',
  'GET /console/assets/:file': "the console's script and stylesheet",
  ...Object.fromEntries(
    CONSOLE_PAGES.filter((page) => page.path !== '/').map((page) => [`GET ${page.path}`, 'a console page, for browsers (it calls the documented API)']),
  ),
  ...Object.fromEntries(
    [
      'GET /auth/sign-in',
      'POST /auth/sign-in',
      'GET /auth/sign-up',
      'POST /auth/sign-up',
      'GET /activate',
      'POST /activate',
      'GET /approve',
      'POST /approve',
    ].map((key) => [key, 'an HTML page and its form, for browsers']),
  ),
  ...Object.fromEntries(
    ['GET', 'DELETE', 'PUT', 'PATCH'].flatMap((method) =>
      ['/mcp', '/mcp/'].map((path) => [`${method} ${path}`, '405: the stateless MCP endpoint takes POST only']),
    ),
  ),
};

describe('the route-to-scope table', () => {
  it('lists exactly the mounted /api/v1 routes', () => {
    expect(Object.keys(ROUTE_ACCESS).sort()).toEqual(mountedApiRoutes());
  });

  it('is printed in docs/scopes.md as it is in the code (npm run docs:scopes writes it)', () => {
    expect(scopesDoc).toBe(scopesPage());
    expect(scopesDoc).toContain('| POST | `/api/v1/skills/:slug/run` | `tool:execute` |');
  });
});

describe('the MCP tool tables', () => {
  const pages: Record<string, string> = { 'docs/mcp.md': mcpDoc, 'docs/connectors.md': connectorsDoc };

  it('are printed in docs/mcp.md and docs/connectors.md as the capabilities declare them (npm run docs:tools writes them)', () => {
    for (const { page, areas } of TOOL_TABLES) expect(pages[page], page).toBe(withToolTable(pages[page]!, toolTable(areas)));
    expect(mcpDoc).toContain('| `execute-skill` | `slug`, `input`, `interface?`, `connector?`, `budget?` | `POST /api/v1/skills/:slug/run` |');
    expect(connectorsDoc).toContain('| `run-connector-action` | `connector`, `action`, `input?` | — |');
  });

  it('list every MCP tool once between them', () => {
    const listed = [...(mcpDoc + connectorsDoc).matchAll(/^\| `([a-z-]+)` \|/gm)].map((match) => match[1]).sort();
    expect(listed).toEqual(MCP_TOOLS.map((tool) => tool.name).sort());
  });
});

describe('GET /api/v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document describing every route with its request schema', async () => {
    const res = await call('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    // Every mounted route, not only /api/v1: OAuth, the signed streams, /api/events, /mcp.
    const undocumented = mountedRoutes().filter((key) => {
      const [method, path] = key.split(' ') as [string, string];
      return !res.body.paths[path.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];
    });
    expect(undocumented).toEqual(Object.keys(NOT_IN_OPENAPI).sort());
    expect(undocumented.filter((key) => key in ROUTE_ACCESS)).toEqual(['GET /api/v1/openapi.json']);
    const createKey = res.body.paths['/api/v1/api-keys'].post;
    expect(createKey.requestBody.content['application/json'].schema.required).toEqual(['name']);
    expect(createKey.responses['201']).toBeDefined();
  });

  it('names the origin it was fetched from as its server, and describes the workflow install body', async () => {
    const res = await call('/api/v1/openapi.json');
    expect(res.body.servers).toEqual([{ url: BASE, description: 'This service' }]);
    const install = res.body.paths['/api/v1/workflows/{slug}/install'].post;
    expect(install.requestBody.content['application/json'].schema.oneOf[0]).toEqual({ $ref: '#/components/schemas/WorkflowDefinition' });
    expect(install.requestBody.description).toContain('/schemas/workflow-definition.json');
    expect(res.body.components.schemas.WorkflowPredicate.oneOf).toHaveLength(6);
    expect(res.body.paths['/mcp/']).toBeUndefined();
    // A body the route can do without is not marked required.
    expect(res.body.paths['/api/v1/skills/{slug}/install'].post.requestBody.required).toBe(false);
    expect(install.requestBody.required).toBe(true);
  });

  it('is browsable at /docs from this origin alone: the page, its script and stylesheet, under a CSP without other sources', async () => {
    const res = await call('/docs');
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/https?:/);
    const html = String(res.body);
    expect(html).not.toMatch(/https?:\/\//);
    const sources = [...html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(sources).toEqual(['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/init.js']);
    for (const source of sources) expect((await call(source)).status).toBe(200);
    const bundle = await call('/docs/assets/swagger-ui-bundle.js');
    expect(bundle.headers.get('content-type')).toContain('text/javascript');
    expect(String(bundle.body)).toContain('SwaggerUIBundle');
    expect(String((await call('/docs/assets/init.js')).body)).toContain('"/api/v1/openapi.json"');
    // The package's other files (its own index.html, source maps) are not served.
    expect((await call('/docs/assets/index.html')).status).toBe(404);
    expect((await call('/docs/assets/swagger-ui-bundle.js.map')).status).toBe(404);
  });
});

describe('GET /', () => {
  it('is a page saying what the service is, linking the quickstart, the reference, the document, sign-in and naming the MCP endpoint', async () => {
    const res = await call('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'nonce-/);
    const html = String(res.body);
    for (const href of ['#quickstart', '/docs', '/api/v1/openapi.json', '/schemas/workflow-definition.json', '/auth/sign-in?next=/', '/auth/sign-up?next=/'])
      expect(html).toContain(`href="${href}"`);
    expect(html).toContain(`${BASE}/mcp`);
  });
});
