import { and, eq, inArray, ne } from 'drizzle-orm';
import { executions, workflowRuns } from '../../schema';
import type { ShardDb } from '../env';
import { now } from '../lib/clock';
import { FINAL } from '../workflows/interpreter';
import { windowOf } from './retention';
import { RETENTION_DEFAULTS } from './retention-defaults';

export const DAY_MS = 86_400_000;

/**
 * What an execution's or workflow run's object keeps to expire its own storage once its run has
 * ended (docs/operations.md, Retention): when it ended, and the window its alarm was armed for
 * (the kind's default at first; the workspace's own once the alarm has read it).
 */
export interface Expiry {
  endedAt: number;
  days: number;
}

/** The objects that expire, by the retention kind whose window they follow. */
export type ObjectKind = 'executions' | 'workflowRuns';

/** The expiry of a run that ends now, armed for the kind's default window. */
export const expiryFrom = (kind: ObjectKind): Expiry => ({ endedAt: now(), days: RETENTION_DEFAULTS[kind] });

/** The moment after which an ended run is past its window: one exactly as old as the window is kept, as the sweep keeps it. */
export const lastKeptAt = (expiry: Expiry) => expiry.endedAt + expiry.days * DAY_MS;

/** When the alarm rings for `expiry`: the first moment past its window, on the runtime's clock (the service's may be another). */
export const expiryAlarmTime = (expiry: Expiry) => Date.now() + Math.max(0, lastKeptAt(expiry) + 1 - now());

/** The expiry moved to a day from now: its row could not go yet (a turn claimed it, a write of it is behind). */
export const postponed = <E extends Expiry>(expiry: E): E => ({ ...expiry, days: (now() + DAY_MS - expiry.endedAt) / DAY_MS });

/**
 * What the alarm of an object whose run ended decides: `wait` until the answered moment (the
 * workspace lengthened the window, answered as the expiry to keep), or `expire` now. Reads the
 * workspace's window only once the armed one has passed, so an early alarm costs no D1 read.
 */
export async function expiryDecision<E extends Expiry>(db: ShardDb, workspaceId: string, kind: ObjectKind, expiry: E): Promise<{ wait: E } | 'expire'> {
  if (now() <= lastKeptAt(expiry)) return { wait: expiry };
  const days = await windowOf(db, workspaceId, kind);
  const kept = { ...expiry, days };
  return now() <= lastKeptAt(kept) ? { wait: kept } : 'expire';
}

/**
 * Deletes an expired execution's row (unless a new turn has claimed it meanwhile): true when no
 * row of it is left, so its object may erase itself. The row goes first: a reader that finds no
 * row answers 404 and never reaches the object.
 */
export async function deleteExecutionRow(db: ShardDb, executionId: number): Promise<boolean> {
  const [, left] = await db.batch([
    db.delete(executions).where(and(eq(executions.id, executionId), ne(executions.status, 'working'))),
    db.select({ id: executions.id }).from(executions).where(eq(executions.id, executionId)).limit(1),
  ]);
  return left.length === 0;
}

/** Deletes an ended workflow run's row (its step results go with it): true when no row of it is left. */
export async function deleteWorkflowRunRow(db: ShardDb, runId: string): Promise<boolean> {
  const [, left] = await db.batch([
    db.delete(workflowRuns).where(and(eq(workflowRuns.runId, runId), inArray(workflowRuns.status, [...FINAL]))),
    db.select({ runId: workflowRuns.runId }).from(workflowRuns).where(eq(workflowRuns.runId, runId)).limit(1),
  ]);
  return left.length === 0;
}
