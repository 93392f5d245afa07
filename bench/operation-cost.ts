/** One kind of database's share of an operation: statements by verb, and the rows D1 reports. */
export interface D1Counts {
  reads: number;
  writes: number;
  rowsRead: number;
  rowsWritten: number;
}

/** The kinds of D1 database: the one global database (binding DB) and the shards (SHARD_<n>, summed). */
export type DatabaseKind = 'global' | 'shard';

/** What one operation cost, as the counting Worker measures it: D1 statements and rows per kind of database, Durable Object calls by class, queue messages, R2 operations. */
export interface Counts {
  d1: Record<DatabaseKind, D1Counts>;
  doCalls: Record<string, number>;
  queueMessages: number;
  r2: Record<string, number>;
}
