import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/**
 * Spec 3.2: the states of a workflow run (`canceled` with one l); `queued` is ours: a run waiting
 * for a slot of its concurrency key (docs/workflows.md, Concurrency keys).
 */
export const WORKFLOW_RUN_STATUSES = ['queued', 'running', 'suspended', 'success', 'failed', 'canceled'] as const;
/** The states of a run that has not finished. */
export const UNFINISHED_RUN_STATUSES = ['queued', 'running', 'suspended'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/** Workspace agents that `agent` steps run (docs/workflows.md): id `<workspace_id>:<slug>`. */
export const agents = sqliteTable(
  'agents',
  {
    id: shardIdColumn('agents'),
    workspaceId: shardWorkspaceIdColumn(),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    instructions: text('instructions').notNull(),
    model: text('model'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('agents_workspace_slug_idx').on(t.workspaceId, t.slug)],
);

/** Installed workflows (spec 2.6): the definition as JSON text, compiled again at every launch. */
export const workflows = sqliteTable(
  'workflows',
  {
    id: shardIdColumn('workflows'),
    workspaceId: shardWorkspaceIdColumn(),
    slug: text('slug').notNull(),
    /** The definition's own `id`, also accepted as the launch id. */
    declaredId: text('declared_id').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    category: text('category').notNull().default(''),
    requiresConnector: text('requires_connector'),
    definition: text('definition').notNull(),
    storagePath: text('storage_path').notNull(),
    installedAt: integer('installed_at').notNull(),
  },
  (t) => [uniqueIndex('workflows_workspace_slug_idx').on(t.workspaceId, t.slug), index('workflows_workspace_declared_idx').on(t.workspaceId, t.declaredId)],
);

/**
 * The D1 record of a run, written only by its WorkflowRun Durable Object by versioned upsert
 * (a write with a lower `version` than the stored one changes nothing).
 */
export const workflowRuns = sqliteTable(
  'workflow_runs',
  {
    runId: text('run_id').primaryKey(),
    workspaceId: shardWorkspaceIdColumn(),
    /** The installed slug. */
    workflowId: text('workflow_id').notNull(),
    status: text('status', { enum: WORKFLOW_RUN_STATUSES }).notNull(),
    /** Who the run acts for: the launching user. */
    resourceId: text('resource_id').notNull(),
    /** `{status, context, value, result?, error?}` as JSON text. */
    snapshot: text('snapshot').notNull(),
    version: integer('version').notNull(),
    threadId: text('thread_id'),
    /** A rerun (docs/workflows.md, Rerun from a step): the run it reruns and the step it started from. */
    rerunOf: text('rerun_of'),
    rerunFromStep: text('rerun_from_step'),
    /** The run's concurrency key as its launch inputs filled it; null when its workflow declares none. */
    concurrencyKey: text('concurrency_key'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    index('workflow_runs_workspace_created_idx').on(t.workspaceId, t.createdAt),
    index('workflow_runs_workspace_status_idx').on(t.workspaceId, t.status),
    // The retention sweep's: a workspace's runs last written longer ago than its window.
    index('workflow_runs_workspace_updated_idx').on(t.workspaceId, t.updatedAt),
    // Admission and the next queued run: a key's runs by status, oldest first.
    index('workflow_runs_concurrency_idx').on(t.workspaceId, t.workflowId, t.concurrencyKey, t.status, t.createdAt),
  ],
);

/** Per-step results of a run (spec 2.6), keyed by step id; written with the run record. */
export const workflowStepResults = sqliteTable(
  'workflow_step_results',
  {
    runId: text('run_id')
      .notNull()
      .references(() => workflowRuns.runId, { onDelete: 'cascade' }),
    stepId: text('step_id').notNull(),
    status: text('status').notNull(),
    /** JSON text; null while the step has no output. */
    output: text('output'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.stepId] })],
);

export type AgentRow = typeof agents.$inferSelect;
export type WorkflowRow = typeof workflows.$inferSelect;
export type WorkflowRunRow = typeof workflowRuns.$inferSelect;

/** What a schedule does with a fire time that comes while a run it started is still going (docs/workflows.md, Schedules). */
export const SCHEDULE_OVERLAPS = ['skip', 'queue_one', 'allow'] as const;
/** What a schedule does with fire times missed while it was paused or its object was down: nothing, or one run for them all. */
export const SCHEDULE_CATCH_UPS = ['skip', 'run_once'] as const;
/** `stopped`: its credential no longer acts in the workspace, or its workflow cannot be launched as set (`stopped_reason` says why). */
export const SCHEDULE_STATES = ['active', 'paused', 'stopped'] as const;
export type ScheduleState = (typeof SCHEDULE_STATES)[number];

/** The outcome of a schedule's last fire time, as its WorkflowSchedule object records it. */
export interface ScheduleFire {
  /** The fire time (ms) this outcome is for. */
  fireTime: number;
  outcome: 'started' | 'queued' | 'skipped' | 'missed';
  runId?: string;
  /** Why nothing started (`overlap`, `catch_up`, `queue_full`), or how many fire times a catch-up covered. */
  reason?: string;
}

/**
 * Cron schedules of installed workflows. The row is the schedule's settings, read by its
 * WorkflowSchedule Durable Object (addressed by `id`) at each alarm; the credential its runs act
 * for is kept in that object's storage, the row only says whose it is.
 */
export const workflowSchedules = sqliteTable(
  'workflow_schedules',
  {
    /** A UUID: also the name of the schedule's object. */
    id: text('id').primaryKey(),
    workspaceId: shardWorkspaceIdColumn(),
    workflowSlug: text('workflow_slug').notNull(),
    cron: text('cron').notNull(),
    timezone: text('timezone').notNull(),
    /** The runs' input as JSON text. */
    input: text('input').notNull(),
    overlap: text('overlap', { enum: SCHEDULE_OVERLAPS }).notNull(),
    catchUp: text('catch_up', { enum: SCHEDULE_CATCH_UPS }).notNull(),
    state: text('state', { enum: SCHEDULE_STATES }).notNull(),
    stoppedReason: text('stopped_reason'),
    /** Whose credential the runs act for: the member who created or last resumed the schedule, and their key, if a key. */
    actorUserId: text('actor_user_id').notNull(),
    actorCredentialType: text('actor_credential_type', { enum: ['session', 'api_key', 'oauth'] }).notNull(),
    actorApiKeyId: integer('actor_api_key_id'),
    lastFire: text('last_fire', { mode: 'json' }).$type<ScheduleFire>(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('workflow_schedules_workspace_workflow_idx').on(t.workspaceId, t.workflowSlug)],
);

export type WorkflowScheduleRow = typeof workflowSchedules.$inferSelect;

/** Who sends a trigger's deliveries: any sender (`webhook`), or GitHub's webhook delivery for the events the trigger asks for. */
export const TRIGGER_SOURCES = ['webhook', 'github'] as const;
/** How a `webhook` trigger's sender proves itself: a Standard Webhooks signature, or the secret as a bearer token. */
export const SENDER_AUTHS = ['signature', 'bearer'] as const;
/** How any trigger's sender proves itself: a `github` trigger's by GitHub's `X-Hub-Signature-256`. */
export const TRIGGER_AUTHS = [...SENDER_AUTHS, 'github_signature'] as const;
/** `stopped`: the credential it acts for no longer acts in the workspace (`stopped_reason` says why). */
export const TRIGGER_STATES = ['active', 'stopped'] as const;

/**
 * Inbound trigger URLs of installed workflows (docs/workflows.md, Triggers): a POST to
 * `/hooks/workflows/<id>` proven by `secret` launches a run (for a `github` trigger, an event it asks for). The id carries the workspace's id,
 * so the public route finds the shard through the directory.
 */
export const workflowTriggers = sqliteTable(
  'workflow_triggers',
  {
    /** `trg_<workspace id's 32 hex digits>_<16 random hex digits>`. */
    id: text('id').primaryKey(),
    workspaceId: shardWorkspaceIdColumn(),
    workflowSlug: text('workflow_slug').notNull(),
    name: text('name'),
    source: text('source', { enum: TRIGGER_SOURCES }).notNull(),
    auth: text('auth', { enum: TRIGGER_AUTHS }).notNull(),
    /** A `github` trigger's events (JSON text of an array: `push`, `pull_request`, `pull_request.<action>`); null for a `webhook` one. */
    events: text('events'),
    /** A `github` trigger's one repository (`owner/repo`), or null for any repository whose webhook sends to it. */
    repository: text('repository'),
    /** The secret (`whsec_…`), AES-GCM ciphertext under ENCRYPTION_KEY bound to the workspace and the trigger. */
    secret: text('secret').notNull(),
    state: text('state', { enum: TRIGGER_STATES }).notNull(),
    stoppedReason: text('stopped_reason'),
    /** Who the runs act for: the creator, and their credential (an Actor as JSON text), read again as it stands at every launch. */
    actorUserId: text('actor_user_id').notNull(),
    actor: text('actor').notNull(),
    lastDeliveryAt: integer('last_delivery_at'),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('workflow_triggers_workspace_workflow_idx').on(t.workspaceId, t.workflowSlug)],
);

export type WorkflowTriggerRow = typeof workflowTriggers.$inferSelect;

/**
 * What became of a delivery to a trigger: a run started, a replayed delivery id answered with the
 * run it started before (`duplicate`), a proven delivery that starts nothing (`ignored`: GitHub's
 * ping, an event or repository the trigger does not ask for), or a refusal (`refused`).
 */
export const TRIGGER_DELIVERY_OUTCOMES = ['started', 'ignored', 'refused', 'duplicate'] as const;

/**
 * A trigger's delivery log (docs/workflows.md, Delivery log): one row for each POST that reached
 * the trigger, the last 100 kept and none past the workspace's activity window. Never the body or
 * the headers, which may carry secrets: only what the sender named it and what became of it.
 */
export const triggerDeliveries = sqliteTable(
  'trigger_deliveries',
  {
    id: shardIdColumn('trigger_deliveries'),
    workspaceId: shardWorkspaceIdColumn(),
    triggerId: text('trigger_id')
      .notNull()
      .references(() => workflowTriggers.id, { onDelete: 'cascade' }),
    /** The sender's id of the delivery as it named it (`X-GitHub-Delivery`, `webhook-id`, `Idempotency-Key`), proven or not; null without one. */
    deliveryId: text('delivery_id'),
    /** A GitHub delivery's event (`pull_request.opened`: the event and its action); null for a webhook trigger's. */
    event: text('event'),
    outcome: text('outcome', { enum: TRIGGER_DELIVERY_OUTCOMES }).notNull(),
    /** The HTTP status the sender was answered. */
    status: integer('status').notNull(),
    runId: text('run_id'),
    /** Why no run started, in a sentence; null when one did. */
    reason: text('reason'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    index('trigger_deliveries_trigger_idx').on(t.triggerId, t.id),
    // The retention sweep's: a workspace's entries older than its activity window.
    index('trigger_deliveries_workspace_created_idx').on(t.workspaceId, t.createdAt),
  ],
);

export type TriggerDeliveryRow = typeof triggerDeliveries.$inferSelect;
