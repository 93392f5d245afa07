import { and, eq, exists, sql } from 'drizzle-orm';
import { artifacts, executions } from '../../schema';
import { settle, type Settlement } from './credits';
import { statusAfterRun, type RunStopReason, type TurnInput } from './execution-events';
import type { GlobalDb, ShardDb } from '../env';
import { now } from '../lib/clock';
import { workspacePrefix } from './archive-install';
import { spendStatements } from './spend-limits';
import { traceRunFinished } from './traces';

/** Artifact names the agent may use: plain file names. */
const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const MAX_ARTIFACT_BYTES = 1024 * 1024;

const contentTypeOf = (name: string) =>
  name.endsWith('.md') ? 'text/markdown; charset=utf-8' : name.endsWith('.json') ? 'application/json' : 'text/plain; charset=utf-8';

/** An artifact stored in R2, not yet indexed: the row `indexArtifact` writes. */
export type StoredArtifact = typeof artifacts.$inferInsert;

/**
 * Stores a file the run produced in R2 under the workspace's prefix; null for a name or size a
 * run may not use. Written by a tool call (`callKey`, see run-tool-calls.ts), its R2 key is that
 * call's, so the call made again puts the same object.
 */
export async function storeArtifact(
  bucket: R2Bucket,
  turn: Pick<TurnInput, 'actor' | 'executionId'>,
  name: string,
  content: string,
  callKey?: string,
): Promise<StoredArtifact | null> {
  const bytes = new TextEncoder().encode(content);
  if (!ARTIFACT_NAME.test(name) || bytes.length > MAX_ARTIFACT_BYTES) return null;
  const { workspaceId } = turn.actor;
  const key = `${workspacePrefix(workspaceId)}artifacts/exec_${turn.executionId}/${callKey ?? crypto.randomUUID()}/${name}`;
  const contentType = contentTypeOf(name);
  await bucket.put(key, bytes, { httpMetadata: { contentType } });
  return { workspaceId, executionId: turn.executionId, name, contentType, size: bytes.length, r2Key: key, createdAt: now() };
}

/** The artifact's row; a second index of the same R2 object (a tool call made again) adds none. */
const indexArtifact = (db: ShardDb, stored: StoredArtifact) => db.insert(artifacts).values(stored).onConflictDoNothing({ target: artifacts.r2Key });

/** Stores a file a tool call of the run wrote in R2 and indexes it in D1: once per call (`callKey`), however often the call is made. */
export async function saveArtifact(
  db: ShardDb,
  bucket: R2Bucket,
  turn: Pick<TurnInput, 'actor' | 'executionId'>,
  name: string,
  content: string,
  callKey?: string,
): Promise<string | null> {
  const stored = await storeArtifact(bucket, turn, name, content, callKey);
  if (!stored) return null;
  await indexArtifact(db, stored);
  return name;
}

/** Whether the execution is still in the turn `turnKey` (its closing record has not landed). */
const inTurn = (executionId: number, turnKey: string) => and(eq(executions.id, executionId), eq(executions.status, 'working'), eq(executions.turnKey, turnKey));

/** Whether the closing record of the turn `turnKey` has landed: the execution has left that turn. */
export async function turnClosed(db: ShardDb, executionId: number, turnKey: string): Promise<boolean> {
  const [row] = await db.select({ id: executions.id }).from(executions).where(inTurn(executionId, turnKey)).limit(1);
  return row === undefined;
}

/**
 * A finished turn's bookkeeping: its settlement on the global ledger (once per hold: a replay
 * charges nothing more and answers what was charged), then, on the workspace's shard in one D1
 * request, its outcome on the executions index, its lineage's trace (the cost each records is
 * what the settlement charged) and the row of its output, stored in R2 before. That request
 * changes nothing once the execution has left the turn, so sending both again after a cut-off
 * is safe. Answers what was charged and what the user has available once it was (unknown
 * when the settlement was made before).
 */
export async function closeTurn(
  db: ShardDb,
  ledger: GlobalDb,
  turn: {
    executionId: number;
    turnKey: string;
    reason: RunStopReason;
    settlement: Settlement;
    totals: { inputTokens: number; outputTokens: number; elapsedMs: number };
    output: StoredArtifact | null;
  },
): Promise<{ charged: number; available: number | undefined }> {
  const { executionId, turnKey, reason, totals, settlement } = turn;
  const { charged, available } = await settle(ledger, settlement);
  const status = statusAfterRun(reason);
  const open = inTurn(executionId, turnKey);
  const record = [
    // The trace and the workspace's spend first: each lands only while the execution is still in this turn, as the record below does.
    traceRunFinished(db, executionId, reason, charged, exists(db.select({ id: executions.id }).from(executions).where(open))),
    ...spendStatements(db, executionId, open, charged),
    db
      .update(executions)
      .set({
        status,
        cost: sql`${executions.cost} + ${charged}`,
        inputTokens: sql`${executions.inputTokens} + ${totals.inputTokens}`,
        outputTokens: sql`${executions.outputTokens} + ${totals.outputTokens}`,
        executionTimeMs: sql`${executions.executionTimeMs} + ${totals.elapsedMs}`,
        completedAt: status === 'idle' ? null : now(),
      })
      .where(open),
  ] as const;
  await (turn.output ? db.batch([...record, indexArtifact(db, turn.output)]) : db.batch(record));
  return { charged, available };
}
