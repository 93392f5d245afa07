import { eq, inArray, sql } from 'drizzle-orm';
import { shardLoads, workspaceShards } from '../../schema';
import type { Env, GlobalDb } from '../env';
import { AppError } from '../errors';
import { now } from '../lib/clock';
import { boundShards, shardDbOf } from '../lib/db';
import { vouchForNew } from './shard-placement';

/**
 * The directory: which shard holds each workspace. A new workspace goes to the bound, open shard
 * holding the fewest workspaces (`shard_loads`, kept in the same batch as every placement), the
 * lowest number on a tie; so a shard bound later takes the new workspaces until it catches up.
 * Judged by workspaces rather than rows or bytes: it is known without asking the shards, and a
 * workspace that outgrows its share is moved (docs/operations.md).
 */
export async function placement(db: GlobalDb, env: Env, workspaceId: string) {
  const bound = boundShards(env);
  const loads = new Map((await db.select().from(shardLoads).where(inArray(shardLoads.shard, bound))).map((row) => [row.shard, row]));
  const open = bound.filter((shard) => !loads.get(shard)?.closed);
  if (open.length === 0) throw new AppError('SERVICE_UNAVAILABLE', 503, 'No database is taking new workspaces right now; try again later.');
  const shard = open.reduce((best, candidate) => ((loads.get(candidate)?.workspaces ?? 0) < (loads.get(best)?.workspaces ?? 0) ? candidate : best));
  return {
    shard,
    /** For the batch that creates the workspace, so it never exists without a place. */
    statements: [
      db.insert(workspaceShards).values({ workspaceId, shard, updatedAt: now() }),
      db
        .insert(shardLoads)
        .values({ shard, workspaces: 1 })
        .onConflictDoUpdate({ target: shardLoads.shard, set: { workspaces: sql`${shardLoads.workspaces} + 1` } }),
    ] as const,
    /**
     * After the batch: the shard vouches for its new workspace, so the objects working in it ask
     * the shard rather than the directory. If this write fails the workspace still works: its
     * objects ask the directory instead.
     */
    vouch: () => vouchForNew(shardDbOf(env, shard), workspaceId, shard).catch(() => undefined),
  };
}

/** The workspace's directory row as it stands: its shard and, while a move fences its writes, the shard it moves to. */
export async function placeOf(db: GlobalDb, workspaceId: string): Promise<{ shard: number; movingTo: number | null } | undefined> {
  const [row] = await db
    .select({ shard: workspaceShards.shard, movingTo: workspaceShards.movingTo })
    .from(workspaceShards)
    .where(eq(workspaceShards.workspaceId, workspaceId))
    .limit(1);
  return row;
}
