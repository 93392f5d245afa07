import { z } from 'zod';
import { CursorQuery, cursorEnvelope } from '../lib/pagination';
import { optionalJsonBody } from '../middleware/validate';
import { listTriggerDeliveries, TriggerDelivery } from '../services/trigger-delivery-log';
import { WorkflowSlug } from '../services/workflow-definitions';
import {
  createTrigger,
  deleteTrigger,
  getTrigger,
  listTriggers,
  rotateTriggerSecret,
  Trigger,
  TriggerBody,
  TriggerId,
  TriggerWithSecret,
} from '../services/workflow-triggers';
import { defineCapability, READ_ONLY, WRITE, type Capability } from './capability';

// As the schedule routes: reading needs library:read, anything that makes runs happen workflow:run.
const READ = { auth: 'credential', scope: 'library:read' } as const;
const RUN = { auth: 'credential', scope: 'workflow:run' } as const;
const REMOVES = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const;

const Slug = z.object({ slug: WorkflowSlug });
const OneTrigger = Slug.extend({ triggerId: TriggerId });

/** Inbound trigger URLs of an installed workflow (docs/workflows.md, Triggers), under `/api/v1/workflows/:slug/triggers`. */
export const triggerCapabilities: Capability[] = [
  defineCapability({
    name: 'list-workflow-triggers',
    title: 'List workflow triggers',
    description: 'Lists the trigger URLs of an installed workflow, each with its source, auth mode, GitHub events and state (never its secret).',
    access: READ,
    input: Slug,
    output: z.object({ triggers: z.array(Trigger) }),
    annotations: READ_ONLY,
    http: { method: 'GET', path: '/:slug/triggers', summary: 'Trigger URLs of a workflow' },
    run: (ctx, { slug }) => listTriggers(ctx.db, ctx.actor, ctx.baseUrl, slug),
  }),
  defineCapability({
    name: 'create-workflow-trigger',
    title: 'Create a workflow trigger URL',
    description:
      'Creates a public URL that launches the workflow when POSTed to. Source "webhook" (default): the JSON body is the input, signed with Standard Webhooks headers (auth "signature") or carrying the secret as a bearer token (auth "bearer"). Source "github": the URL and secret are a GitHub webhook’s Payload URL and Secret; GitHub’s deliveries of the chosen events (push, pull_request, pull_request.<action>, among those the workflow declares in metadata.triggers) start runs whose input is built from the event. Answers the secret once. Runs act for the credential that creates the trigger.',
    access: RUN,
    input: Slug.extend(TriggerBody.shape),
    output: TriggerWithSecret,
    annotations: WRITE,
    http: { method: 'POST', path: '/:slug/triggers', status: 201, before: [optionalJsonBody], summary: 'Create a trigger URL' },
    run: (ctx, { slug, ...body }) => createTrigger(ctx.db, ctx.env, ctx.actor, ctx.baseUrl, slug, body),
  }),
  defineCapability({
    name: 'get-workflow-trigger',
    title: 'Get a workflow trigger',
    description: 'One trigger URL of a workflow (never its secret).',
    access: READ,
    input: OneTrigger,
    output: Trigger,
    annotations: READ_ONLY,
    http: { method: 'GET', path: '/:slug/triggers/:triggerId', summary: 'One trigger URL' },
    mcp: false,
    run: (ctx, { slug, triggerId }) => getTrigger(ctx.db, ctx.actor, ctx.baseUrl, slug, triggerId),
  }),
  defineCapability({
    name: 'list-workflow-trigger-deliveries',
    title: 'List a workflow trigger’s deliveries',
    description:
      'The deliveries that reached a trigger URL, newest first (the last 100, within the workspace’s activity retention): when, the sender’s delivery id, the GitHub event, what became of each (started, duplicate, ignored, refused), the HTTP status answered, the run started and why none did. Never a body or a header.',
    access: READ,
    input: OneTrigger.extend(CursorQuery.shape),
    output: cursorEnvelope(TriggerDelivery),
    annotations: READ_ONLY,
    http: { method: 'GET', path: '/:slug/triggers/:triggerId/deliveries', summary: 'Deliveries a trigger URL received' },
    run: (ctx, { slug, triggerId, ...query }) => listTriggerDeliveries(ctx.db, ctx.actor, slug, triggerId, query),
  }),
  defineCapability({
    name: 'rotate-workflow-trigger-secret',
    title: 'Rotate a workflow trigger’s secret',
    description: 'Replaces a trigger’s secret, answered once (the old one stops working at once); the trigger acts for the caller’s credential from now on.',
    access: RUN,
    input: OneTrigger,
    output: TriggerWithSecret,
    annotations: WRITE,
    http: { method: 'POST', path: '/:slug/triggers/:triggerId/rotate-secret', before: [optionalJsonBody], summary: 'Rotate a trigger’s secret' },
    mcp: false,
    run: (ctx, { slug, triggerId }) => rotateTriggerSecret(ctx.db, ctx.env, ctx.actor, ctx.baseUrl, slug, triggerId),
  }),
  defineCapability({
    name: 'delete-workflow-trigger',
    title: 'Delete a workflow trigger',
    description: 'Deletes a trigger URL: it answers 404 from then on; runs it already started keep going.',
    access: RUN,
    input: OneTrigger,
    output: z.object({ success: z.literal(true) }),
    annotations: REMOVES,
    http: { method: 'DELETE', path: '/:slug/triggers/:triggerId', summary: 'Delete a trigger URL' },
    run: (ctx, { slug, triggerId }) => deleteTrigger(ctx.db, ctx.env, ctx.actor, slug, triggerId),
  }),
];
