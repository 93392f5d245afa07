import { describe, expect, it } from 'vitest';
import readme from '../../README.md?raw';
import { createApp } from '../../workers/app';
import { ROUTE_ACCESS, routeKey, type RouteAccess } from '../../workers/auth/route-scopes';
import { call } from '../helpers/api';

const mountedApiRoutes = () =>
  [...new Set(createApp().routes.filter((r) => r.method !== 'ALL' && r.path.startsWith('/api/v1/')).map((r) => routeKey(r.method, r.path)))].sort();

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
    for (const key of Object.keys(ROUTE_ACCESS)) {
      const [method, path] = key.split(' ') as [string, string];
      if (path === '/api/v1/openapi.json') continue;
      const openapiPath = path.replace(/:(\w+)/g, '{$1}');
      expect(res.body.paths[openapiPath]?.[method.toLowerCase()], key).toBeDefined();
    }
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
