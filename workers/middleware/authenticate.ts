import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import { bearerTokenOf, resolvePrincipal } from '../auth/credentials';
import { mcpResourceOf } from '../auth/oauth/metadata';
import type { Principal } from '../auth/principal';
import { authorizeWithGrants } from '../auth/actor';
import { ROUTE_ACCESS, routeKey } from '../auth/route-scopes';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { hitRateLimit } from '../lib/rate-limit';

/** Spec 8: 100 requests per minute per API key or session user, on every `/api/v1/` route. */
export const API_RATE_LIMIT = 100;
export const API_RATE_WINDOW_MS = 60_000;

type Context = Parameters<Parameters<typeof createMiddleware<AppEnv>>[0]>[0];

/** The route pattern that will handle this request, e.g. `GET /api/v1/api-keys/:id/revoke`. */
function handlerRouteKey(c: Context): string | undefined {
  const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
  const route = matchedRoutes(c).find((r) => r.method === method && !r.path.endsWith('*'));
  return route && routeKey(method, route.path);
}

/**
 * RFC 8707: an access token works only at the resource it was issued for. The MCP endpoint takes
 * tokens for itself or for the whole service; the REST API only those for the whole service.
 * Grants that named no resource (all of them before audiences existed) are for the whole service.
 */
function audienceRefusal(principal: Principal, base: string, mcp: boolean): WrongAudience | null {
  if (principal.credential.type !== 'oauth') return null;
  const audience = principal.credential.resource ?? base;
  if (audience === base || (mcp && audience === mcpResourceOf(base))) return null;
  return new WrongAudience(audience);
}

/** A valid token presented where it was not issued for: its challenge says so (RFC 6750 3.1 `error_description`). */
export class WrongAudience extends AppError {
  constructor(audience: string) {
    super('UNAUTHORIZED', 401, `This access token was issued for ${audience}, not for this endpoint`);
  }
}

/**
 * Resolves the request's credential and counts the request against its rate limit (the
 * caller's IP when there is no valid credential), setting the `x-ratelimit-*` headers. One
 * path for REST and MCP, so both share a credential's limit. Answers the principal, or
 * undefined without a credential; a refused credential throws after it was counted.
 */
export async function identify(c: Context, options: { allowUnactivated?: boolean; mcp?: boolean } = {}): Promise<Principal | undefined> {
  let principal: Principal | undefined;
  let failure: unknown;
  try {
    principal = await resolvePrincipal(
      c.var.db,
      {
        apiKey: c.req.header('x-api-key'),
        sessionToken: c.req.header('x-auth-token'),
        bearerToken: bearerTokenOf(c.req.header('authorization')),
        workspaceSelector: c.req.header('x-workspace-id'),
      },
      c.var.origin,
      options,
    );
  } catch (error) {
    failure = error;
  }
  const wrongAudience = principal && audienceRefusal(principal, new URL(c.req.url).origin, options.mcp ?? false);
  if (wrongAudience) [principal, failure] = [undefined, wrongAudience];

  const subject = !principal
    ? `api:ip:${c.var.origin.ip ?? 'unknown'}`
    : principal.credential.type === 'api_key'
      ? `api:key:${principal.credential.apiKeyId}`
      : `api:user:${principal.userId}`;
  const decision = await hitRateLimit(c.env, subject, API_RATE_LIMIT, API_RATE_WINDOW_MS);
  const resetSeconds = Math.ceil(decision.resetMs / 1000);
  c.header('x-ratelimit-limit', String(decision.limit));
  c.header('x-ratelimit-remaining', String(decision.remaining));
  c.header('x-ratelimit-reset', String(resetSeconds));
  if (!decision.allowed) {
    throw new AppError('RATE_LIMITED', 429, `Rate limit of ${decision.limit} requests per minute exceeded`, {
      retryAfterSeconds: resetSeconds,
    });
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
    await authorizeWithGrants(c.var.db, access, principal, c.req.header(GRANT_TOKEN_HEADER));
  } catch (error) {
    // RFC 6750 3.1: an OAuth token lacking the route's scope learns which one.
    if (principal?.credential.type === 'oauth' && error instanceof AppError && typeof error.details?.scope === 'string') {
      c.header('www-authenticate', `Bearer error="insufficient_scope", scope="${error.details.scope}"`);
    }
    throw error;
  }
  c.set('principal', principal);
  await next();
});

// Defined beside Principal, so that middleware the capabilities use need not import this one.
export { principalOf } from '../auth/principal';
