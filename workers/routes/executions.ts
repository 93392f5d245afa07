import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { createStreamUrl } from '../services/execution-streams';
import { documented } from './openapi';

const IdParam = z.object({ id: z.string().min(1).max(40) });

export const executionRoutes = new Hono<AppEnv>().get(
  '/:id/stream-token',
  documented('Executions', 'A short-lived signed SSE URL; append lastSeq=<n> to resume after event n', 200, z.object({ sseUrl: z.string() })),
  validate('param', IdParam),
  async (c) =>
    c.json(await createStreamUrl(c.var.db, principalOf(c), c.req.valid('param').id, new URL(c.req.url).origin, c.env.SIGNING_SECRET)),
);
