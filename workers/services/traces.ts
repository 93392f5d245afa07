import { and, asc, desc, eq, gt, gte, lt, sql, type SQL } from 'drizzle-orm';
import type { BatchItem } from 'drizzle-orm/batch';
import { z } from 'zod';
import { executions, traceSegments, traceTurns, traces, TURN_TYPES, type TraceKind, type TraceRow, type TurnType } from '../../schema';
import { statusAfterRun, type ExecutionEvent, type RunStopReason } from './execution-events';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import type { ShardDb, Env } from '../env';
import { AppError, conflict, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUniqueViolation } from '../lib/db-errors';
import { formatId, parseId, uuidv7 } from '../lib/ids';

/** Spec 8: the trace list's page, default 50, clamped to 1..200. */
export const DEFAULT_TRACE_PAGE = 50;
export const MAX_TRACE_PAGE = 200;
/** Turns per read of a trace's events: default 100, clamped to 1..500. */
const DEFAULT_TURN_PAGE = 100;
const MAX_TURN_PAGE = 500;
/** Turns per append. */
const MAX_APPEND = 100;

const clampedInt = (fallback: number, max: number) =>
  z.coerce
    .number()
    .int()
    .optional()
    .transform((v) => Math.min(max, Math.max(1, v ?? fallback)));

// ---------------------------------------------------------------------------------------------
// The index: maintained where executions are created, started and finished.

/** What an execution brings to its lineage's trace when it is created. */
export interface TraceEntry {
  traceKey: string;
  kind: TraceKind;
  title: string;
  /** SQL when the execution is inserted in the same batch and its id is not known yet. */
  executionId: number | ReturnType<typeof sql> | null;
  threadId?: string;
}

/**
 * The upsert that puts a new execution (or a new thread) on its lineage's trace: a new lineage
 * makes the trace; a known one gets the new run as its target, with status and activity.
 * Kind, title and start never change once the trace exists.
 */
export function traceUpsert(db: ShardDb, principal: Principal, entry: TraceEntry): BatchItem<'sqlite'> {
  const at = now();
  const actor = { actorUserId: principal.userId, actorApiKeyId: apiKeyIdOf(principal), actorAgentSlug: principal.origin.agentSlug ?? null };
  return db
    .insert(traces)
    .values({
      id: uuidv7(),
      workspaceId: principal.workspaceId,
      traceKey: entry.traceKey,
      kind: entry.kind,
      title: entry.title.slice(0, 200),
      status: 'idle',
      ...actor,
      targetExecutionId: entry.executionId,
      targetThreadId: entry.threadId ?? null,
      startedAt: at,
      lastActivityAt: at,
    })
    .onConflictDoUpdate({
      target: [traces.workspaceId, traces.traceKey],
      set: {
        ...actor,
        status: 'idle',
        targetExecutionId: sql`COALESCE(excluded.target_execution_id, ${traces.targetExecutionId})`,
        lastActivityAt: at,
      },
    });
}

/** The trace of `traceKey` in the caller's workspace (POST /executions `sessionId`), or 404. */
export async function requireTraceByKey(db: ShardDb, principal: Principal, traceKey: string): Promise<TraceRow> {
  const [row] = await db
    .select()
    .from(traces)
    .where(and(eq(traces.workspaceId, principal.workspaceId), eq(traces.traceKey, traceKey)))
    .limit(1);
  if (!row) throw new AppError('NOT_FOUND', 404, 'No trace has this sessionId', { field: 'sessionId' });
  return row;
}

const latestRunOf = (executionId: number) =>
  and(
    sql`${traces.workspaceId} = (SELECT ${executions.workspaceId} FROM ${executions} WHERE ${executions.id} = ${executionId})`,
    sql`${traces.traceKey} = (SELECT ${executions.traceKey} FROM ${executions} WHERE ${executions.id} = ${executionId})`,
  );

/**
 * A run of the lineage's latest execution started: the trace is running. Only while the
 * execution still works: a run that already ended (a short one can end before this is written)
 * keeps the status its end recorded.
 */
export const traceRunStarted = (db: ShardDb, executionId: number) =>
  db
    .update(traces)
    .set({ status: 'running', lastActivityAt: now() })
    .where(
      and(
        latestRunOf(executionId),
        eq(traces.targetExecutionId, executionId),
        sql`EXISTS (SELECT 1 FROM ${executions} WHERE ${executions.id} = ${executionId} AND ${executions.status} = 'working')`,
      ),
    );

/**
 * A run ended (in the batch that records it on the execution): its cost is added to the
 * lineage's total whichever run it was; status follows only the latest run.
 */
