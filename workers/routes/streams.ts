import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { unauthorized } from '../errors';
import { verifyStreamToken } from '../lib/signing';
import { heldStream } from '../lib/stream-slots';
import { documentedProtocol } from './openapi';

/**
 * Signed stream URLs (spec 4.3, 6.1). No API key or session: the token in the query is the
 * credential, checked before a single event is sent. The stream holds one of the event-stream
 * slots of the credential that asked for the URL while it is open.
 */
export const streamsRoutes = new Hono<AppEnv>().get(
  '/executions/:id',
  documentedProtocol(
    'Executions',
    "An execution's events, resumable with Last-Event-ID (the signed URL of stream-token)",
    'Server-Sent Events (WHATWG HTML), spec 6.1',
    200,
    'text/event-stream',
  ),
  async (c) => {
    const token = c.req.query('token');
    const claims = token ? await verifyStreamToken(c.env.SIGNING_SECRET, 'execution-stream', token) : null;
    if (!claims || claims.subject !== c.req.param('id')) throw unauthorized('The stream URL is invalid or has expired');
    return heldStream(c, claims.holder, () => c.env.EXECUTION_SESSION.getByName(claims.subject).fetch(c.req.raw));
  },
);
