import { and, eq } from 'drizzle-orm';
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { notFound } from '../errors';
import { type IdPrefix, parseId } from '../lib/ids';

/** A table of rows that belong to a workspace, keyed by an integer id shown as `<prefix>_<id>`. */
type TenantTable = SQLiteTable & { id: SQLiteColumn; workspaceId: SQLiteColumn };

/**
 * The row with public id `raw` (`art_12` or `12`) in the caller's workspace, or 404: another
 * workspace's id and a malformed id answer exactly like a missing one.
 */
export async function requireOwned<T extends TenantTable>(
  db: ShardDb,
  table: T,
  principal: Principal,
  prefix: IdPrefix,
  raw: string,
  what: string,
): Promise<T['$inferSelect']> {
  const id = parseId(prefix, raw);
  const [row] =
    id === null
      ? []
      : await db
          .select()
          .from(table as TenantTable)
          .where(and(eq(table.workspaceId, principal.workspaceId), eq(table.id, id)))
          .limit(1);
  if (!row) throw notFound(what);
  return row as T['$inferSelect'];
}
