import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { optionalJsonBody, readJsonBody, validate } from '../middleware/validate';
import {
  cancelRun,
  definitionFromBody,
  DefinitionItem,
  dequeueRun,
  getRun,
  getWorkflow,
  installFromArtifact,
  installWorkflow,
  LaunchBody,
  launchWorkflow,
  listDefinitions,
  listQueue,
  listRuns,
  listWorkflows,
  ResumeBody,
  resumeRun,
  RunRecord,
  RunsQuery,
  uninstallWorkflow,
  WorkflowRecord,
  WorkflowSlug,
} from '../services/workflows';
import { runEvents, RunEventsQuery, streamWorkflow, StreamBody } from '../services/workflow-streams';
import { documented, workflowDefinitionBody } from './openapi';

const SlugParam = z.object({ slug: WorkflowSlug });
const IdParam = z.object({ id: z.string().min(1).max(200) });
const RunParam = z.object({ runId: z.string().min(1).max(100) });
const Success = z.object({ success: z.literal(true) });
const Launched = z.object({ runId: z.string(), workflowId: z.string(), status: z.literal('started'), conversationId: z.string().optional() });

/** Workflows (spec 4.8). Static paths come before `/:slug` so `runs`, `queue` and `definitions` are never read as slugs. */
export const workflowsRoutes = new Hono<AppEnv>()
  .get('/', documented('Workflows', 'Installed workflows', 200, z.array(WorkflowRecord)), async (c) => c.json(await listWorkflows(c.var.db, principalOf(c))))
  .get(
    '/definitions',
    documented(
      'Workflows',
      'The installed definitions without their graphs',
      200,
      z.object({ workflows: z.array(DefinitionItem), format: z.literal('service-v1'), exportable: z.boolean(), count: z.number() }),
    ),
    async (c) => c.json(await listDefinitions(c.var.db, principalOf(c))),
  )
  .post(
    '/install-from-artifact',
    documented('Workflows', 'Install the workflow.json of an artifact bundle', 201, WorkflowRecord),
    optionalJsonBody,
    async (c) => c.json(await installFromArtifact(c.var.db, c.env.BUCKET, principalOf(c), await readJsonBody(c)), 201),
  )
  .get(
    '/runs',
    documented('Workflows', 'Runs of this workspace, newest first', 200, z.object({ runs: z.array(RunRecord) })),
    validate('query', RunsQuery),
    async (c) => c.json(await listRuns(c.var.db, principalOf(c), c.req.valid('query').limit)),
  )
  .get(
    '/runs/:runId',
    documented('Workflows', 'A run and its step results', 200, z.object({ run: RunRecord, steps: z.record(z.string(), z.unknown()) })),
    validate('param', RunParam),
    async (c) => c.json(await getRun(c.var.db, principalOf(c), c.req.valid('param').runId)),
  )
  .get(
    '/runs/:runId/events',
    documented('Workflows', 'Server-Sent Events: workflow-snapshot frames and the run’s changes (after lastSeq or Last-Event-ID)', 200, z.string()),
    validate('param', RunParam),
    validate('query', RunEventsQuery),
    async (c) => {
      // EventSource sends the last change's seq back as Last-Event-ID when it reconnects.
      const resumeAfter = c.req.valid('query').lastSeq ?? RunEventsQuery.shape.lastSeq.safeParse(c.req.header('last-event-id')).data ?? 0;
      return runEvents(c.var.db, c.env, principalOf(c), c.req.valid('param').runId, resumeAfter, c.req.raw.signal);
    },
  )
  .post(
    '/runs/:runId/resume',
    documented('Workflows', 'Resume a suspended step', 200, z.object({ runId: z.string(), status: z.literal('running') })),
    validate('param', RunParam),
    optionalJsonBody,
    validate('json', ResumeBody),
    async (c) => {
      const answer = await resumeRun(c.var.db, c.env, principalOf(c), c.req.valid('param').runId, c.req.valid('json'));
      return c.json(answer.body, answer.status);
    },
  )
  .post(
    '/runs/:runId/cancel',
    documented('Workflows', 'Cancel a run that has not finished', 200, Success.extend({ runId: z.string() })),
    validate('param', RunParam),
    async (c) => c.json(await cancelRun(c.var.db, c.env, principalOf(c), c.req.valid('param').runId)),
  )
  .get(
    '/queue',
    documented(
      'Workflows',
      'Runs of this workspace that have not finished',
      200,
      z.object({ queued: z.array(z.object({ runId: z.string(), workflowSlug: z.string(), enqueuedAt: z.string(), status: z.string() })), total: z.number() }),
    ),
    async (c) => c.json(await listQueue(c.var.db, principalOf(c))),
  )
  .delete('/queue/:runId', documented('Workflows', 'Cancel a queued run', 200, Success), validate('param', RunParam), async (c) =>
    c.json(await dequeueRun(c.var.db, c.env, principalOf(c), c.req.valid('param').runId)),
  )
  .get('/:slug', documented('Workflows', 'One installed workflow', 200, WorkflowRecord), validate('param', SlugParam), async (c) =>
    c.json(await getWorkflow(c.var.db, principalOf(c), c.req.valid('param').slug)),
  )
  .post(
    '/:slug/install',
    documented(
      'Workflows',
      'Compile and install a definition under this slug (overwrites)',
      201,
      WorkflowRecord,
      'The installed record',
      workflowDefinitionBody,
    ),
    validate('param', SlugParam),
    optionalJsonBody,
    async (c) =>
      c.json(await installWorkflow(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').slug, definitionFromBody(await readJsonBody(c))), 201),
  )
  .post('/:slug/uninstall', documented('Workflows', 'Uninstall', 200, Success), validate('param', SlugParam), async (c) =>
    c.json(await uninstallWorkflow(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').slug)),
  )
  .delete('/:slug', documented('Workflows', 'Uninstall', 200, Success), validate('param', SlugParam), async (c) =>
    c.json(await uninstallWorkflow(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').slug)),
  )
  .post(
    '/:id/launch',
    documented('Workflows', 'Start a run', 201, Launched),
    validate('param', IdParam),
    optionalJsonBody,
    validate('json', LaunchBody),
    async (c) =>
      c.json(
        await launchWorkflow(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json').inputs ?? {}, c.req.valid('json').threadId),
        201,
      ),
  )
  .post(
    '/:id/stream',
    documented('Workflows', 'Launch or resume with an AI-SDK UI message stream', 200, z.string()),
    validate('param', IdParam),
    optionalJsonBody,
    validate('json', StreamBody),
    async (c) => streamWorkflow(c.var.db, c.env, principalOf(c), c.req.valid('param').id, c.req.valid('json'), c.req.raw.signal),
  );
