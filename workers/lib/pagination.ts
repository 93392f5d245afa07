import { and, asc, desc, gt, lt, type SQL } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { z } from 'zod';
import { invalidInput } from '../errors';
import { formatId, type IdPrefix, parseId } from './ids';

/** Spec 8: cursor page size `limit` 1..100, default 20. */
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

export const CursorQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(DEFAULT_PAGE).describe(`Page size (default ${DEFAULT_PAGE})`),
  after_id: z.string().min(1).max(64).optional().describe('Older items: continue after this id (last_id of the previous page)'),
  before_id: z.string().min(1).max(64).optional().describe('Newer items: the page before this id (first_id of a later page)'),
});
export type CursorQuery = z.infer<typeof CursorQuery>;

/** The cursor page's shape, for documentation and MCP output schemas. */
export const cursorEnvelope = <T extends z.ZodType>(item: T) =>
  z.object({ data: z.array(item), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() });

export interface CursorPage<T> {
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface CursorSource<Row, Key extends string | number> {
  /** The ordering column: unique and increasing with creation time. */
  column: SQLiteColumn;
  /** Turns a public cursor id (`key_12`, `12`, a UUID) into the column's value, or null. */
  parseCursor: (raw: string) => Key | null;
  /** Runs the query with the extra condition, order and row limit. */
  fetch: (where: SQL | undefined, orderBy: SQL, limit: number) => Promise<Row[]>;
  publicId: (row: Row) => string;
  /** `desc` (default): newest first. `asc`: in column order, e.g. alphabetical. */
  order?: 'asc' | 'desc';
}

/**
 * Newest first by default. `after_id` pages forward (towards older items), `before_id` back;
 * `has_more` says whether more items lie further in the direction of travel.
 */
export async function cursorPage<Row, Key extends string | number>(
  params: CursorQuery,
  source: CursorSource<Row, Key>,
  baseWhere: SQL | undefined,
): Promise<CursorPage<Row>> {
  if (params.after_id !== undefined && params.before_id !== undefined) {
    throw invalidInput('before_id', 'exclusive', 'Use either after_id or before_id, not both');
  }
  const cursorField = params.after_id !== undefined ? 'after_id' : 'before_id';
  const rawCursor = params.after_id ?? params.before_id;
  const cursor = rawCursor === undefined ? null : source.parseCursor(rawCursor);
  if (rawCursor !== undefined && cursor === null) {
    throw invalidInput(cursorField, 'cursor', `${cursorField} is not a valid id`);
  }
  const backwards = params.before_id !== undefined;
  // Walking towards greater column values: forward in ascending order, backward in descending.
  const upwards = backwards === ((source.order ?? 'desc') === 'desc');
  const condition = cursor === null ? undefined : upwards ? gt(source.column, cursor) : lt(source.column, cursor);
  const rows = await source.fetch(and(baseWhere, condition), upwards ? asc(source.column) : desc(source.column), params.limit + 1);
  const hasMore = rows.length > params.limit;
  const page = rows.slice(0, params.limit);
  if (backwards) page.reverse();
  return {
    data: page,
    first_id: page.length ? source.publicId(page[0]!) : null,
    last_id: page.length ? source.publicId(page[page.length - 1]!) : null,
    has_more: hasMore,
  };
}

export const mapPage = <A, B>(page: CursorPage<A>, fn: (row: A) => B): CursorPage<B> => ({
  ...page,
  data: page.data.map(fn),
});

const POSITIVE_INTEGER = /^[1-9][0-9]{0,15}$/;

/**
 * A cursor source keyed by an integer id column, shown as `prefix_<id>` (accepting the bare
 * number too, spec 2.1) or, without a prefix, as the bare number.
 */
export const byIntegerId = <Row extends { id: number }>(
  column: SQLiteColumn,
  fetch: CursorSource<Row, number>['fetch'],
  prefix?: IdPrefix,
): CursorSource<Row, number> => ({
  column,
  fetch,
  parseCursor: (raw) => (prefix ? parseId(prefix, raw) : POSITIVE_INTEGER.test(raw) ? Number(raw) : null),
  publicId: (row) => (prefix ? formatId(prefix, row.id) : String(row.id)),
});
