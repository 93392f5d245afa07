import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

export const EXECUTION_STATUSES = ['idle', 'working', 'completed', 'failed'] as const;
export const EVAL_ROLES = ['skill', 'baseline', 'grader'] as const;
export type EvalRole = (typeof EVAL_ROLES)[number];

/**
 * The executions index (spec 2.2): what history, concurrency and billing read. The event log
 * itself lives in the execution's Durable Object.
 */
export const executions = sqliteTable(
  'executions',
  {
    id: shardIdColumn('executions'),
    workspaceId: shardWorkspaceIdColumn(),
    userId: text('user_id').notNull(),
    skillSlug: text('skill_slug').notNull(),
    skillName: text('skill_name').notNull().default(''),
    /** The skill version active when the execution was created: its prompt is the system prompt. */
    skillVersionId: integer('skill_version_id'),
    status: text('status', { enum: EXECUTION_STATUSES }).notNull(),
    inputText: text('input_text').notNull().default(''),
    /** The channel that created it (`api`, `mcp`...) and the client label (spec 2.2). */
    source: text('source').notNull().default('api'),
    interface: text('interface').notNull().default('api'),
    /** Hundredths of a Ds. */
    cost: integer('cost').notNull().default(0),
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    /** The execution this one reruns or remixes. */
    parentExecutionId: integer('parent_execution_id'),
    /** Lineage handle (spec 2.5): a rerun inherits its parent's, a remix starts a new one. */
    traceKey: text('trace_key').notNull().default(''),
    startedAt: integer('started_at').notNull(),
    completedAt: integer('completed_at'),
    /** Milliseconds spent in `working`, summed over turns. */
    executionTimeMs: integer('execution_time_ms').notNull().default(0),
    /**
     * The latest turn's key (`exec_<id>:<uuid>`), written by the claim that moves the execution to
     * `working`: it names the turn's credit hold and the turn in the execution's object, so after
     * a crash at any point the reconciler can ask the object whether that turn ever started.
     */
    turnKey: text('turn_key'),
    /** When the latest turn was claimed (epoch ms): the reconciler leaves younger claims alone. */
    claimedAt: integer('claimed_at'),
    /**
     * What the latest turn may spend (hundredths), set by its claim: the run's budget left, the
     * workspace's limits' room and RUN_BUDGET, whichever is least. While the execution is
     * `working` it counts against the limits, in place of what the turn has not yet been charged.
     */
    turnAllowance: integer('turn_allowance').notNull().default(0),
    /** The run's budget over all its turns (hundredths), when its starter set one; a message may raise it. */
    budget: integer('budget'),
    /**
     * A run of a skill eval (`skill_evals.id`) and its part in it: `skill` runs the version's
     * prompt, `baseline` the same input without it, `grader` grades a run's output.
     */
    evalId: integer('eval_id'),
    evalRole: text('eval_role', { enum: EVAL_ROLES }),
  },
  (t) => [
    index('executions_workspace_status_idx').on(t.workspaceId, t.status),
    // The retention sweep: a workspace's executions that are not working, by when they last ran
    // (retention-sweep.ts, the same expression). A CASE, not coalesce(): drizzle-kit splits an
    // index expression at its commas.
    index('executions_workspace_ended_idx')
      .on(
        t.workspaceId,
        sql`CASE WHEN ${t.completedAt} IS NOT NULL THEN ${t.completedAt} WHEN ${t.claimedAt} IS NOT NULL THEN ${t.claimedAt} ELSE ${t.startedAt} END`,
      )
      .where(sql`${t.status} <> 'working'`),
    // The reconciler's sweep: working executions by claim age, across workspaces.
    index('executions_working_claimed_idx')
      .on(t.claimedAt)
      .where(sql`${t.status} = 'working'`),
  ],
);

/** Files a run produced (docs/executions.md); the bytes live in R2 under `r2Key`. */
export const artifacts = sqliteTable(
  'artifacts',
  {
    id: shardIdColumn('artifacts'),
    workspaceId: shardWorkspaceIdColumn(),
    executionId: integer('execution_id'),
    name: text('name').notNull(),
    contentType: text('content_type').notNull(),
    size: integer('size').notNull(),
    r2Key: text('r2_key').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  // One row per R2 object: a tool call made again after a cut-off indexes its file once.
  (t) => [index('artifacts_workspace_idx').on(t.workspaceId, t.id), uniqueIndex('artifacts_r2_key_unique').on(t.r2Key)],
);

export type ArtifactRow = typeof artifacts.$inferSelect;

/**
 * A run's tool calls whose effect is a D1 batch (appending to memory, recording a workflow's
 * launch): the key (a digest of the turn and the model's call id) is written in that batch, so the
 * call made again by a turn cut off during it fails whole instead of acting twice. Kept a day
 * (hourly housekeeping); a turn ends within 65 minutes.
 */
export const runToolCalls = sqliteTable('run_tool_calls', {
  key: text('key').primaryKey(),
  createdAt: integer('created_at').notNull(),
});
