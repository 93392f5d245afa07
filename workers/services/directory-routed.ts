import type { Env, ShardDb } from '../env';
import { workspaceMoving } from '../errors';
import { globalDbOf, openShard, shardBinding, writesRows } from '../lib/db';
import { placeOf } from './directory';

/** How long a Durable Object's write waits for a move's fence to lift before failing (its caller retries later). */
const FENCE_WAIT_MS = 30_000;
const FENCE_POLL_MS = 250;

/**
 * How long an object trusts a directory read that found no fence. A move waits at least this
 * long after raising its fence before it copies under it (workspace-move.ts), so no object
 * writes to the old shard past that point; and a turn's statements cost one global read a
 * second at most instead of one each.
 */
export const PLACE_TTL_MS = 1_000;
const unfenced = new Map<string, { shard: number; until: number }>();
const MAX_REMEMBERED = 1_000;

/**
 * The workspace's shard as the directory names it now. A write waits while a move fences the
 * workspace (then goes to the shard the move flipped to); a read is answered by the shard that
 * holds the rows, fenced or not.
 */
async function shardNow(env: Env, workspaceId: string, writes: boolean): Promise<D1Database> {
  const remembered = unfenced.get(workspaceId);
  if (remembered && remembered.until > Date.now()) return shardBinding(env, remembered.shard);
  const deadline = Date.now() + FENCE_WAIT_MS;
  for (;;) {
    const place = await placeOf(globalDbOf(env), workspaceId);
    if (!place) throw new Error(`Workspace ${workspaceId} has no directory entry`);
    if (place.movingTo === null) {
      if (unfenced.size >= MAX_REMEMBERED) unfenced.clear();
      unfenced.set(workspaceId, { shard: place.shard, until: Date.now() + PLACE_TTL_MS });
    }
    if (!writes || place.movingTo === null) return shardBinding(env, place.shard);
    if (Date.now() >= deadline) throw workspaceMoving();
    await new Promise((resolve) => setTimeout(resolve, FENCE_POLL_MS));
  }
}

/** A statement whose database is chosen when it runs. */
class RoutedStatement {
  constructor(
    private readonly env: Env,
    private readonly workspaceId: string,
    readonly query: string,
    private readonly params: unknown[] = [],
  ) {}

  get writes() {
    return writesRows(this.query);
  }

  bind(...params: unknown[]) {
    return new RoutedStatement(this.env, this.workspaceId, this.query, params);
  }

  on(database: D1Database): D1PreparedStatement {
    return database.prepare(this.query).bind(...this.params);
  }

  private async statement() {
    return this.on(await shardNow(this.env, this.workspaceId, this.writes));
  }

  async first(column?: string) {
    const statement = await this.statement();
    return column === undefined ? statement.first() : statement.first(column);
  }

  async run() {
    return (await this.statement()).run();
  }

  async all() {
    return (await this.statement()).all();
  }

  async raw(options?: { columnNames?: boolean }) {
    const statement = await this.statement();
    return options?.columnNames ? statement.raw({ columnNames: true }) : statement.raw();
  }
}

/**
 * A D1 binding whose statements each go to the workspace's shard as the directory names it when
 * they run, for the Durable Objects: a turn, a workflow run or an export outlives requests, and
 * the workspace may move meanwhile. The directory is read again at the first statement after
 * PLACE_TTL_MS, so a moved workspace's rows are never written to its old shard, nor read from it
 * once the move deletes them there, and a write during a move's fence waits for it to lift.
 */
export function directoryRoutedD1(env: Env, workspaceId: string): D1Database {
  const routed = {
    prepare: (query: string) => new RoutedStatement(env, workspaceId, query),
    batch: async (statements: RoutedStatement[]) => {
      const database = await shardNow(
        env,
        workspaceId,
        statements.some((s) => s.writes),
      );
      return database.batch(statements.map((s) => s.on(database)));
    },
  };
  return routed as unknown as D1Database;
}

/** The query builder over directoryRoutedD1; `shard` is the number the run started with (the builder's marker only). */
export const directoryRoutedShardDb = (env: Env, workspaceId: string, shard: number): ShardDb => openShard(directoryRoutedD1(env, workspaceId), shard);
