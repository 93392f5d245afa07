import { Hono } from 'hono';
import { hasScope } from '../auth/scopes';
import type { AppEnv } from '../env';
import { AppError, forbidden, unauthorized } from '../errors';
import { identify } from '../middleware/authenticate';
import { verifyStreamToken } from '../lib/signing';
import { heldStream, releaseStreamSlot, STREAM_SLOT_HEADER, streamHolderOf, takeStreamSlot } from '../lib/stream-slots';
import { documentedProtocol } from './openapi';

/** The scope that opens the workspace's real-time channels (spec 5.4 `channel:read`). */
const CHANNEL_SCOPE = 'channel:read';

/**
 * The control-plane WebSocket on `{control_url}`. No API key or session: the signed token is the
 * credential, checked here, before the upgrade reaches the channel (tampered or expired: 401).
 * The socket takes one of the WebSocket slots of the credential that asked for the URL (all
 * taken: 429); the channel holds it while the socket is open.
 */
export const controlRoutes = new Hono<AppEnv>().get(
  '/ws',
  documentedProtocol(
    'Events',
    "The workspace's control plane (the signed URL of subscribe-url)",
    'WebSocket (RFC 6455), JSON text frames of spec 6.2',
    101,
    'application/json',
  ),
  async (c) => {
    const token = c.req.query('token');
    const claims = token ? await verifyStreamToken(c.env.SIGNING_SECRET, 'control-channel', token) : null;
    if (!claims || claims.subject !== claims.workspaceId) throw unauthorized('The control-plane URL is invalid or has expired');
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket')
      throw new AppError('INVALID_INPUT', 426, 'Expected a WebSocket upgrade', { field: 'upgrade', rule: 'websocket' });
    const slot = await takeStreamSlot(c.env, 'websocket', claims.holder);
    const headers = new Headers(c.req.raw.headers);
    headers.set(STREAM_SLOT_HEADER, JSON.stringify(slot));
    const response = await c.env.WORKSPACE_CHANNEL.getByName(claims.workspaceId)
      .fetch(c.req.url, { headers })
      .catch((error: unknown) => {
        c.executionCtx.waitUntil(releaseStreamSlot(c.env, slot));
        throw error;
      });
    if (response.status !== 101) c.executionCtx.waitUntil(releaseStreamSlot(c.env, slot));
    return response;
  },
);

/**
 * GET /api/events (spec 4.11, 6.3): Server-Sent Events of the workspace's executions,
 * `event: execution-state`. The API key comes in the `apiKey` query (EventSource cannot set
 * headers) or `x-api-key`; a session token or access token works too. `sources` filters by the
 * executions' source (comma-separated, e.g. `api,mcp`). The credential is checked and counted
 * as on `/api/v1` (rate limit, an access token only for the REST API's audience), and the
 * stream holds one of its event-stream slots while open.
 */
export const apiEventsRoutes = new Hono<AppEnv>().get(
  '/',
  documentedProtocol(
    'Events',
    'execution-state events of the workspace (apiKey query or x-api-key; sources filter)',
    'Server-Sent Events (WHATWG HTML), spec 6.3',
    200,
    'text/event-stream',
  ),
  async (c) => {
    const principal = await identify(c, { apiKey: c.req.query('apiKey') });
    if (!principal) throw unauthorized();
    if (!hasScope(principal.scopes, CHANNEL_SCOPE)) throw forbidden(`This credential lacks the scope "${CHANNEL_SCOPE}"`, { scope: CHANNEL_SCOPE });
    const sources = c.req.query('sources');
    const url = `https://channel/events${sources ? `?sources=${encodeURIComponent(sources)}` : ''}`;
    const response = await heldStream(c, streamHolderOf(principal), (signal) =>
      c.env.WORKSPACE_CHANNEL.getByName(principal.workspaceId).fetch(url, { signal }),
    );
    // Headers set on the context (x-ratelimit-*) are not on a Response returned as is.
    for (const [name, value] of c.res.headers) if (name.startsWith('x-ratelimit-')) response.headers.set(name, value);
    return response;
  },
);
