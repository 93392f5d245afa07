import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { shardIdColumn } from '../row-ids';
import { shardWorkspaceIdColumn } from './columns';

export const TRACE_KINDS = ['execution', 'chat'] as const;
export type TraceKind = (typeof TRACE_KINDS)[number];

/** Spec 2.5 / 4.7: the turn types of a trace. */
export const TURN_TYPES = ['user.message', 'agent.text', 'agent.thinking', 'tool.call', 'tool.result', 'error'] as const;
export type TurnType = (typeof TURN_TYPES)[number];

/**
 * The traces index (spec 2.5): one row per lineage (`trace_key`, shared by an execution and its
 * reruns, or a chat thread's runs). It indexes the producers' stores; turn content is never
 * copied here. `total_cost` (hundredths of a Ds) only ever grows.
 */
export const traces = sqliteTable(
  'traces',
  {
    /** UUIDv7: opaque, ordered by creation (the list's keyset). */
    id: text('id').primaryKey(),
    workspaceId: shardWorkspaceIdColumn(),
    traceKey: text('trace_key').notNull(),
    kind: text('kind', { enum: TRACE_KINDS }).notNull(),
    title: text('title').notNull(),
    /** Follows the latest run: `idle`, `running`, `completed`, `failed`. */
    status: text('status').notNull(),
    actorUserId: text('actor_user_id').notNull(),
    actorApiKeyId: integer('actor_api_key_id'),
    actorAgentSlug: text('actor_agent_slug'),
    /** The latest execution of the lineage (kind `execution`), or the thread (kind `chat`). */
    targetExecutionId: integer('target_execution_id'),
    targetThreadId: text('target_thread_id'),
    totalCost: integer('total_cost').notNull().default(0),
    startedAt: integer('started_at').notNull(),
    lastActivityAt: integer('last_activity_at').notNull(),
  },
  // One index per list filter, each ending in the keyset (id), so a filtered page reads only its
  // own matches, newest first, however many other traces the workspace has.
  (t) => [
    uniqueIndex('traces_workspace_key_idx').on(t.workspaceId, t.traceKey),
    index('traces_workspace_id_idx').on(t.workspaceId, t.id),
    index('traces_workspace_kind_idx').on(t.workspaceId, t.kind, t.id),
    index('traces_workspace_status_idx').on(t.workspaceId, t.status, t.id),
    index('traces_workspace_agent_idx').on(t.workspaceId, t.actorAgentSlug, t.id),
    index('traces_workspace_api_key_idx').on(t.workspaceId, t.actorApiKeyId, t.id),
    // The retention sweep's: a workspace's traces idle for longer than its window.
    index('traces_workspace_last_activity_idx').on(t.workspaceId, t.lastActivityAt),
  ],
);

/**
 * How producer events take trace seqs, without copying them: events `event_from..event_to` of
 * execution `execution_id` are seqs `seq_start..seq_end` (same offsets). Segments are allocated
 * above the trace's high-water mark when first read, so seqs only grow in arrival order.
 */
export const traceSegments = sqliteTable(
  'trace_segments',
  {
    traceId: text('trace_id')
      .notNull()
      .references(() => traces.id, { onDelete: 'cascade' }),
    executionId: integer('execution_id').notNull(),
    eventFrom: integer('event_from').notNull(),
    eventTo: integer('event_to').notNull(),
    seqStart: integer('seq_start').notNull(),
    seqEnd: integer('seq_end').notNull(),
  },
  (t) => [primaryKey({ columns: [t.traceId, t.executionId, t.eventFrom] }), index('trace_segments_seq_idx').on(t.traceId, t.seqStart)],
);

/** Turns added through the API (`origin: 'appended'`); a seq is never written twice. */
export const traceTurns = sqliteTable(
  'trace_turns',
  {
    traceId: text('trace_id')
      .notNull()
      .references(() => traces.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    type: text('type', { enum: TURN_TYPES }).notNull(),
    payload: text('payload', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    actorAgentSlug: text('actor_agent_slug'),
    actorUserId: text('actor_user_id').notNull(),
    actorApiKeyId: integer('actor_api_key_id'),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.traceId, t.seq] })],
);

/** Chat threads: each message runs one agent turn (an execution of the thread's skill) in the thread's lineage. */
export const threads = sqliteTable(
  'threads',
  {
    /** UUIDv7. */
    id: text('id').primaryKey(),
    workspaceId: shardWorkspaceIdColumn(),
    title: text('title').notNull(),
    skillSlug: text('skill_slug').notNull(),
    traceKey: text('trace_key').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('threads_workspace_id_idx').on(t.workspaceId, t.id)],
);

export const THREAD_ROLES = ['user', 'assistant'] as const;

export const threadMessages = sqliteTable(
  'thread_messages',
  {
    id: shardIdColumn('thread_messages'),
    threadId: text('thread_id')
      .notNull()
      .references(() => threads.id, { onDelete: 'cascade' }),
    role: text('role', { enum: THREAD_ROLES }).notNull(),
    content: text('content').notNull(),
    /** The run that answered (assistant) or that the message started (user). */
    executionId: integer('execution_id'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('thread_messages_thread_idx').on(t.threadId, t.id)],
);

export type TraceRow = typeof traces.$inferSelect;
export type ThreadRow = typeof threads.$inferSelect;
export type ThreadMessageRow = typeof threadMessages.$inferSelect;
