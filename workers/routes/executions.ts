import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { serviceCodeErrors } from '../middleware/legacy-errors';
import { validate } from '../middleware/validate';
import { ExecutionDetails, getExecutionDetails } from '../services/execution-details';
import { createStreamUrl } from '../services/execution-streams';
import {
  CancelResult,
  cancelExecution,
  createExecution,
  CreateExecutionBody,
  ExecutionStatus,
  followUp,
  FollowUpBody,
  FollowUpRun,
  HistoryItem,
  HistoryPage,
  listExecutions,
  ListExecutionsQuery,
  getExecutionStatus,
  IdleExecution,
  postEvents,
  PostEventsBody,
  StatusQuery,
} from '../services/executions';
import { cursorEnvelope, documented } from './openapi';

const IdParam = z.object({ id: z.string().min(1).max(40) });

const EventList = z.object({
  data: z.array(z.object({ id: z.string(), type: z.string(), sequence: z.number(), payload: z.record(z.string(), z.unknown()) })),
});

const History = z.union([HistoryPage, cursorEnvelope(HistoryItem)]);

export const executionsRoutes = new Hono<AppEnv>()
  .get(
    '/',
    documented('Executions', 'History: the offset form, or the cursor form when after_id or before_id is present', 200, History),
    validate('query', ListExecutionsQuery),
    async (c) => c.json(await listExecutions(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .post(
    '/:id/rerun',
    documented('Executions', 'Run the same skill again with new instructions, in the same lineage (errors carry details.serviceCode)', 200, FollowUpRun),
    serviceCodeErrors,
    validate('param', IdParam),
    validate('json', FollowUpBody),
    async (c) => c.json(await followUp(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json'), 'rerun')),
  )
  .post(
    '/:id/remix',
    documented('Executions', 'Run the same skill with new instructions as a new lineage (errors carry details.serviceCode)', 200, FollowUpRun),
    serviceCodeErrors,
    validate('param', IdParam),
    validate('json', FollowUpBody),
    async (c) => c.json(await followUp(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json'), 'remix')),
  )
  .post('/:id/cancel', documented('Executions', 'Interrupt a working execution', 200, CancelResult), validate('param', IdParam), async (c) =>
    c.json(await cancelExecution(c.var.db, c.env, principalOf(c), c.req.valid('param').id)),
  )
  .post(
    '/',
    documented('Executions', 'Create an idle execution of an installed skill; nothing runs yet', 201, IdleExecution),
    validate('json', CreateExecutionBody),
    async (c) => c.json(await createExecution(c.var.db, principalOf(c), c.req.valid('json')), 201),
  )
  .post(
    '/:id/events',
    documented('Executions', 'Send user.message (starts a run) or user.interrupt', 200, EventList),
    validate('param', IdParam),
    validate('json', PostEventsBody),
    async (c) => c.json(await postEvents(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json'))),
  )
  .get(
    '/:id',
    documented('Executions', 'One execution: its history item, token usage, time and artifacts', 200, ExecutionDetails),
    validate('param', IdParam),
    async (c) => c.json(await getExecutionDetails(c.var.db, principalOf(c), c.req.valid('param').id)),
  )
  .get(
    '/:id/status',
    documented('Executions', 'Status, output blocks (delta with blocksAfter), cost and time', 200, ExecutionStatus),
    validate('param', IdParam),
    validate('query', StatusQuery),
    async (c) => c.json(await getExecutionStatus(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('query').blocksAfter)),
  )
  .get(
    '/:id/stream-token',
    documented('Executions', 'A short-lived signed SSE URL; append lastSeq=<n> to resume after event n', 200, z.object({ sseUrl: z.string() })),
    validate('param', IdParam),
    async (c) => c.json(await createStreamUrl(c.var.db, c.env, principalOf(c), c.req.valid('param').id, new URL(c.req.url).origin)),
  );
