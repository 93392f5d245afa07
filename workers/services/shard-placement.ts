import { and, eq } from 'drizzle-orm';
import { workspacePlacement } from '../../schema';
import type { ShardDb } from '../env';
import { now } from '../lib/clock';

/**
 * A shard's own word on a workspace (schema/shard/placement.ts): written for a new workspace's
 * shard, fenced by a move before it copies under its fence, and written for the target by the
 * flip. Each takes the builder over the one shard it speaks for (`shardDbOf`).
 */

/** Whether `shard` says it holds the workspace with no move's fence up. */
export async function shardVouches(db: ShardDb, workspaceId: string, shard: number): Promise<boolean> {
  const [row] = await db
    .select({ fenced: workspacePlacement.fenced })
    .from(workspacePlacement)
    .where(and(eq(workspacePlacement.workspaceId, workspaceId), eq(workspacePlacement.shard, shard), eq(workspacePlacement.fenced, false)))
    .limit(1);
  return row !== undefined;
}

/**
 * For a new workspace: its shard vouches for it. Never over a row already there: a move's fence
 * may have landed first, and it must win.
 */
export const vouchForNew = (db: ShardDb, workspaceId: string, shard: number) =>
  db.insert(workspacePlacement).values({ workspaceId, shard, fenced: false, updatedAt: now() }).onConflictDoNothing();

/** Sets the shard's word, over any row there: a move's fence on its source, or its flip on the target (over the row its copy carried). */
const setPlacement = (db: ShardDb, workspaceId: string, shard: number, fenced: boolean) =>
  db
    .insert(workspacePlacement)
    .values({ workspaceId, shard, fenced, updatedAt: now() })
    .onConflictDoUpdate({ target: workspacePlacement.workspaceId, set: { shard, fenced, updatedAt: now() } });

/** A deletion's: the shard stops vouching for the workspace before the directory forgets it. */
export const forgetPlacement = (db: ShardDb, workspaceId: string) => db.delete(workspacePlacement).where(eq(workspacePlacement.workspaceId, workspaceId));

export const fencePlacement = (db: ShardDb, workspaceId: string, shard: number) => setPlacement(db, workspaceId, shard, true);
export const vouchAfterMove = (db: ShardDb, workspaceId: string, shard: number) => setPlacement(db, workspaceId, shard, false);
