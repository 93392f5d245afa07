import { and, eq, sql } from 'drizzle-orm';
import { workflowRuns } from '../../schema/shard/workflows';
import type { ShardDb } from '../env';

/**
 * Concurrency keys (docs/workflows.md): at most `limit` unfinished runs of one workflow per key
 * go at once; the rest wait as `queued` rows and start in launch order (creation time, then the
 * order the rows were written). The shard's row is where runs of a key meet, so admission is one
 * statement there: the run takes a slot only if fewer than `limit` runs of its key are running
 * or suspended or queued before it.
 */

/** Admits the queued run `runId` if its key has a slot for it; answers whether the run is admitted (now or already). */
export async function admitQueuedRun(db: ShardDb, runId: string, limit: number): Promise<boolean> {
  const [, [row]] = await db.batch([
    db
      .update(workflowRuns)
      .set({ status: 'running' })
      .where(
        sql`run_id = ${runId} AND status = 'queued' AND concurrency_key IS NOT NULL AND (
          SELECT count(*) FROM workflow_runs o
          WHERE o.workspace_id = workflow_runs.workspace_id AND o.workflow_id = workflow_runs.workflow_id
            AND o.concurrency_key = workflow_runs.concurrency_key AND o.run_id <> workflow_runs.run_id
            AND (o.status IN ('running', 'suspended')
              OR (o.status = 'queued' AND (o.created_at < workflow_runs.created_at
                OR (o.created_at = workflow_runs.created_at AND o.rowid < workflow_runs.rowid))))
        ) < ${limit}`,
      ),
    db
      .select({ status: workflowRuns.status })
      .from(workflowRuns)
      .where(sql`${workflowRuns.runId} = ${runId}`)
      .limit(1),
  ]);
  return row?.status === 'running';
}

/** The oldest queued runs of a key, at most `limit` of them: the ones a freed slot may let start. */
export async function oldestQueuedRuns(db: ShardDb, of: { workspaceId: string; workflowId: string; concurrencyKey: string }, limit: number): Promise<string[]> {
  const rows = await db
    .select({ runId: workflowRuns.runId })
    .from(workflowRuns)
    .where(
      and(
        eq(workflowRuns.workspaceId, of.workspaceId),
        eq(workflowRuns.workflowId, of.workflowId),
        eq(workflowRuns.concurrencyKey, of.concurrencyKey),
        eq(workflowRuns.status, 'queued'),
      ),
    )
    .orderBy(workflowRuns.createdAt, sql`rowid`)
    .limit(limit);
  return rows.map((r) => r.runId);
}
