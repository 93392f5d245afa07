import { AREAS } from '../capabilities';
import { capabilityRouteKey } from '../capabilities/capability';
import type { RouteAccess } from './access';

/** Access to the few routes written by hand: protocol endpoints rather than operations (every operation is a capability, workers/capabilities/). */
const ROUTE_TABLE: Record<string, RouteAccess> = {
  'GET /api/v1/openapi.json': { auth: 'public' },

  // Billing's protocol endpoints, served by hand beside its capabilities. Stripe calls the
  // webhook; the stripe-signature header is its credential.
  'POST /api/v1/billing/webhook': { auth: 'public' },
  // Reached by a browser redirect from Checkout, without credentials (spec 4.9).
  'GET /api/v1/billing/return/:outcome': { auth: 'public' },

  // The workflows' Server-Sent Events routes, written by hand (workers/routes/workflows.ts).
  'GET /api/v1/workflows/runs/:runId/events': { auth: 'credential', scope: 'library:read' },
  'POST /api/v1/workflows/:id/stream': { auth: 'credential', scope: 'workflow:run' },
};

/**
 * The route-to-scope table: the single source of truth for access to `/api/v1/`, the
 * capabilities' own access entries plus the table above. The auth middleware looks every
 * request up here (a route missing from it is refused), a test checks it against the mounted
 * routes, and `npm run docs:scopes` prints it in docs/scopes.md.
 */
export const ROUTE_ACCESS: Record<string, RouteAccess> = {
  ...ROUTE_TABLE,
  ...Object.fromEntries(AREAS.flatMap((area) => area.capabilities.flatMap((c) => (c.http ? [[capabilityRouteKey(area, c.http), c.access]] : [])))),
};

export const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
