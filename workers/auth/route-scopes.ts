import type { Hono } from 'hono';
import { AREAS } from '../capabilities';
import { billingArea } from '../capabilities/billing';
import { mountedPath } from '../capabilities/capability';
import { workflowsArea } from '../capabilities/workflows';
import type { stripeRoutes } from '../routes/billing';
import type { openApiRoutes } from '../routes/openapi';
import type { workflowStreamsRoutes } from '../routes/workflows';
import type { AppEnv } from '../env';
import type { RouteAccess } from './access';

declare const routeKeyBrand: unique symbol;
/**
 * `METHOD /path` of a mounted route, e.g. `GET /api/v1/api-keys/:id/revoke`. Only `routeKey`
 * makes one, from a route the router matched or declared: access is never looked up by a
 * string written by hand.
 */
export type RouteKey = string & { readonly [routeKeyBrand]: true };

export const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}` as RouteKey;

type Verb<Method> = Method extends `$${infer Name}` ? Uppercase<Name> : never;
/** `METHOD /path` of each route a router declares, read from its type. */
type RoutesOf<Router> =
  Router extends Hono<AppEnv, infer Schema, string> ? { [Path in keyof Schema & string]: `${Verb<keyof Schema[Path]>} ${Path}` }[keyof Schema & string] : never;

/**
 * Access to each route of a router written by hand and mounted at `mount`. The keys are checked
 * against the router's own routes: one that names no route, or a route left out, does not
 * compile (nor does a router whose routes its type does not show).
 */
const handWritten = <Router>(mount: string, access: [RoutesOf<Router>] extends [never] ? never : Record<RoutesOf<Router>, RouteAccess>) =>
  Object.entries<RouteAccess>(access).map(([key, entry]) => {
    const [method, path] = key.split(' ') as [string, string];
    return [routeKey(method, mountedPath(mount, path)), entry] as const;
  });

/** Access to the few routes written by hand: protocol endpoints rather than operations (every operation is a capability, workers/capabilities/). */
const HAND_WRITTEN = [
  ...handWritten<ReturnType<typeof openApiRoutes>>('/api/v1', { 'GET /openapi.json': { auth: 'public' } }),
  // Billing's protocol endpoints, served by hand beside its capabilities (workers/routes/billing.ts).
  ...handWritten<typeof stripeRoutes>(billingArea.mount, {
    // Stripe calls the webhook; the stripe-signature header is its credential.
    'POST /webhook': { auth: 'public' },
    // Reached by a browser redirect from Checkout, without credentials (spec 4.9).
    'GET /return/:outcome': { auth: 'public' },
  }),
  // The workflows' Server-Sent Events routes, written by hand (workers/routes/workflows.ts).
  ...handWritten<typeof workflowStreamsRoutes>(workflowsArea.mount, {
    'GET /runs/:runId/events': { auth: 'credential', scope: 'library:read' },
    'POST /:id/stream': { auth: 'credential', scope: 'workflow:run' },
  }),
];

/**
 * The route-to-scope table: the single source of truth for access to `/api/v1/`, the
 * capabilities' own access entries plus the routes written by hand. The auth middleware looks every
 * request up here (a route missing from it is refused), a test checks it against the mounted
 * routes, and `npm run docs:scopes` prints it in docs/scopes.md.
 */
export const ROUTE_ACCESS = Object.fromEntries([
  ...HAND_WRITTEN,
  ...AREAS.flatMap((area) =>
    area.capabilities.flatMap((c) => (c.http ? [[routeKey(c.http.method, mountedPath(area.mount, c.http.path)), c.access] as const] : [])),
  ),
]) as Readonly<Record<RouteKey, RouteAccess>>;
