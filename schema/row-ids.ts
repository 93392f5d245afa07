import { sql } from 'drizzle-orm';
import { integer } from 'drizzle-orm/sqlite-core';

/** Ids start counting here (2026-01-01T00:00:00Z), so 41 bits of milliseconds last until 2095. */
const ID_EPOCH_MS = 1_767_225_600_000;
/** The shard's number sits in the low 12 bits: ids stay unique across up to 4,096 shards. */
const SHARD_BITS = 12;
const MAX_SHARDS = 1 << SHARD_BITS;

/**
 * A row id unique across every database and ordered by time: (milliseconds since ID_EPOCH_MS, or
 * one more than the table's highest, whichever is larger) × 4096 + the shard's number. Computed
 * by the INSERT itself (D1 runs one statement at a time), so two writers never pick the same id,
 * and a workspace moved to another shard keeps its ids and their order: the new shard's next id
 * is above every id it holds. At most 2^53, so the API's numeric ids stay exact in JSON. Without
 * the shard's number (an unstamped shard) the id is text and SQLite refuses the row.
 */
const rowId = (table: string, shard: string) => () =>
  sql.raw(
    `coalesce((max(${Date.now() - ID_EPOCH_MS}, coalesce((SELECT max(id) FROM "${table}"), 0) / ${MAX_SHARDS} + 1) * ${MAX_SHARDS} + ${shard}), 'no shard_identity row')`,
  );

/** The integer id of a shard table: the shard's number from its `shard_identity` row (see rowId). */
export const shardIdColumn = (table: string) => integer('id').primaryKey().$defaultFn(rowId(table, '(SELECT shard FROM shard_identity)'));

/** The integer id of a global table whose rows are copied to shards under the same id (number 0: no shard's). */
export const globalIdColumn = (table: string) => integer('id').primaryKey().$defaultFn(rowId(table, '0'));
