/** What one operation cost, as the counting Worker measures it: D1 statements and rows, Durable Object calls by class, queue messages, R2 operations. */
export interface Counts {
  d1Reads: number;
  d1Writes: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  doCalls: Record<string, number>;
  queueMessages: number;
  r2: Record<string, number>;
}
