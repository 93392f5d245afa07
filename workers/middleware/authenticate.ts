import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import { admit, refusalError, WrongAudience } from '../auth/credential-gate';
import { bearerTokenOf, hashPresented } from '../auth/credentials';
import { mcpResourceOf } from '../auth/oauth/metadata';
import type { Principal } from '../auth/principal';
import { authorizeWithGrants } from '../auth/actor';
import { ROUTE_ACCESS, routeKey, type RouteKey } from '../auth/route-scopes';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import type { AppEnv } from '../env';
import { AppError, workspaceMoving } from '../errors';
import { addressKey } from '../lib/client-address';
import { hitRateLimit, type RateDecision } from '../lib/rate-limit';
import { useShard } from './request-context';

/** Spec 8: 100 requests per minute per API key or session user, on every `/api/v1/` route. */
export const API_RATE_LIMIT = 100;
export const API_RATE_WINDOW_MS = 60_000;

type Context = Parameters<Parameters<typeof createMiddleware<AppEnv>>[0]>[0];

/** The route pattern that will handle this request, e.g. `GET /api/v1/api-keys/:id/revoke`. */
function handlerRouteKey(c: Context): RouteKey | undefined {
  const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
  const route = matchedRoutes(c).find((r) => r.method === method && !r.path.endsWith('*'));
  return route && routeKey(method, route.path);
}

export interface IdentifyOptions {
  allowUnactivated?: boolean;
  mcp?: boolean;
  /** An API key presented outside `x-api-key` (the `apiKey` query of `/api/events`, for EventSource). */
  apiKey?: string;
  /** Requests this one counts for: each call of an MCP batch counts (default 1). */
  weight?: number;
}

/**
 * Resolves the request's credential and counts the request against its rate limit, both in one
 * call to the owner's CredentialGate (the caller's IP is counted when there is no valid
 * credential), setting the `x-ratelimit-*` headers. One
 * path for REST, MCP and `/api/events`, so all share a credential's limit. Answers the principal, or
 * undefined without a credential; a refused credential throws after it was counted.
 */
export async function identify(c: Context, options: IdentifyOptions = {}): Promise<Principal | undefined> {
  let principal: Principal | undefined;
  let decision: RateDecision | undefined;
  let failure: unknown;
  try {
    const credential = await hashPresented({
      apiKey: options.apiKey ?? c.req.header('x-api-key'),
      sessionToken: c.req.header('x-auth-token'),
      bearerToken: bearerTokenOf(c.req.header('authorization')),
      workspaceSelector: c.req.header('x-workspace-id'),
    });
    if (credential) {
      // RFC 8707: an access token works only at the resource it was issued for. The MCP endpoint
      // takes tokens for itself or for the whole service; the REST API only those for the whole
      // service. Grants that named no resource (all of them before audiences existed) are for the whole service.
      const base = new URL(c.req.url).origin;
      const answer = await admit(c.env, c.var.globalDb, {
        credential,
        allowUnactivated: options.allowUnactivated ?? false,
        audiences: options.mcp ? [base, mcpResourceOf(base)] : [base],
        limit: API_RATE_LIMIT,
        windowMs: API_RATE_WINDOW_MS,
        weight: options.weight,
      });
      if (answer.ok) {
        [principal, decision] = [{ ...answer.principal, origin: c.var.origin }, answer.decision];
        useShard(c, principal.shard, principal.fenced);
      } else failure = refusalError(answer.refusal);
    }
  } catch (error) {
    failure = error;
  }
  // A valid credential was counted by its gate; anything else counts against the caller's IP.
  decision ??= await hitRateLimit(c.env, `api:address:${addressKey(c.var.origin.ip)}`, API_RATE_LIMIT, API_RATE_WINDOW_MS);
  const resetSeconds = Math.ceil(decision.resetMs / 1000);
  c.header('x-ratelimit-limit', String(decision.limit));
  c.header('x-ratelimit-remaining', String(decision.remaining));
  c.header('x-ratelimit-reset', String(resetSeconds));
  if (!decision.allowed) {
    const weight = principal ? (options.weight ?? 1) : 1;
    const message =
      weight > 1
        ? `This batch of ${weight} calls does not fit in the rate limit: ${decision.remaining} of ${decision.limit} requests left this minute`
        : `Rate limit of ${decision.limit} requests per minute exceeded`;
    throw new AppError('RATE_LIMITED', 429, message, { retryAfterSeconds: resetSeconds });
  }
  if (failure) {
    // RFC 6750 3.1: a refused bearer token is named in the challenge.
    if (failure instanceof AppError && failure.status === 401 && c.req.header('authorization')) {
      c.header(
        'www-authenticate',
        failure instanceof WrongAudience ? `Bearer error="invalid_token", error_description="${failure.message}"` : 'Bearer error="invalid_token"',
      );
    }
    throw failure;
  }
  return principal;
}

/** For `/api/v1/*`: identifies the caller, then checks the route-to-scope table. */
export const authenticate = createMiddleware<AppEnv>(async (c, next) => {
  const key = handlerRouteKey(c);
  if (key === undefined) return next(); // no such route: 404 NOT_FOUND, credential or not
  const access = ROUTE_ACCESS[key];
  if (!access) throw new Error(`Route ${key} is missing from ROUTE_ACCESS`);
  const principal = await identify(c, { allowUnactivated: access.auth === 'agent' });
  try {
    await authorizeWithGrants(c.var.globalDb, access, principal, c.req.header(GRANT_TOKEN_HEADER));
  } catch (error) {
    // RFC 6750 3.1: an OAuth token lacking the route's scope learns which one.
    if (principal?.credential.type === 'oauth' && error instanceof AppError && typeof error.details?.scope === 'string') {
      c.header('www-authenticate', `Bearer error="insufficient_scope", scope="${error.details.scope}"`);
    }
    throw error;
  }
  // A move fencing the workspace's writes: a write is refused before it starts (the shard opened
  // for it refuses writes too, for a read that would write).
  if (principal?.fenced && c.req.method !== 'GET' && c.req.method !== 'HEAD') throw workspaceMoving();
  c.set('principal', principal);
  await next();
});
