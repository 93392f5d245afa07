import { describe, expect, it } from 'vitest';
import readme from '../../README.md?raw';
import { createApp } from '../../workers/app';
import { ROUTE_ACCESS, routeKey, type RouteAccess } from '../../workers/auth/route-scopes';
import { call } from '../helpers/api';

const mountedRoutes = () => [...new Set(createApp().routes.filter((r) => r.method !== 'ALL').map((r) => routeKey(r.method, r.path)))].sort();
const mountedApiRoutes = () => mountedRoutes().filter((key) => key.split(' ')[1]!.startsWith('/api/v1/'));

/** Mounted routes the OpenAPI document leaves out, and why. */
const NOT_IN_OPENAPI: Record<string, string> = {
  'GET /api/v1/openapi.json': 'the document itself',
  'GET /docs': 'Swagger UI over the document',
  ...Object.fromEntries(
    ['GET /auth/sign-in', 'POST /auth/sign-in', 'GET /auth/sign-up', 'POST /auth/sign-up', 'GET /activate', 'POST /activate', 'GET /approve', 'POST /approve'].map((key) => [
      key,
      'an HTML page and its form, for browsers',
    ]),
  ),
  ...Object.fromEntries(
    ['GET', 'DELETE', 'PUT', 'PATCH'].flatMap((method) => ['/mcp', '/mcp/'].map((path) => [`${method} ${path}`, '405: the stateless MCP endpoint takes POST only'])),
  ),
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

/** The README's route-to-scope table, rendered from ROUTE_ACCESS. */
const renderTable = () =>
  [
    '| Method | Path | Scope |',
    '|---|---|---|',
    ...Object.entries(ROUTE_ACCESS).map(([key, access]) => {
      const [method, path] = key.split(' ');
      return `| ${method} | \`${path}\` | ${describeAccess(access)} |`;
    }),
  ].join('\n');

describe('the route-to-scope table', () => {
  it('lists exactly the mounted /api/v1 routes', () => {
    expect(Object.keys(ROUTE_ACCESS).sort()).toEqual(mountedApiRoutes());
  });

  it('is printed in README.md as it is in the code', () => {
    const table = renderTable();
    expect(readme.includes(table), `README.md must contain:\n${table}`).toBe(true);
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
    expect(Object.keys(ROUTE_ACCESS).filter((key) => undocumented.includes(key))).toEqual(['GET /api/v1/openapi.json']);
    const createKey = res.body.paths['/api/v1/api-keys'].post;
    expect(createKey.requestBody.content['application/json'].schema.required).toEqual(['name']);
    expect(createKey.responses['201']).toBeDefined();
  });

  it('is browsable at /docs', async () => {
    const res = await call('/docs');
    expect(res.status).toBe(200);
    expect(String(res.body)).toContain('/api/v1/openapi.json');
  });
});
