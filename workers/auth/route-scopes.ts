import { AREAS } from '../capabilities';
import { capabilityRouteKey } from '../capabilities/capability';
import type { Db } from '../env';
import type { RouteAccess } from './access';
import { authorizeWithGrants, type Actor } from './actor';

/** Access to the routes not yet declared as capabilities (workers/capabilities/). */
const ROUTE_TABLE: Record<string, RouteAccess> = {
  'GET /api/v1/openapi.json': { auth: 'public' },

  'GET /api/v1/profile': { auth: 'credential', scope: 'profile:read' },
  'PATCH /api/v1/profile': { auth: 'credential', scope: 'profile:write' },

  'GET /api/v1/workspaces': { auth: 'credential', scope: 'profile:read' },
  'POST /api/v1/workspaces': { auth: 'credential', scope: 'profile:write' },
  'GET /api/v1/workspaces/current': { auth: 'credential', scope: 'profile:read' },
  'PUT /api/v1/workspaces/current': { auth: 'credential', scope: 'profile:write' },
  'GET /api/v1/workspaces/:id/members': { auth: 'credential', scope: 'profile:search' },
  'GET /api/v1/workspaces/:id/invitations': { auth: 'credential', scope: 'profile:search' },
  'POST /api/v1/workspaces/:id/invitations': { auth: 'credential', scope: 'profile:write' },
  'POST /api/v1/invitations/accept': { auth: 'session' },

  'GET /api/v1/api-keys': { auth: 'credential', scope: 'agent:list' },
  'POST /api/v1/api-keys': { auth: 'credential', scope: 'profile:write' },
  'POST /api/v1/api-keys/:id/revoke': { auth: 'credential', scope: 'profile:write' },

  // Spec 3.3-3.5, 5.5: agents ask for scopes with their key (unactivated keys too); the key's
  // owner decides in the app.
  'POST /api/v1/agents/connect': { auth: 'agent' },
  'GET /api/v1/agents/connect/poll/:consentId': { auth: 'agent' },
  'POST /api/v1/agents/connect/by-code': { auth: 'session' },
  'POST /api/v1/agents/consents/:consentId/approve': { auth: 'session' },
  'POST /api/v1/agents/consents/:consentId/deny': { auth: 'session' },
  'POST /api/v1/agents/request-permission': { auth: 'agent' },
  'GET /api/v1/agents/request-permission/poll/:requestId': { auth: 'agent' },
  'GET /api/v1/agents/permission-requests': { auth: 'session' },
  'POST /api/v1/agents/permission-requests/:requestId/approve': { auth: 'session' },
  'POST /api/v1/agents/permission-requests/:requestId/deny': { auth: 'session' },
  'DELETE /api/v1/agents/:keyId/scopes/:scope': { auth: 'credential', scope: 'profile:write' },

  // Spec 5.2: the device flow. The agent has no credential yet: the device code is its secret.
  'POST /api/v1/activate': { auth: 'public' },
  'POST /api/v1/activate/poll': { auth: 'public' },
  'GET /api/v1/activate/lookup': { auth: 'session' },
  'POST /api/v1/activate/confirm': { auth: 'session' },
  'POST /api/v1/activate/deny': { auth: 'session' },

  'GET /api/v1/audit-logs': { auth: 'credential', scope: 'activity:read' },
  'GET /api/v1/activity': { auth: 'credential', scope: 'activity:read' },

  'GET /api/v1/marketplace/skills': { auth: 'public' },
  'GET /api/v1/marketplace/skills/categories': { auth: 'public' },
  'GET /api/v1/marketplace/skills/:slug': { auth: 'public' },
  'GET /api/v1/marketplace/skills/:slug/bundle': { auth: 'public' },

  'GET /api/v1/skills': { auth: 'credential', scope: 'library:read' },
  'PUT /api/v1/skills/:slug': { auth: 'credential', scope: 'library:write' },
  'POST /api/v1/skills/:slug/install': { auth: 'credential', scope: 'library:write' },
  'POST /api/v1/skills/:slug/uninstall': { auth: 'credential', scope: 'library:write' },
  'GET /api/v1/skills/:slug/versions': { auth: 'credential', scope: 'library:read' },
  'POST /api/v1/skills/:slug/versions/:versionNumber/restore': { auth: 'credential', scope: 'library:write' },
  'POST /api/v1/install': { auth: 'credential', scope: 'library:write' },
  'GET /api/v1/skills/:slug/secrets': { auth: 'credential', scope: 'library:read' },
  'POST /api/v1/skills/:slug/secrets': { auth: 'credential', scope: 'library:write' },
  'DELETE /api/v1/skills/:slug/secrets/:id': { auth: 'credential', scope: 'library:write' },

  'GET /api/v1/secrets': { auth: 'credential', scope: 'library:read' },
  'POST /api/v1/secrets': { auth: 'credential', scope: 'library:write' },
  'PATCH /api/v1/secrets/:id': { auth: 'credential', scope: 'library:write' },
  'DELETE /api/v1/secrets/:id': { auth: 'credential', scope: 'library:write' },

  'POST /api/v1/skills/:slug/run': { auth: 'credential', scope: 'tool:execute' },

  'GET /api/v1/billing/balance': { auth: 'credential', scope: 'billing:read' },
  'GET /api/v1/billing/transactions': { auth: 'credential', scope: 'billing:read' },
  'GET /api/v1/billing/packs': { auth: 'credential', scope: 'billing:read' },
  // Spec 5.4 has no billing write scope: spending the user's money is a sensitive profile write.
  'POST /api/v1/billing/purchase': { auth: 'credential', scope: 'profile:write' },
  // Stripe calls it; the stripe-signature header is its credential.
  'POST /api/v1/billing/webhook': { auth: 'public' },
  // Reached by a browser redirect from Checkout, without credentials (spec 4.9).
  'GET /api/v1/billing/return/:outcome': { auth: 'public' },
  'GET /api/v1/billing/subscription/tier': { auth: 'credential', scope: 'billing:read' },
  'GET /api/v1/billing/subscription/info': { auth: 'credential', scope: 'billing:read' },
  'GET /api/v1/billing/publishable-key': { auth: 'credential', scope: 'billing:read' },

  'GET /api/v1/byok': { auth: 'credential', scope: 'billing:read' },
  // Spec 5.4 has no billing write scope: storing a key that pays for runs is a profile change.
  'PUT /api/v1/byok': { auth: 'credential', scope: 'profile:write' },
  'DELETE /api/v1/byok': { auth: 'credential', scope: 'profile:write' },

  // The workflows' Server-Sent Events routes, written by hand (workers/routes/workflows.ts).
  'GET /api/v1/workflows/runs/:runId/events': { auth: 'credential', scope: 'library:read' },
  'POST /api/v1/workflows/:id/stream': { auth: 'credential', scope: 'workflow:run' },

  'GET /api/v1/traces': { auth: 'credential', scope: 'trace:read' },
  'GET /api/v1/traces/:id': { auth: 'credential', scope: 'trace:read' },
  'GET /api/v1/traces/:id/events': { auth: 'credential', scope: 'trace:read' },
  'POST /api/v1/traces/:id/events': { auth: 'credential', scope: 'trace:write' },
  // Continue starts nothing: it only reads the trace (spec 4.7 rule 4).
  'POST /api/v1/traces/:id/continue': { auth: 'credential', scope: 'trace:read' },

  'POST /api/v1/threads': { auth: 'credential', scope: 'thread:write' },
  'GET /api/v1/threads': { auth: 'credential', scope: 'thread:read' },
  'POST /api/v1/threads/:id/messages': { auth: 'credential', scope: 'thread:write' },
  'GET /api/v1/threads/:id/messages': { auth: 'credential', scope: 'thread:read' },

  'GET /api/v1/events/subscribe-url': { auth: 'credential', scope: 'channel:read' },
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

/**
 * What a run's tool or step must pass before it acts: the check of the REST route it mirrors
 * (`route`, a key of the route-to-scope table), made for the run's actor.
 */
export async function authorizeRoute(db: Db, actor: Actor, route: string): Promise<void> {
  const access = ROUTE_ACCESS[route];
  if (!access) throw new Error(`Route ${route} is missing from ROUTE_ACCESS`);
  await authorizeWithGrants(db, access, actor, undefined);
}

export const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
