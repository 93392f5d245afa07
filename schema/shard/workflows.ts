import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

/** Spec 3.2: the states of a workflow run (`canceled` with one l). */
export const WORKFLOW_RUN_STATUSES = ['running', 'suspended', 'success', 'failed', 'canceled'] as const;
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
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    index('workflow_runs_workspace_created_idx').on(t.workspaceId, t.createdAt),
    index('workflow_runs_workspace_status_idx').on(t.workspaceId, t.status),
    // The retention sweep's: a workspace's runs last written longer ago than its window.
    index('workflow_runs_workspace_updated_idx').on(t.workspaceId, t.updatedAt),
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
