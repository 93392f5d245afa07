import { lt } from 'drizzle-orm';
import { runToolCalls } from '../../schema';
import type { Db } from '../env';
import { now } from '../lib/clock';
import { sha256Hex } from '../lib/crypto';
import { isConstraintFailure } from '../lib/db-errors';

/** Longer than any turn (65 minutes) can be resumed. */
const KEPT_MS = 24 * 3600_000;

/**
 * One tool call of one turn, as a key: the model's call id is the same when a turn cut off
 * during the call makes it again (the checkpoint keeps the round), and unique within the turn.
 */
export const toolCallKey = async (turnKey: string, callId: string) => (await sha256Hex(`${turnKey}:${callId}`)).slice(0, 32);

/**
 * The statement that makes a D1 batch the one effect of tool call `key`: the batch that makes the
 * call again fails whole on it, which `madeBefore` recognises.
 */
export const onceForToolCall = (db: Db, key: string) => db.insert(runToolCalls).values({ key, createdAt: now() });

/** Whether a batch with `onceForToolCall` failed because that call had already made its effect. */
export const madeBefore = (error: unknown) => isConstraintFailure(error, 'UNIQUE', 'run_tool_calls.key');

/** Hourly housekeeping: keys of calls long past any resume. */
export const deleteExpiredToolCalls = (db: Db) => db.delete(runToolCalls).where(lt(runToolCalls.createdAt, now() - KEPT_MS));
