import { and, eq, sql } from 'drizzle-orm';
import { executions, telemetryDestinations, type TelemetryDestinationRow } from '../../schema';
import type { Env, ShardDb } from '../env';
import { now } from '../lib/clock';
import { formatId } from '../lib/ids';
import { exportRequest, type Span } from '../lib/otlp';
import { OUTBOUND_TIMEOUT_MS, outboundUrl } from '../lib/outbound';
import type { TurnInput } from './execution-events';
import { sessionOf } from './execution-reconciler';
import { runSpans } from './run-spans';
import { destinationOf, exportHeaders } from './telemetry';
import { workflowSpans } from './workflow-spans';

/**
 * Exporting runs to a workspace's OpenTelemetry destination (docs/telemetry.md). When a run
 * has ended and its record is settled, or a workflow run has finished, one message goes to the
 * `telemetry-export` queue (only for a workspace with a destination); the consumer builds the
 * run's spans from what its log recorded and POSTs them, one request per workspace per batch. A failed POST is retried by the
 * queue; after the last attempt the trace is counted as dropped. Nothing here waits on or
 * fails a run.
 */

/** Attempts of one export: the first and the queue's retries (wrangler.toml `max_retries`). */
export const EXPORT_ATTEMPTS = 3;
/** The wait before the retry after attempt n: long enough for a collector's restart. */
export const retryDelaySeconds = (attempt: number) => 10 * 4 ** (attempt - 1);

/** A run to export: the execution's turn, the model that ran it and the caller's trace it continues. */
export interface RunTelemetryMessage {
  kind: 'execution';
  workspaceId: string;
  shard: number;
  executionId: number;
  turnKey: string;
  model: string;
  ownKey: boolean;
  traceparent: string | null;
}

/** A finished workflow run to export, and the trace of the request that launched it. */
export interface WorkflowTelemetryMessage {
  kind: 'workflow_run';
  workspaceId: string;
  shard: number;
  runId: string;
  traceparent: string | null;
}

export type TelemetryMessage = RunTelemetryMessage | WorkflowTelemetryMessage;

export const isTelemetryMessage = (body: unknown): body is TelemetryMessage => {
  const b = body as Record<string, unknown> | null;
  if (typeof b?.workspaceId !== 'string' || !Number.isInteger(b.shard)) return false;
  if (b.kind === 'workflow_run') return typeof b.runId === 'string';
  return b.kind === 'execution' && Number.isInteger(b.executionId) && typeof b.turnKey === 'string' && typeof b.model === 'string';
};

/** Queues a message when its workspace has a destination; never throws. */
async function queueExport(db: ShardDb, env: Env, message: TelemetryMessage): Promise<void> {
  try {
    if (!(await destinationOf(db, message.workspaceId))) return;
    await env.TELEMETRY_EXPORT.send(message);
  } catch (error) {
    const run = message.kind === 'execution' ? { executionId: message.executionId } : { runId: message.runId };
    console.error(JSON.stringify({ level: 'warn', message: 'run export not queued', workspaceId: message.workspaceId, ...run, error: String(error) }));
  }
}

/** Queues the export of a settled turn when its workspace has a destination; never throws. */
export const queueRunExport = (db: ShardDb, env: Env, turn: TurnInput, ended: { model: string; ownKey: boolean }) =>
  queueExport(db, env, {
    kind: 'execution',
    workspaceId: turn.actor.workspaceId,
    shard: turn.actor.shard,
    executionId: turn.executionId,
    turnKey: turn.turnKey,
    model: ended.model,
    ownKey: ended.ownKey,
    traceparent: turn.actor.origin.traceparent ?? null,
  });

/** Queues the export of a finished workflow run when its workspace has a destination; never throws. */
export const queueWorkflowExport = (db: ShardDb, env: Env, run: Omit<WorkflowTelemetryMessage, 'kind'>) =>
  queueExport(db, env, { kind: 'workflow_run', ...run });

/** The spans of the run a message names, or none when it is gone (deleted, or past retention). */
async function spansOf(db: ShardDb, env: Env, message: TelemetryMessage): Promise<Span[]> {
  if (message.kind === 'workflow_run') {
    const source = await env.WORKFLOW_RUN.getByName(message.runId).traceSource();
    return source?.workspaceId === message.workspaceId ? workflowSpans(source, message.traceparent) : [];
  }
  const [execution] = await db
    .select({ skillName: executions.skillName, skillSlug: executions.skillSlug })
    .from(executions)
    .where(and(eq(executions.id, message.executionId), eq(executions.workspaceId, message.workspaceId)))
    .limit(1);
  if (!execution) return [];
  const events = await sessionOf(env, message.executionId).turnEvents(message.turnKey);
  if (events.length === 0) return [];
  return runSpans({ ...message, ...execution, executionId: formatId('exec', message.executionId), events });
}

/** POSTs spans to the destination; answers why it failed, or null. */
async function post(env: Env, destination: TelemetryDestinationRow, spans: Span[]): Promise<string | null> {
  let url: URL;
  try {
    url = outboundUrl(destination.endpoint, 'endpoint', env);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const body = exportRequest(
    { 'service.name': 'workspace-skills-service', 'workspace_skills.workspace.id': destination.workspaceId },
    { name: 'workspace-skills-service', version: '1' },
    spans,
  );
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...(await exportHeaders(env.ENCRYPTION_KEY, destination)), 'content-type': 'application/json' },
      body: JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return response.ok ? null : `HTTP ${response.status}`;
  } catch (error) {
    return error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${OUTBOUND_TIMEOUT_MS / 1000} s` : 'the endpoint could not be reached';
  }
}

/** What became of a workspace's messages: sent, to try again, or dropped after their last attempt. */
export interface ExportOutcome {
  sent: boolean;
  error: string | null;
}

/**
 * Exports the runs of one workspace's messages as one request. Counts them as exported on
 * success; on failure, records the error and counts those on their last attempt (`final`) as
 * dropped, the others to be retried by the caller.
 */
export async function exportRuns(db: ShardDb, env: Env, workspaceId: string, messages: TelemetryMessage[], final: boolean[]): Promise<ExportOutcome> {
  const destination = await destinationOf(db, workspaceId);
  if (!destination) return { sent: true, error: null };
  const traces = (await Promise.all(messages.map((m) => spansOf(db, env, m)))).filter((spans) => spans.length > 0);
  const spans = traces.flat();
  if (spans.length === 0) return { sent: true, error: null };
  const error = await post(env, destination, spans);
  const where = eq(telemetryDestinations.workspaceId, workspaceId);
  if (error === null) {
    await db
      .update(telemetryDestinations)
      .set({ exported: sql`${telemetryDestinations.exported} + ${traces.length}` })
      .where(where);
    return { sent: true, error: null };
  }
  await countDropped(db, workspaceId, final.filter(Boolean).length, error);
  return { sent: false, error };
}

/** Why an export that could not be made at all (its spans not built, its destination not read) failed, as `lastError` says it. */
export const EXPORT_NOT_MADE = 'the export could not be prepared';

/** Records a failed attempt's error and counts `dropped` traces, those whose last attempt it was. */
export const countDropped = (db: ShardDb, workspaceId: string, dropped: number, error: string) =>
  db
    .update(telemetryDestinations)
    .set({ dropped: sql`${telemetryDestinations.dropped} + ${dropped}`, lastError: error, lastErrorAt: now() })
    .where(eq(telemetryDestinations.workspaceId, workspaceId));
