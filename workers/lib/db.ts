import { drizzle } from 'drizzle-orm/d1';
import type { Db } from '../env';

/**
 * The query builder over the database or one of its read-replication sessions. Without a
 * schema: the service writes every query with the builder (no relational `db.query`), and
 * drizzle would rebuild a schema's relational map on each call, which every request pays.
 */
export const openDb = (database: D1Database | D1DatabaseSession): Db => drizzle(database as D1Database);
