import { Hono } from 'hono';
import { z } from 'zod';
import { bearerTokenOf } from '../auth/credentials';
import type { AppEnv } from '../env';
import { invalidInput, unauthorized } from '../errors';
import { timingSafeEqual } from '../lib/crypto';
import { moveWorkspace } from '../services/workspace-move';

const MoveBody = z.object({
  shard: z.number().int().min(1),
  /** How long to wait for requests already under way after each directory change (default 5 s). */
  drainMs: z.number().int().min(0).max(60_000).optional(),
});

/**
 * Operator routes, for `npm run` commands against a local or deployed service, behind the
 * `OPERATOR_SECRET` secret sent as `Authorization: Bearer <secret>`. Without the secret set they
 * answer 404 like any unknown path: a service that never configured one exposes nothing here.
 * Not part of the API (no OpenAPI entry, no scopes).
 */
export const operatorRoutes = new Hono<AppEnv>()
  .use(async (c, next) => {
    const secret = c.env.OPERATOR_SECRET;
    if (!secret) return c.notFound();
    const presented = bearerTokenOf(c.req.header('authorization'));
    if (presented === undefined || !timingSafeEqual(presented, secret))
      throw unauthorized('The operator secret is required (Authorization: Bearer <OPERATOR_SECRET>)');
    await next();
  })
  /** Moves a workspace to another shard, or finishes a move a crash interrupted (docs/operations.md, Moving a workspace). */
  // Validated here, not by the API's validator, which would list the route in the OpenAPI document.
  .post('/workspaces/:workspaceId/move', async (c) => {
    const parsed = MoveBody.safeParse(await c.req.json().catch(() => undefined));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw invalidInput(
        issue.path.length ? issue.path.map(String).join('.') : 'body',
        issue.code,
        'The body must be {"shard": <number of the target shard>, "drainMs"?: <milliseconds>}',
      );
    }
    const { shard, drainMs } = parsed.data;
    return c.json(await moveWorkspace(c.env, c.req.param('workspaceId'), shard, { drainMs }));
  });
