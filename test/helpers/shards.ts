import { env } from 'cloudflare:workers';
import { boundShards, globalDbOf, shardBinding, shardDbOf, type ShardDb } from '../../workers/lib/db';
import { placeOf } from '../../workers/services/directory';

/** The shard number the directory names for `workspaceId`. */
export async function shardNumberOf(workspaceId: string): Promise<number> {
  const place = await placeOf(globalDbOf(env), workspaceId);
  if (place === undefined) throw new Error(`workspace ${workspaceId} is in no shard`);
  return place.shard;
}

/** The D1 database holding `workspaceId`'s rows. */
export const shardD1 = async (workspaceId: string): Promise<D1Database> => shardBinding(env, await shardNumberOf(workspaceId));

/** The query builder over the shard holding `workspaceId`'s rows. */
export const shardDbFor = async (workspaceId: string): Promise<ShardDb> => shardDbOf(env, await shardNumberOf(workspaceId));

/**
 * Every shard at once, for a test that reads rows by an id without knowing their workspace:
 * `first` answers the first shard's row, `all` every shard's rows, `run` runs on each.
 * Not for inserts (use `shardD1`).
 */
export const allShards = {
  prepare(query: string) {
    const each = (...values: unknown[]) =>
      boundShards(env).map((shard) =>
        shardBinding(env, shard)
          .prepare(query)
          .bind(...values),
      );
    const bound = (values: unknown[]) => ({
      async first<T = Record<string, unknown>>(column?: string): Promise<T | null> {
        for (const statement of each(...values)) {
          const row = column === undefined ? await statement.first<T>() : await statement.first<T>(column);
          if (row !== null) return row;
        }
        return null;
      },
      async all<T = Record<string, unknown>>() {
        const results = (await Promise.all(each(...values).map((statement) => statement.all<T>()))).flatMap((answer) => answer.results);
        return { results };
      },
      async run() {
        const answers = await Promise.all(each(...values).map((statement) => statement.run()));
        return { meta: { changes: answers.reduce((sum, answer) => sum + answer.meta.changes, 0) } };
      },
    });
    return { bind: (...values: unknown[]) => bound(values), ...bound([]) };
  },
};
