import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { publish } from '../services/control-plane';

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * After a successful mutation on `/api/v1/`, tells the workspace's control plane to refresh
 * (spec 6.2 `cache-invalidate`), naming the resource group (`skills`, `secrets`, ...).
 */
export const announceChanges = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const principal = c.var.principal;
  if (!principal || !MUTATIONS.has(c.req.method) || c.res.status >= 400) return;
  const resource = c.req.path.split('/')[3] ?? '';
  const sent = publish(c.env, principal.workspaceId, [{ type: 'cache-invalidate', resource, method: c.req.method, path: c.req.path }]);
  try {
    c.executionCtx.waitUntil(sent);
  } catch {
    await sent;
  }
});
