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

/** A shard table's rows and the bytes they take (bench/shard-storage.ts). */
export interface TableStorage {
  rows: number;
  bytes: number;
}

/** What `npm run capacity:measure` finds on the shards: rows each operation added, by table, and what each kind of row takes. */
export interface StorageCounts {
  /** Rows one operation added to each shard table. */
  rowsAdded: Record<string, Record<string, number>>;
  /** Bytes a row of each table takes, over every row the measure left (tables it left empty are absent). */
  bytesPerRow: Record<string, number>;
  /** The rows and computed bytes the measure left, and the shard files' size as D1 reports it, for comparison. */
  totals: { rows: number; bytes: number; fileBytes: number };
}
