import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import {
  AppendBody,
  appendTurns,
  Continuation,
  continueTrace,
  getTrace,
  listTraces,
  ListTracesQuery,
  listTurns,
  Trace,
  Turn,
  TurnsQuery,
} from '../services/traces';
import { documented } from './openapi';

const IdParam = z.object({ id: z.string().min(1).max(64) });

export const tracesRoutes = new Hono<AppEnv>()
  .get(
    '/',
    documented(
      'Traces',
      'Traces of the workspace, newest first, with filters and an opaque cursor',
      200,
      z.object({ items: z.array(Trace), nextCursor: z.string().nullable() }),
    ),
    validate('query', ListTracesQuery),
    async (c) => c.json(await listTraces(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .get('/:id', documented('Traces', 'One trace', 200, Trace), validate('param', IdParam), async (c) =>
    c.json(await getTrace(c.var.db, principalOf(c), c.req.valid('param').id)),
  )
  .get(
    '/:id/events',
    documented(
      'Traces',
      "The lineage's turns after afterSeq, resolved from the runs' logs and merged with appended turns",
      200,
      z.object({ items: z.array(Turn) }),
    ),
    validate('param', IdParam),
    validate('query', TurnsQuery),
    async (c) => c.json(await listTurns(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('query'))),
  )
  .post(
    '/:id/events',
    documented(
      'Traces',
      'Append turns (x-agent-slug attributes them); a seq already used is 409 CONFLICT',
      201,
      z.object({ appended: z.number(), lastSeq: z.number() }),
    ),
    validate('param', IdParam),
    validate('json', AppendBody),
    async (c) => c.json(await appendTurns(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json')), 201),
  )
  .post('/:id/continue', documented('Traces', 'How to continue the trace; starts nothing', 200, Continuation), validate('param', IdParam), async (c) =>
    c.json(await continueTrace(c.var.db, principalOf(c), c.req.valid('param').id)),
  );
