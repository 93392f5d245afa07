import { lt } from 'drizzle-orm';
import type { BatchItem, BatchResponse } from 'drizzle-orm/batch';
import { runToolCalls } from '../../schema';
import type { ShardDb } from '../env';
import { now } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';
import { isConstraintFailure } from '../lib/db-errors';

/** Longer than any turn (65 minutes) can be resumed. */
const KEPT_MS = 24 * 3600_000;

/**
 * One tool call of one turn, as a key: the model's call id is the same when a turn cut off
 * during the call makes it again (the checkpoint keeps the round), and unique within the turn.
 * None for a tool run outside a turn's loop.
 */
export const toolCallKey = async (turnKey: string, call?: { id: string }) => call && (await sha256Hex(`${turnKey}:${call.id}`)).slice(0, 32);

/**
 * Sends `statements` as one D1 batch; as the effect of tool call `key`, once: the call's key is
 * written in the same batch, so the batch of the call made again fails whole on it, and answers
 * undefined.
 */
export async function batchOnce<T extends [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]]>(
  db: ShardDb,
  statements: T,
  key?: string,
): Promise<BatchResponse<T> | undefined> {
  if (key === undefined) return db.batch(statements);
  try {
    // The key's own result comes last, past what the caller reads.
    return (await db.batch([...statements, db.insert(runToolCalls).values({ key, createdAt: now() })])) as unknown as BatchResponse<T>;
  } catch (error) {
    if (isConstraintFailure(error, 'UNIQUE', 'run_tool_calls.key')) return undefined;
    throw error;
  }
}

/** Hourly housekeeping: keys of calls long past any resume. */
export const deleteExpiredToolCalls = (db: ShardDb) => db.delete(runToolCalls).where(lt(runToolCalls.createdAt, now() - KEPT_MS));
