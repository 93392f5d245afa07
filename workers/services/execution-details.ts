import { z } from 'zod';
import { executions } from '../../schema';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { formatId } from '../lib/ids';
import { ArtifactRecord, artifactsOfExecution } from './artifacts';
import { HistoryItem, presentHistory } from './executions';
import { requireOwned } from './tenant';

/** GET /executions/:id: the history item, with what the run used and the files it produced. */
export const ExecutionDetails = HistoryItem.extend({
  parentExecutionId: z.string().nullable(),
  /** Milliseconds spent working, over all turns. */
  executionTime: z.number().int(),
  tokenUsage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int() }),
  artifacts: z.array(ArtifactRecord),
});
export type ExecutionDetails = z.infer<typeof ExecutionDetails>;

export async function getExecutionDetails(db: ShardDb, principal: Principal, rawId: string): Promise<ExecutionDetails> {
  const row = await requireOwned(db, executions, principal, 'exec', rawId, 'Execution');
  return {
    ...presentHistory(row),
    parentExecutionId: row.parentExecutionId === null ? null : formatId('exec', row.parentExecutionId),
    executionTime: row.executionTimeMs,
    tokenUsage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens },
    artifacts: await artifactsOfExecution(db, principal, row.id),
  };
}
