/**
 * What a shard database's rows take on disk, table by table, computed from the rows themselves:
 * each value at the size SQLite's record format stores it (an integer in 0 to 8 bytes by its
 * magnitude, text and blobs at their length), plus the record header, the b-tree cell and its
 * pointer, and one entry in each index of the table (its columns, the rowid, the same overheads).
 * Free space inside pages is not counted. Run inside the counting Worker (bench/counting-worker.ts).
 */
import { is } from 'drizzle-orm';
import { getTableConfig, SQLiteTable, type SQLiteColumn } from 'drizzle-orm/sqlite-core';
import * as shardSchema from '../schema/shard';
import type { TableStorage } from './operation-cost';

/** A cell's payload-size varint and its 4-byte pointer; a table cell also holds its rowid (a large id: 8 bytes). */
const INDEX_CELL = 2 + 4;
const TABLE_CELL = INDEX_CELL + 8;

const quote = (name: string) => `"${name}"`;

/** The bytes SQLite's record format stores `column`'s value in (format 4: 0 and 1 take none). */
const stored = (column: string) => {
  const c = quote(column);
  return `(CASE typeof(${c}) WHEN 'null' THEN 0 WHEN 'real' THEN 8 WHEN 'integer' THEN (CASE WHEN ${c} IN (0, 1) THEN 0 WHEN abs(${c}) < 128 THEN 1 WHEN abs(${c}) < 32768 THEN 2 WHEN abs(${c}) < 8388608 THEN 3 WHEN abs(${c}) < 2147483648 THEN 4 WHEN abs(${c}) < 140737488355328 THEN 6 ELSE 8 END) ELSE length(CAST(${c} AS BLOB)) END)`;
};

/** A record of these columns: one header byte per column and one for the header's size, then the values. */
const record = (columns: string[]) => `(${columns.length + 1} + ${columns.map(stored).join(' + ')})`;

/** The column lists of a table's indexes, the implicit ones of a non-integer or composite primary key and of unique constraints included. */
function indexesOf(table: SQLiteTable): string[][] {
  const config = getTableConfig(table);
  const names = (columns: SQLiteColumn[]) => columns.map((c) => c.name);
  const indexes = config.indexes.map((index) => index.config.columns.map((c) => (c as SQLiteColumn).name));
  for (const key of config.primaryKeys) indexes.push(names(key.columns));
  for (const unique of config.uniqueConstraints) indexes.push(names(unique.columns));
  for (const column of config.columns) {
    if (column.isUnique) indexes.push([column.name]);
    if (column.primary && column.getSQLType() !== 'integer') indexes.push([column.name]);
  }
  return indexes;
}

/** Every shard table's rows and bytes in `db`. */
export async function measureShardStorage(db: D1Database): Promise<Record<string, TableStorage>> {
  const tables = (Object.values(shardSchema) as unknown[]).filter((value): value is SQLiteTable => is(value, SQLiteTable));
  const measured: Record<string, TableStorage> = {};
  for (const table of tables) {
    const config = getTableConfig(table);
    // An INTEGER PRIMARY KEY is the rowid: kept in the cell, stored as NULL in the record.
    const inRecord = config.columns.filter((c) => !(c.primary && c.getSQLType() === 'integer')).map((c) => c.name);
    const entries = indexesOf(table).map((columns) => `(${record(columns)} + 8 + ${INDEX_CELL})`);
    const row = [`${record(inRecord)} + ${TABLE_CELL}`, ...entries].join(' + ');
    const answer = await db.prepare(`SELECT count(*) AS rows, coalesce(sum(${row}), 0) AS bytes FROM ${quote(config.name)}`).first<TableStorage>();
    measured[config.name] = { rows: answer?.rows ?? 0, bytes: answer?.bytes ?? 0 };
  }
  return measured;
}