export function traceRunFinished(db: ShardDb, executionId: number, reason: RunStopReason, cost: number | SQL<number>, onlyIf?: SQL): BatchItem<'sqlite'> {
  return db
    .update(traces)
    .set({
      totalCost: sql`${traces.totalCost} + MAX(0, ${cost})`,
      status: sql`CASE WHEN ${traces.targetExecutionId} = ${executionId} THEN ${statusAfterRun(reason)} ELSE ${traces.status} END`,
      lastActivityAt: sql`MAX(${traces.lastActivityAt}, ${now()})`,
    })
    .where(and(latestRunOf(executionId), onlyIf));
}

/**
 * An execution that could not start is deleted again: its trace then points at the lineage's
 * previous run (and takes its status), or goes if the lineage has none left (and no thread owns it).
 */
export async function traceExecutionRemoved(db: ShardDb, workspaceId: string, traceKey: string) {
  const [latest] = await db
    .select({ id: executions.id, status: executions.status })
    .from(executions)
    .where(and(eq(executions.workspaceId, workspaceId), eq(executions.traceKey, traceKey)))
    .orderBy(desc(executions.id))
    .limit(1);
  const lineage = and(eq(traces.workspaceId, workspaceId), eq(traces.traceKey, traceKey));
  if (latest)
    await db
      .update(traces)
      .set({ targetExecutionId: latest.id, status: latest.status === 'working' ? 'running' : latest.status })
      .where(lineage);
  else await db.delete(traces).where(and(lineage, eq(traces.kind, 'execution')));
}

// ---------------------------------------------------------------------------------------------
// Presentation and lookup.

export const Trace = z.object({
  id: z.string(),
  kind: z.enum(['execution', 'chat']),
  title: z.string(),
  status: z.string(),
  actor: z.object({ userId: z.string(), apiKeyId: z.string().nullable(), agentSlug: z.string().nullable() }),
  target: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('execution'), executionId: z.string().nullable() }),
    z.object({ kind: z.literal('chat'), threadId: z.string() }),
  ]),
  totalCost: z.number(),
  startedAt: z.string(),
  lastActivityAt: z.string(),
  traceKey: z.string(),
});
export type Trace = z.infer<typeof Trace>;

export const presentTrace = (row: TraceRow): Trace => ({
  id: row.id,
  kind: row.kind,
  title: row.title,
  status: row.status,
  actor: {
    userId: row.actorUserId,
    apiKeyId: row.actorApiKeyId === null ? null : formatId('key', row.actorApiKeyId),
    agentSlug: row.actorAgentSlug,
  },
  target:
    row.kind === 'chat'
      ? { kind: 'chat', threadId: row.targetThreadId ?? '' }
      : { kind: 'execution', executionId: row.targetExecutionId === null ? null : formatId('exec', row.targetExecutionId) },
  totalCost: row.totalCost / 100,
  startedAt: toIso(row.startedAt),
  lastActivityAt: toIso(row.lastActivityAt),
  traceKey: row.traceKey,
});

/** Spec 4.7 rule 5: another workspace's trace is 404, never 403. */
export async function requireTrace(db: ShardDb, principal: Principal, id: string): Promise<TraceRow> {
  const [row] = await db
    .select()
    .from(traces)
    .where(and(eq(traces.workspaceId, principal.workspaceId), eq(traces.id, id)))
    .limit(1);
  if (!row) throw notFound('Trace');
  return row;
}

export const getTrace = async (db: ShardDb, principal: Principal, id: string) => presentTrace(await requireTrace(db, principal, id));

// ---------------------------------------------------------------------------------------------
// The list.

/** `YYYY-MM-DD` (midnight UTC) or an ISO date-time, as epoch ms. */
const TimeBound = z.union([z.iso.date(), z.iso.datetime({ offset: true })]).transform((v) => Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v));

export const ListTracesQuery = z.object({
  kind: z.enum(['execution', 'chat']).optional(),
  status: z.string().min(1).max(40).optional(),
  agent: z.string().min(1).max(64).optional(),
  apiKey: z
    .string()
    .transform((v, ctx) => {
      const id = parseId('key', v);
      if (id === null) ctx.addIssue({ code: 'custom', message: 'apiKey is a workspace API key id (12 or key_12)' });
      return id ?? 0;
    })
    .optional(),
  since: TimeBound.optional(),
  until: TimeBound.optional(),
  limit: clampedInt(DEFAULT_TRACE_PAGE, MAX_TRACE_PAGE),
  cursor: z.string().min(1).max(200).optional(),
});
export type ListTracesQuery = z.infer<typeof ListTracesQuery>;

