import { fillPlaceholders, type Column } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/sqlite-core';
import type { Db } from '../env';

/** A select of a table's columns, as drizzle's query builder makes it. */
interface ColumnSelect<Row> {
  toSQL(): { sql: string; params: unknown[] };
  _: { result: Row[]; selectedFields: Record<string, unknown> };
}

/**
 * A SELECT whose SQL drizzle builds once, when the module loads, instead of on every call: for
 * the hottest reads, where building the statement cost more CPU than running it. Values for its
 * `sql.placeholder`s are given per call. Rows are read in the order of the selected columns and
 * converted by each column's own mapping, as drizzle's select does, so their type still comes
 * from the table. Columns only: no joins' nested objects, no SQL expressions.
 */
export function selectOnce<Row>(build: (qb: QueryBuilder) => ColumnSelect<Row>) {
  const query = build(new QueryBuilder());
  const { sql, params } = query.toSQL();
  const fields = Object.entries(query._.selectedFields as Record<string, Column>);
  return async (db: Db, values: Record<string, unknown>): Promise<Row[]> => {
    const rows = await db.$client
      .prepare(sql)
      .bind(...fillPlaceholders(params, values))
      .raw<unknown[]>();
    return rows.map((row) => {
      const mapped: Record<string, unknown> = {};
      fields.forEach(([key, column], i) => (mapped[key] = row[i] === null ? null : column.mapFromDriverValue(row[i])));
      return mapped as Row;
    });
  };
}
