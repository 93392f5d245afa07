import { describe, expect, it } from 'vitest';
import { call } from '../helpers/api';

/**
 * Every route the interface specification lists in its endpoint tables, as it writes them. The
 * /api/v1 ones are mounted from the capabilities' areas, the others by hand.
 */
const SPEC_ROUTES = `
DELETE /api/v1/agents/:keyId/scopes/:scope
DELETE /api/v1/artifacts/:id
DELETE /api/v1/byok
DELETE /api/v1/secrets/:id
DELETE /api/v1/skills/:slug/secrets/:id
DELETE /api/v1/workflows/:slug
DELETE /api/v1/workflows/queue/:runId
GET /api/events
GET /api/v1/activate/lookup
GET /api/v1/activity
GET /api/v1/agents/connect/poll/:consentId
GET /api/v1/agents/request-permission/poll/:requestId
GET /api/v1/api-keys
GET /api/v1/artifacts
GET /api/v1/artifacts/:id
GET /api/v1/artifacts/:id/download
GET /api/v1/audit-logs
GET /api/v1/billing/balance
GET /api/v1/billing/packs
GET /api/v1/billing/publishable-key
GET /api/v1/billing/return/:outcome
GET /api/v1/billing/subscription/info
GET /api/v1/billing/subscription/tier
GET /api/v1/billing/transactions
GET /api/v1/byok
GET /api/v1/events/subscribe-url
GET /api/v1/executions
GET /api/v1/executions/:id/status
GET /api/v1/executions/:id/stream-token
GET /api/v1/marketplace/skills
GET /api/v1/marketplace/skills/:slug
GET /api/v1/marketplace/skills/categories
GET /api/v1/memory
GET /api/v1/profile
GET /api/v1/secrets
GET /api/v1/skills
GET /api/v1/skills/:slug/secrets
GET /api/v1/skills/:slug/versions
GET /api/v1/traces
GET /api/v1/traces/:id
GET /api/v1/traces/:id/events
GET /api/v1/workflows
GET /api/v1/workflows/:slug
GET /api/v1/workflows/definitions
GET /api/v1/workflows/queue
GET /api/v1/workflows/runs
GET /api/v1/workflows/runs/:runId
GET /api/v1/workflows/runs/:runId/events
GET /api/v1/workspaces
GET /api/v1/workspaces/:id/members
GET /api/v1/workspaces/current
GET /auth/.well-known/openid-configuration
GET /auth/jwks
GET /auth/oauth2/authorize
GET /auth/oauth2/userinfo
PATCH /api/v1/profile
PATCH /api/v1/secrets/:id
POST /api/v1/activate
POST /api/v1/activate/confirm
POST /api/v1/activate/deny
POST /api/v1/activate/poll
POST /api/v1/agents/connect
POST /api/v1/agents/connect/by-code
POST /api/v1/agents/request-permission
POST /api/v1/api-keys
POST /api/v1/api-keys/:id/revoke
POST /api/v1/billing/purchase
POST /api/v1/executions
POST /api/v1/executions/:id/cancel
POST /api/v1/executions/:id/events
POST /api/v1/executions/:id/rerun
POST /api/v1/secrets
POST /api/v1/skills/:slug/install
POST /api/v1/skills/:slug/run
POST /api/v1/skills/:slug/secrets
POST /api/v1/skills/:slug/uninstall
POST /api/v1/skills/:slug/versions/:versionNumber/restore
POST /api/v1/traces/:id/continue
POST /api/v1/traces/:id/events
POST /api/v1/workflows/:id/launch
POST /api/v1/workflows/:id/stream
POST /api/v1/workflows/:slug/install
POST /api/v1/workflows/:slug/uninstall
POST /api/v1/workflows/install-from-artifact
POST /api/v1/workflows/runs/:runId/cancel
POST /api/v1/workflows/runs/:runId/resume
POST /api/v1/workspaces
POST /api/v1/workspaces/:id/invitations
POST /auth/oauth2/register
POST /auth/oauth2/revoke
POST /auth/oauth2/token
POST /mcp/
PUT /api/v1/byok
PUT /api/v1/memory
PUT /api/v1/workspaces/current
`
  .trim()
  .split('\n');

let requests = 0;

describe('the routes of the specification', () => {
  it('each reach a handler: none is answered by the 404 for a path no route serves', async () => {
    const unrouted: string[] = [];
    for (const route of SPEC_ROUTES) {
      const [method, pattern] = route.split(' ') as [string, string];
      const path = pattern.replace(/:\w+/g, 'x');
      // Without a credential, from an address of its own: the route's access check or its handler answers, never the rate limit.
      const res = await call(path, { method, headers: { 'cf-connecting-ip': `2001:db8:38:${(++requests).toString(16)}::1` } });
      if (res.status === 404 && res.body?.error?.message === `No route for ${method} ${path}`) unrouted.push(route);
    }
    expect(unrouted).toEqual([]);
  });
});