/** The opaque keyset cursor: the last trace id of the page (ids are UUIDv7, creation-ordered). */
const encodeCursor = (id: string) =>
  btoa(JSON.stringify({ v: 1, id }))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(atob(cursor.replace(/-/g, '+').replace(/_/g, '/'))) as { v?: unknown; id?: unknown };
    if (parsed.v === 1 && typeof parsed.id === 'string' && parsed.id.length <= 64) return parsed.id;
  } catch {
    // fall through: not a cursor of ours
  }
  throw invalidInput('cursor', 'cursor', 'cursor is not a cursor from a previous page');
}

/**
 * Newest trace first, keyed on the id, which never changes: pages neither skip nor repeat a
 * trace however lineages move while a client pages.
 */
export async function listTraces(db: ShardDb, principal: Principal, query: ListTracesQuery) {
  const rows = await db
    .select()
    .from(traces)
    .where(
      and(
        eq(traces.workspaceId, principal.workspaceId),
        query.kind === undefined ? undefined : eq(traces.kind, query.kind),
        query.status === undefined ? undefined : eq(traces.status, query.status),
        query.agent === undefined ? undefined : eq(traces.actorAgentSlug, query.agent),
        query.apiKey === undefined ? undefined : eq(traces.actorApiKeyId, query.apiKey),
        query.since === undefined ? undefined : gte(traces.lastActivityAt, query.since),
        query.until === undefined ? undefined : lt(traces.lastActivityAt, query.until),
        query.cursor === undefined ? undefined : lt(traces.id, decodeCursor(query.cursor)),
      ),
    )
    .orderBy(desc(traces.id))
    .limit(query.limit + 1);
  const page = rows.slice(0, query.limit);
  return { items: page.map(presentTrace), nextCursor: rows.length > query.limit ? encodeCursor(page.at(-1)!.id) : null };
}

// ---------------------------------------------------------------------------------------------
// Turns, resolved on read from the producers' event logs and merged with appended turns.

export const Turn = z.object({
  seq: z.number().int(),
  type: z.enum(TURN_TYPES),
  payload: z.record(z.string(), z.unknown()),
  actorAgentSlug: z.string().nullable(),
  at: z.string(),
  origin: z.enum(['producer', 'appended']),
  /** The execution whose log produced the turn; null for appended turns. */
  executionId: z.string().nullable(),
  /** Tokens of the model requests that ended on this turn; null when none did (and on appended turns). */
  tokens: z.object({ input: z.number().int(), output: z.number().int() }).nullable(),
  /** Ds charged for the run that ended on this turn; null otherwise. Summed over turns, it is the trace's totalCost. */
  cost: z.number().nullable(),
});
export type Turn = z.infer<typeof Turn>;

/** The events of a run that are settled: all but a trailing stream of text deltas, still growing. */
function settledEnd(events: ExecutionEvent[]): number {
  let end = events.length;
  while (end > 0 && events[end - 1]!.type === 'agent.message') end--;
  return end;
}

const textOf = (event: ExecutionEvent) => ((event.payload.content as { text?: string }[] | undefined) ?? []).map((c) => c.text ?? '').join('');

/**
 * Maps one segment's events to turns; consecutive text deltas become one `agent.text` turn. A
 * model request's tokens (`span.model_request_end`) and a run's charged cost (`execution.result`)
 * go to the turn before them: `last` carries that turn across the execution's segments.
 */
function producerTurns(events: ExecutionEvent[], seqOf: (eventSeq: number) => number, executionId: string, last: { turn?: Turn }): Turn[] {
  const turns: Turn[] = [];
  let text: Turn | null = null;
  for (const event of events) {
    const base = { seq: seqOf(event.seq), actorAgentSlug: null, at: toIso(event.at), origin: 'producer' as const, executionId, tokens: null, cost: null };
    const previous = turns.at(-1) ?? last.turn;
    if (event.type === 'span.model_request_end' && previous) {
      const usage = (event.payload.usage ?? {}) as { input_tokens?: number; output_tokens?: number };
      const tokens = previous.tokens ?? { input: 0, output: 0 };
      previous.tokens = { input: tokens.input + (usage.input_tokens ?? 0), output: tokens.output + (usage.output_tokens ?? 0) };
    }
    if (event.type === 'execution.result' && previous) previous.cost = (previous.cost ?? 0) + Number(event.payload.cost ?? 0);
    if (event.type === 'agent.message') {
      if (text) text.payload.text += textOf(event);
      else turns.push((text = { ...base, type: 'agent.text', payload: { text: textOf(event) } }));
      continue;
    }
    text = null;
    if (event.type === 'user.message') turns.push({ ...base, type: 'user.message', payload: { content: event.payload.content } });
    else if (event.type === 'agent.thinking') turns.push({ ...base, type: 'agent.thinking', payload: {} });
    else if (event.type === 'agent.tool_use') turns.push({ ...base, type: 'tool.call', payload: event.payload });
    else if (event.type === 'session.status_idle' && (event.payload.stop_reason as { type?: string } | undefined)?.type === 'error') {
      turns.push({ ...base, type: 'error', payload: { message: 'The run ended with an error', stopReason: 'error' } });
    }
  }
  last.turn = turns.at(-1) ?? last.turn;
  return turns;
}

