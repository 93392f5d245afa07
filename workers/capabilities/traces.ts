import { z } from 'zod';
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
import { defineCapability, READ_ONLY, WRITE, type Area } from './capability';

const TraceId = z.object({ traceId: z.string().min(1).max(64).describe('The trace id') });
const byId = { id: 'traceId' };

/** Traces: the lineages of runs and chats, their turns, and how to continue them. */
export const tracesArea: Area = {
  mount: '/api/v1/traces',
  tag: 'Traces',
  capabilities: [
    defineCapability({
      name: 'list-traces',
      title: 'List traces',
      description: 'Traces of the workspace, newest first, with filters and an opaque cursor.',
      access: { auth: 'credential', scope: 'trace:read' },
      input: ListTracesQuery,
      output: z.object({ items: z.array(Trace), nextCursor: z.string().nullable() }),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/' },
      mcp: false,
      run: (ctx, query) => listTraces(ctx.db, ctx.actor, query),
    }),
    defineCapability({
      name: 'get-trace',
      title: 'Get a trace',
      description: 'One trace.',
      access: { auth: 'credential', scope: 'trace:read' },
      input: TraceId,
      output: Trace,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id', params: byId },
      mcp: false,
      run: (ctx, { traceId }) => getTrace(ctx.db, ctx.actor, traceId),
    }),
    defineCapability({
      name: 'list-trace-turns',
      title: 'List a trace’s turns',
      description: "The lineage's turns after afterSeq, resolved from the runs' logs and merged with appended turns.",
      access: { auth: 'credential', scope: 'trace:read' },
      input: TraceId.extend(TurnsQuery.shape),
      output: z.object({ items: z.array(Turn) }),
      annotations: READ_ONLY,
      http: {
        method: 'GET',
        path: '/:id/events',
        params: byId,
      },
      mcp: false,
      run: (ctx, { traceId, ...query }) => listTurns(ctx.db, ctx.env, ctx.actor, traceId, query),
    }),
    defineCapability({
      name: 'append-trace-turns',
      title: 'Append turns to a trace',
      description: 'Appends turns (x-agent-slug attributes them); a seq already used is 409 CONFLICT.',
      access: { auth: 'credential', scope: 'trace:write' },
      input: TraceId.extend(AppendBody.shape),
      output: z.object({ appended: z.number(), lastSeq: z.number() }),
      annotations: WRITE,
      http: {
        method: 'POST',
        path: '/:id/events',
        params: byId,
        status: 201,
        summary: 'Append turns (x-agent-slug attributes them); a seq already used is 409 CONFLICT',
      },
      mcp: false,
      run: (ctx, { traceId, ...body }) => appendTurns(ctx.db, ctx.env, ctx.actor, traceId, body),
    }),
    defineCapability({
      name: 'continue-trace',
      title: 'Continue a trace',
      description: 'How to continue the trace; starts nothing.',
      // Continue starts nothing: it only reads the trace.
      access: { auth: 'credential', scope: 'trace:read' },
      input: TraceId,
      output: Continuation,
      annotations: READ_ONLY,
      http: { method: 'POST', path: '/:id/continue', params: byId },
      mcp: false,
      run: (ctx, { traceId }) => continueTrace(ctx.db, ctx.actor, traceId),
    }),
  ],
};
