import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { optionalJsonBody, validate } from '../middleware/validate';
import { heldStream, streamHolderOf } from '../lib/stream-slots';
import { runEvents, RunEventsQuery, streamWorkflow, StreamBody } from '../services/workflow-streams';
import { documented } from './openapi';

const RunParam = z.object({ runId: z.string().min(1).max(100) });
const IdParam = z.object({ id: z.string().min(1).max(200) });

/**
 * The workflows' two Server-Sent Events routes (spec 4.8), mounted under the workflows area's
 * path after its operations (workers/capabilities/workflows.ts). They stay written by hand:
 * their answer is a stream that follows the run until the client goes away (the request's
 * abort signal) and resumes after a Last-Event-ID header, which only the HTTP request carries;
 * neither is an MCP or agent-run tool. Each stream holds one of the credential's event-stream
 * slots while open.
 */
export const workflowStreamsRoutes = new Hono<AppEnv>()
  .get(
    '/runs/:runId/events',
    documented(
      'Workflows',
      'Server-Sent Events: workflow-snapshot frames; with changes=true also the run’s change log (after lastSeq or Last-Event-ID)',
      200,
      z.string(),
    ),
    validate('param', RunParam),
    validate('query', RunEventsQuery),
    async (c) => {
      const query = c.req.valid('query');
      // EventSource sends the last change's seq back as Last-Event-ID when it reconnects.
      const lastSeq = query.lastSeq ?? RunEventsQuery.shape.lastSeq.safeParse(c.req.header('last-event-id')).data ?? 0;
      const changes = query.changes === 'true' ? { lastSeq } : null;
      const principal = principalOf(c);
      return heldStream(c, streamHolderOf(principal), (signal) => runEvents(c.var.db, c.env, principal, c.req.valid('param').runId, changes, signal));
    },
  )
  .post(
    '/:id/stream',
    documented('Workflows', 'Launch or resume with an AI-SDK UI message stream', 200, z.string()),
    validate('param', IdParam),
    optionalJsonBody,
    validate('json', StreamBody),
    async (c) => {
      const principal = principalOf(c);
      return heldStream(c, streamHolderOf(principal), (signal) =>
        streamWorkflow(c.var.db, c.env, principal, c.req.valid('param').id, c.req.valid('json'), signal),
      );
    },
  );
