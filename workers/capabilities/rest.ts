import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import { documented } from '../routes/openapi';
import type { Area, Capability, CapabilityContext, HttpView } from './capability';

const BODYLESS = new Set(['GET', 'DELETE']);

/** The capability context of a REST request: its database session, bindings and authenticated actor. */
export const restContext = (c: Context<AppEnv>): CapabilityContext => ({
  // Read when used: the shard is opened with the principal, which a public route has not.
  get db() {
    return c.var.db;
  },
  globalDb: c.var.globalDb,
  env: c.env,
  // Read when used: a public route has no caller, and its operations never ask for one.
  get actor() {
    return principalOf(c);
  },
  requestId: c.var.requestId,
  clientInterface: 'api',
  baseUrl: new URL(c.req.url).origin,
  requestOrigin: c.var.origin,
  source: 'api',
  idempotencyKey: c.req.header('idempotency-key'),
  grantToken: c.req.header(GRANT_TOKEN_HEADER),
  waitUntil: (work) => c.executionCtx.waitUntil(work),
});

const pick = (schema: z.ZodObject, keys: string[]) => schema.pick(Object.fromEntries(keys.map((key) => [key, true])) as never) as z.ZodObject;

/**
 * The validators of one REST view: path parameters, then the query (GET, DELETE) or the JSON
 * body, each from the input's own fields unless the view gives the wire shape. Each answers 400
 * INVALID_INPUT naming the field, and is what the OpenAPI document describes.
 */
function validators(area: Area, capability: Capability, http: HttpView<unknown>) {
  // A mount path's parameters (`/api/v1/skills/:slug/secrets`) reach the area's handlers too.
  const params = [...`${area.mount}${http.path}`.matchAll(/:(\w+)/g)].map((match) => match[1]!);
  const fieldOf = (param: string) => http.params?.[param] ?? param;
  const rest = Object.keys(capability.input.shape).filter((key) => !params.map(fieldOf).includes(key));
  const target = BODYLESS.has(http.method) && !http.body ? ('query' as const) : ('json' as const);
  const wire = target === 'query' ? http.query : http.body;
  const middleware: MiddlewareHandler[] = [...(http.before ?? [])];
  if (params.length) middleware.push(validate('param', z.object(Object.fromEntries(params.map((p) => [p, capability.input.shape[fieldOf(p)]!])))));
  // The whole input when no path parameter takes a field: zod refuses to pick from a refined object.
  const fields = rest.length === Object.keys(capability.input.shape).length ? capability.input : pick(capability.input, rest);
  if (wire || rest.length) {
    const check = validate(target, wire ?? fields);
    // A body the view describes itself is checked by a wrapper the OpenAPI generator does not read.
    middleware.push(http.requestBody ? (c, next) => check(c, next) : check);
  }
  const input = (c: Context<AppEnv>) => {
    const valid = (target: string) => c.req.valid(target as never) as Record<string, unknown>;
    const path = params.length ? valid('param') : {};
    return { ...Object.fromEntries(params.map((p) => [fieldOf(p), path[p]])), ...(wire || rest.length ? valid(target) : {}) };
  };
  return { middleware, input };
}

/** The REST routes of an area, one per capability with an HTTP view, in declaration order. */
export function capabilityRoutes(area: Area): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  for (const capability of area.capabilities) {
    const http = capability.http;
    if (!http) continue;
    const status = http.status ?? 200;
    const { middleware, input } = validators(area, capability, http);
    const summary = http.summary ?? capability.description.replace(/\.$/, '');
    router.on(
      http.method,
      http.path,
      documented(area.tag, summary, status, http.respond?.schema ?? capability.output, 'OK', http.requestBody),
      ...middleware,
      async (c) => {
        const output = await capability.run(restContext(c), input(c));
        return http.respond ? http.respond.send(c, output) : c.json(output as object, status);
      },
    );
  }
  return router;
}

/** Whether `inner` lies under `outer`'s mount path (`/api/v1/skills/:slug/secrets` under `/api/v1/skills`). */
const isUnder = (inner: Area, outer: Area) => inner.mount.startsWith(`${outer.mount}/`);

/**
 * Mounts every area's routes at its mount path: in the order listed, except that an area whose
 * mount lies under another's goes first. Hono runs the first route registered for a request,
 * so a nested area's routes win over any parameter route of the outer area that also matches.
 */
export function mountAreas(app: Hono<AppEnv>, areas: readonly Area[]): void {
  const ordered: Area[] = [];
  for (const area of areas) {
    const outer = ordered.findIndex((placed) => isUnder(area, placed));
    ordered.splice(outer === -1 ? ordered.length : outer, 0, area);
  }
  for (const area of ordered) app.route(area.mount, capabilityRoutes(area));
}
