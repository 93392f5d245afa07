import { drizzle } from 'drizzle-orm/d1';
import type { Db, Env, GlobalDb, ShardDb } from '../env';
import { AppError, workspaceMoving } from '../errors';

export type { GlobalDb, ShardDb } from '../env';

/**
 * Without a schema: the service writes every query with the builder (no relational `db.query`),
 * and drizzle would rebuild a schema's relational map on each call, which every request pays.
 */
const open = (database: D1Database | D1DatabaseSession): Db => drizzle(database as D1Database);

export const openGlobal = (database: D1Database | D1DatabaseSession): GlobalDb => open(database) as GlobalDb;

export const openShard = (database: D1Database | D1DatabaseSession, shard: number): ShardDb => Object.assign(open(database), { shard }) as unknown as ShardDb;

export const isShardDb = (db: GlobalDb | ShardDb): db is ShardDb => typeof (db as { shard?: unknown }).shard === 'number';

/** The shard a binding name stands for (`SHARD_<n>`, n from 1 to 4095), or undefined for any other name. */
export const shardOfBinding = (name: string): number | undefined => {
  const shard = /^SHARD_([1-9][0-9]{0,3})$/.exec(name)?.[1];
  return shard === undefined ? undefined : Number(shard);
};

/** The numbers of the shards this Worker has bindings for, ascending. */
export const boundShards = (env: Env): number[] =>
  Object.keys(env)
    .map(shardOfBinding)
    .filter((n): n is number => n !== undefined)
    .sort((a, b) => a - b);

/** Shard `n`'s binding; a directory naming a shard this Worker does not bind is a deployment fault (503, so clients retry). */
export function shardBinding(env: Env, shard: number): D1Database {
  const binding = (env as unknown as Record<string, unknown>)[`SHARD_${shard}`];
  if (!binding) throw new AppError('SERVICE_UNAVAILABLE', 503, 'This workspace’s data is not reachable right now; try again shortly.');
  return binding as D1Database;
}

/** Builders over whole bindings (not request sessions), made once per binding: they are asked for on every run start and tool call. */
const builders = new WeakMap<D1Database, Db>();
const builderOf = <T extends Db>(binding: D1Database, make: (binding: D1Database) => T): T => {
  let db = builders.get(binding) as T | undefined;
  if (!db) builders.set(binding, (db = make(binding)));
  return db;
};

/** The query builder over shard `n`, outside any request (objects, queues, housekeeping). */
export const shardDbOf = (env: Env, shard: number): ShardDb => builderOf(shardBinding(env, shard), (binding) => openShard(binding, shard));

/** The query builder over the global database, outside any request. */
export const globalDbOf = (env: Env): GlobalDb => builderOf(env.DB, openGlobal);

/** Whether a statement changes rows (drizzle writes each as one of these). */
export const writesRows = (query: string): boolean => /^\s*(insert|update|delete|replace)\b/i.test(query);

/**
 * The database (or session) refusing every statement that writes, with 503 and Retry-After: a
 * request in a workspace whose move fences its writes reads the old shard and changes nothing,
 * whichever route it came by.
 */
export function refusingWrites(database: D1Database | D1DatabaseSession): D1Database | D1DatabaseSession {
  return new Proxy(database, {
    get(target, property) {
      if (property !== 'prepare') {
        const value: unknown = Reflect.get(target, property);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return (query: string) => {
        if (writesRows(query)) throw workspaceMoving();
        return target.prepare(query);
      };
    },
  });
}