/** The highest seq the trace has used, producer or appended (its high-water mark). */
const highWater = (traceId: string) =>
  sql`MAX(COALESCE((SELECT MAX(seq_end) FROM trace_segments WHERE trace_id = ${traceId}), 0), COALESCE((SELECT MAX(seq) FROM trace_turns WHERE trace_id = ${traceId}), 0))`;

const runsOf = (db: ShardDb, trace: TraceRow) =>
  db
    .select({ id: executions.id })
    .from(executions)
    .where(and(eq(executions.workspaceId, trace.workspaceId), eq(executions.traceKey, trace.traceKey)))
    .orderBy(asc(executions.id));

/**
 * Gives every settled producer event of the lineage a seq: events not mapped yet get a new
 * segment above the high-water mark, in one statement each (atomic against appends). Two readers
 * racing for the same events insert the same key, and only one lands.
 */
async function syncSegments(db: ShardDb, env: Env, trace: TraceRow) {
  const [runs, segments] = await Promise.all([runsOf(db, trace), db.select().from(traceSegments).where(eq(traceSegments.traceId, trace.id))]);
  for (const run of runs) {
    const mappedTo = Math.max(0, ...segments.filter((s) => s.executionId === run.id).map((s) => s.eventTo));
    const fresh = await env.EXECUTION_SESSION.getByName(formatId('exec', run.id)).events(mappedTo);
    const end = settledEnd(fresh);
    if (end === 0) continue;
    const from = fresh[0]!.seq;
    const to = fresh[end - 1]!.seq;
    await db.run(sql`
      INSERT INTO trace_segments (trace_id, execution_id, event_from, event_to, seq_start, seq_end)
      SELECT ${trace.id}, ${run.id}, ${from}, ${to}, hw + 1, hw + 1 + ${to - from} FROM (SELECT ${highWater(trace.id)} AS hw) WHERE true
      ON CONFLICT DO NOTHING`);
  }
}

export const TurnsQuery = z.object({
  afterSeq: z.coerce.number().int().min(0).default(0),
  limit: clampedInt(DEFAULT_TURN_PAGE, MAX_TURN_PAGE),
});
export type TurnsQuery = z.infer<typeof TurnsQuery>;

/** GET /traces/:id/events: the lineage's turns after `afterSeq`, in seq order. */
export async function listTurns(db: ShardDb, env: Env, principal: Principal, id: string, query: TurnsQuery) {
  const trace = await requireTrace(db, principal, id);
  await syncSegments(db, env, trace);
  const segments = await db
    .select()
    .from(traceSegments)
    .where(and(eq(traceSegments.traceId, trace.id), gt(traceSegments.seqEnd, query.afterSeq)))
    .orderBy(asc(traceSegments.seqStart));
  const produced: Turn[] = [];
  const lastTurns = new Map<number, { turn?: Turn }>();
  for (const segment of segments) {
    const executionId = formatId('exec', segment.executionId);
    const events = await env.EXECUTION_SESSION.getByName(executionId).events(segment.eventFrom - 1, segment.eventTo - segment.eventFrom + 1);
    const last = lastTurns.get(segment.executionId) ?? {};
    lastTurns.set(segment.executionId, last);
    const turns = producerTurns(events, (seq) => segment.seqStart + seq - segment.eventFrom, executionId, last).filter((t) => t.seq > query.afterSeq);
    produced.push(...turns);
    if (produced.length >= query.limit) break;
  }
  const appended = await db
    .select()
    .from(traceTurns)
    .where(and(eq(traceTurns.traceId, trace.id), gt(traceTurns.seq, query.afterSeq)))
    .orderBy(asc(traceTurns.seq))
    .limit(query.limit);
  const merged = [
    ...produced,
    ...appended.map((row): Turn => ({
      seq: row.seq,
      type: row.type,
      payload: row.payload,
      actorAgentSlug: row.actorAgentSlug,
      at: toIso(row.at),
      origin: 'appended',
      executionId: null,
      tokens: null,
      cost: null,
    })),
  ].sort((a, b) => a.seq - b.seq);
  return { items: merged.slice(0, query.limit) };
}

