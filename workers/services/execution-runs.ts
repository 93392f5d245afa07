import { eq, sql } from 'drizzle-orm';
import { artifacts, executions } from '../../schema';
import { statusAfterRun, type RunStopReason, type TurnInput } from './execution-events';
import type { Db } from '../env';
import { now } from '../lib/clock';
import { workspacePrefix } from './archive-install';
import { traceRunFinished } from './traces';

/** Artifact names the agent may use: plain file names. */
const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const MAX_ARTIFACT_BYTES = 1024 * 1024;

const contentTypeOf = (name: string) =>
  name.endsWith('.md') ? 'text/markdown; charset=utf-8' : name.endsWith('.json') ? 'application/json' : 'text/plain; charset=utf-8';

/** Stores a file the run produced in R2 under the workspace's prefix and indexes it in D1. */
export async function saveArtifact(db: Db, bucket: R2Bucket, turn: TurnInput, name: string, content: string): Promise<string | null> {
  const bytes = new TextEncoder().encode(content);
  if (!ARTIFACT_NAME.test(name) || bytes.length > MAX_ARTIFACT_BYTES) return null;
  const key = `${workspacePrefix(turn.workspaceId)}artifacts/exec_${turn.executionId}/${crypto.randomUUID()}/${name}`;
  const contentType = contentTypeOf(name);
  await bucket.put(key, bytes, { httpMetadata: { contentType } });
  await db.insert(artifacts).values({
    workspaceId: turn.workspaceId,
    executionId: turn.executionId,
    name,
    contentType,
    size: bytes.length,
    r2Key: key,
    createdAt: now(),
  });
  return name;
}

/** Writes a finished turn's outcome to the executions index and its lineage's trace, in one batch. */
export async function finishTurn(
  db: Db,
  executionId: number,
  reason: RunStopReason,
  totals: { cost: number; inputTokens: number; outputTokens: number; elapsedMs: number },
) {
  const status = statusAfterRun(reason);
  await db.batch([
    db
      .update(executions)
      .set({
        status,
        cost: sql`${executions.cost} + ${totals.cost}`,
        inputTokens: sql`${executions.inputTokens} + ${totals.inputTokens}`,
        outputTokens: sql`${executions.outputTokens} + ${totals.outputTokens}`,
        executionTimeMs: sql`${executions.executionTimeMs} + ${totals.elapsedMs}`,
        completedAt: status === 'idle' ? null : now(),
      })
      .where(eq(executions.id, executionId)),
    traceRunFinished(db, executionId, reason, totals.cost),
  ]);
}
