import type { Env, ShardDb } from '../env';
import { workspaceMoving } from '../errors';
import { boundShards, globalDbOf, openShard, shardBinding, shardDbOf, writesRows } from '../lib/db';
import { placeOf } from './directory';
import { shardVouches } from './shard-placement';

/** How long a Durable Object's write waits for a move's fence to lift before failing (its caller retries later). */
const FENCE_WAIT_MS = 30_000;
const FENCE_POLL_MS = 250;

/**
 * How long an object trusts its last look at where the workspace is. A move waits at least this
 * long after raising its fence (in the directory, then on the source shard) before it copies
 * under it (workspace-move.ts), so no object writes to the old shard past that point.
 */
export const PLACE_TTL_MS = 1_000;
/** Per workspace: the shard last found holding it unfenced, and until when that is trusted. */
const places = new Map<string, { shard: number; until: number }>();
const MAX_REMEMBERED = 1_000;

function remember(workspaceId: string, shard: number, askedAt: number) {
  if (places.size >= MAX_REMEMBERED) places.clear();
  // Trust runs from when the look was asked, not answered: the fence may have gone up meanwhile.
  places.set(workspaceId, { shard, until: askedAt + PLACE_TTL_MS });
}

/** The shard last found holding the workspace (or `hint`), if it still vouches for it; remembered then. */
async function vouchedShard(env: Env, workspaceId: string, hint: number | undefined): Promise<number | undefined> {
  const known = places.get(workspaceId);
  if (known && known.until > Date.now()) return known.shard;
  const candidate = known?.shard ?? hint;
  const askedAt = Date.now();
  if (candidate === undefined || !boundShards(env).includes(candidate) || !(await shardVouches(shardDbOf(env, candidate), workspaceId, candidate)))
    return undefined;
  remember(workspaceId, candidate, askedAt);
  return candidate;
}

/** The directory's row for the workspace, remembered when no fence is up. */
async function directoryPlace(env: Env, workspaceId: string) {
  const askedAt = Date.now();
  const place = await placeOf(globalDbOf(env), workspaceId);
  if (place?.movingTo === null) remember(workspaceId, place.shard, askedAt);
  return place;
}

/**
 * The workspace's shard as it is now. First the shard it was last found on (or `hint`, the one
 * its work started with) is asked whether it still holds the workspace unfenced: a shard read,
 * so a long run costs the global database nothing after its start. Only when that shard does
 * not vouch (a move fenced or moved the workspace) is the directory read: a write then waits
 * while a move fences the workspace (and goes to the shard the move flipped to); a read is
 * answered by the shard that holds the rows, fenced or not.
 */
async function shardNow(env: Env, workspaceId: string, writes: boolean, hint: number | undefined): Promise<D1Database> {
  const vouched = await vouchedShard(env, workspaceId, hint);
  if (vouched !== undefined) return shardBinding(env, vouched);
  const deadline = Date.now() + FENCE_WAIT_MS;
  for (;;) {
    const place = await directoryPlace(env, workspaceId);
    if (!place) throw new Error(`Workspace ${workspaceId} has no directory entry`);
    if (!writes || place.movingTo === null) return shardBinding(env, place.shard);
    if (Date.now() >= deadline) throw workspaceMoving();
    await new Promise((resolve) => setTimeout(resolve, FENCE_POLL_MS));
  }
}

/**
 * Whether the workspace still exists, for work that outlived a request (a queued webhook or
 * telemetry message): its shard vouching for it answers without the directory, which is asked
 * only when the shard does not (moved, being moved, or deleted: a deletion makes the shard stop
 * vouching before the directory forgets the workspace).
 */
export async function workspaceStillPlaced(env: Env, workspaceId: string, hint: number): Promise<boolean> {
  return (await vouchedShard(env, workspaceId, hint)) !== undefined || (await directoryPlace(env, workspaceId)) !== undefined;
}

/** A statement whose database is chosen when it runs. */
class RoutedStatement {
  constructor(
    private readonly env: Env,
    private readonly workspaceId: string,
    private readonly hint: number | undefined,
    readonly query: string,
    private readonly params: unknown[] = [],
  ) {}

  get writes() {
    return writesRows(this.query);
  }

  bind(...params: unknown[]) {
    return new RoutedStatement(this.env, this.workspaceId, this.hint, this.query, params);
  }

  on(database: D1Database): D1PreparedStatement {
    return database.prepare(this.query).bind(...this.params);
  }

  private async statement() {
    return this.on(await shardNow(this.env, this.workspaceId, this.writes, this.hint));
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
 * A D1 binding whose statements each go to the workspace's shard as it is when they run, for the
 * Durable Objects and queue consumers: a turn, a workflow run or an export outlives requests, and
 * the workspace may move meanwhile. Where it is is looked at again at the first statement after
 * PLACE_TTL_MS (see shardNow), so a moved workspace's rows are never written to its old shard,
 * nor read from it once the move deletes them there, and a write during a move's fence waits for
 * it to lift. `hint`: the shard the work started with, asked first.
 */
export function directoryRoutedD1(env: Env, workspaceId: string, hint?: number): D1Database {
  const routed = {
    prepare: (query: string) => new RoutedStatement(env, workspaceId, hint, query),
    batch: async (statements: RoutedStatement[]) => {
      const database = await shardNow(
        env,
        workspaceId,
        statements.some((s) => s.writes),
        hint,
      );
      return database.batch(statements.map((s) => s.on(database)));
    },
  };
  return routed as unknown as D1Database;
}

/** The query builder over directoryRoutedD1; `shard` is the number the work started with: the builder's marker, and the shard asked first. */
export const directoryRoutedShardDb = (env: Env, workspaceId: string, shard: number): ShardDb => openShard(directoryRoutedD1(env, workspaceId, shard), shard);