// ---------------------------------------------------------------------------------------------
// Appends (spec 4.7 rules 1-3).

export const AppendBody = z.object({
  events: z
    .array(
      z.object({
        type: z.enum(TURN_TYPES),
        payload: z.record(z.string(), z.unknown()),
        seq: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
      }),
    )
    .min(1)
    .max(MAX_APPEND)
    .refine((events) => new Set(events.filter((e) => e.seq !== undefined).map((e) => e.seq)).size === events.filter((e) => e.seq !== undefined).length, {
      message: 'Two events name the same seq',
    }),
});
export type AppendBody = z.infer<typeof AppendBody>;

const duplicateSeq = () => conflict('A turn with this seq is already in the trace (the append had landed)');

/**
 * Appends turns in one statement, so concurrent appenders are serialised by the database:
 * omitted seqs are numbered above the high-water mark (and above the request's own seqs), a
 * seq already used by an appended turn fails the statement on the primary key, one inside a
 * producer's range inserts nothing; both are 409 CONFLICT and nothing is written.
 */
export async function appendTurns(db: ShardDb, env: Env, principal: Principal, id: string, body: AppendBody) {
  const trace = await requireTrace(db, principal, id);
  await syncSegments(db, env, trace);
  let omitted = 0;
  const rows = body.events.map((e) => ({ seq: e.seq ?? null, k: e.seq === undefined ? ++omitted : null, type: e.type as TurnType, payload: e.payload }));
  const ownMax = Math.max(0, ...rows.map((r) => r.seq ?? 0));
  const json = JSON.stringify(rows);
  const at = now();
  let inserted: { seq: number }[];
  try {
    inserted = await db.all<{ seq: number }>(sql`
      INSERT INTO trace_turns (trace_id, seq, type, payload, actor_agent_slug, actor_user_id, actor_api_key_id, at)
      SELECT ${trace.id}, COALESCE(json_extract(j.value, '$.seq'), hw.v + json_extract(j.value, '$.k')), json_extract(j.value, '$.type'),
             json_extract(j.value, '$.payload'), ${principal.origin.agentSlug ?? null}, ${principal.userId}, ${apiKeyIdOf(principal)}, ${at}
      FROM json_each(${json}) AS j, (SELECT MAX(${highWater(trace.id)}, ${ownMax}) AS v) AS hw
      WHERE NOT EXISTS (
        SELECT 1 FROM trace_segments AS s, json_each(${json}) AS e
        WHERE s.trace_id = ${trace.id} AND json_extract(e.value, '$.seq') BETWEEN s.seq_start AND s.seq_end)
      ORDER BY j.key
      RETURNING seq`);
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateSeq();
    throw error;
  }
  if (inserted.length !== rows.length) throw duplicateSeq();
  await db
    .update(traces)
    .set({ lastActivityAt: sql`MAX(${traces.lastActivityAt}, ${at})` })
    .where(eq(traces.id, trace.id));
  return { appended: inserted.length, lastSeq: Math.max(...inserted.map((r) => r.seq)) };
}

// ---------------------------------------------------------------------------------------------
// Continue (spec 4.7 rule 4): starts nothing, says how to go on.

export const Continuation = z.object({
  status: z.literal('continuation_required'),
  traceId: z.string(),
  kind: z.enum(['execution', 'chat']),
  traceKey: z.string(),
  continueWith: z.object({ method: z.literal('POST'), path: z.string(), body: z.object({ sessionId: z.string() }) }),
  appendEventsTo: z.string(),
});

export async function continueTrace(db: ShardDb, principal: Principal, id: string): Promise<z.infer<typeof Continuation>> {
  const trace = await requireTrace(db, principal, id);
  const path = trace.kind === 'chat' ? `/api/v1/threads/${trace.targetThreadId}/messages` : '/api/v1/executions';
  return {
    status: 'continuation_required',
    traceId: trace.id,
    kind: trace.kind,
    traceKey: trace.traceKey,
    continueWith: { method: 'POST', path, body: { sessionId: trace.traceKey } },
    appendEventsTo: `/api/v1/traces/${trace.id}/events`,
  };
}
