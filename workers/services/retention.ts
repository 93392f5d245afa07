import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { retentionWindows, type RetentionWindowsRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { invalidInput } from '../errors';
import { now } from '../lib/clock';
import { recordChange } from './audit';
import { RETENTION_DEFAULTS, type RetentionKind } from './retention-defaults';
import { requireCurrentWorkspace, requireOwnedWorkspace } from './workspaces';

const KINDS = Object.keys(RETENTION_DEFAULTS) as RetentionKind[];

/** The longest window a deployment allows when RETENTION_MAX_DAYS is unset. */
const DEFAULT_MAX_DAYS = 400;
export const retentionMaxDays = (env: Env): number => Number(env.RETENTION_MAX_DAYS) || DEFAULT_MAX_DAYS;

/** Where a workspace's own window for each kind is kept. */
const RETENTION_COLUMNS = {
  executions: 'executionsDays',
  traces: 'tracesDays',
  workflowRuns: 'workflowRunsDays',
  activity: 'activityDays',
  audit: 'auditDays',
} as const satisfies Record<RetentionKind, keyof RetentionWindowsRow>;

const Days = z.number().int().min(1);
export const RetentionWindows = z.object({
  executions: Days.describe('Days an execution (its event log and its history entry) is kept after it ended, or an idle one after its latest run'),
  traces: Days.describe('Days a trace is kept after its last activity, once it is no longer running'),
  workflowRuns: Days.describe('Days a workflow run is kept after it ended'),
  activity: Days.describe('Days an activity entry, or an entry of a trigger’s delivery log, is kept'),
  audit: Days.describe('Days an audit entry is kept'),
});
export type RetentionWindows = z.infer<typeof RetentionWindows>;
export const RetentionPatch = RetentionWindows.partial();
export type RetentionPatch = z.infer<typeof RetentionPatch>;

/** A workspace's windows: its own where it set them, else the defaults. */
export const windowsOf = (row: RetentionWindowsRow | undefined): RetentionWindows =>
  Object.fromEntries(KINDS.map((kind) => [kind, row?.[RETENTION_COLUMNS[kind]] ?? RETENTION_DEFAULTS[kind]])) as RetentionWindows;

const readRow = async (db: ShardDb, workspaceId: string) =>
  (await db.select().from(retentionWindows).where(eq(retentionWindows.workspaceId, workspaceId)).limit(1))[0];

/** A workspace's window for one kind, in days: its own, or the default. */
export const windowOf = async (db: ShardDb, workspaceId: string, kind: RetentionKind): Promise<number> => windowsOf(await readRow(db, workspaceId))[kind];

export async function getRetention(db: ShardDb, globalDb: GlobalDb, principal: Principal, workspace: string): Promise<RetentionWindows> {
  const ws = await requireCurrentWorkspace(globalDb, principal, workspace);
  return windowsOf(await readRow(db, ws.id));
}

/** Sets the windows named in `patch` (owners only); each from 1 day to the deployment's RETENTION_MAX_DAYS. */
export async function setRetention(
  db: ShardDb,
  globalDb: GlobalDb,
  env: Env,
  principal: Principal,
  workspace: string,
  patch: RetentionPatch,
): Promise<RetentionWindows> {
  const ws = await requireOwnedWorkspace(globalDb, principal, workspace, 'Only the workspace owner can change retention');
  const max = retentionMaxDays(env);
  const changed = KINDS.filter((kind) => patch[kind] !== undefined);
  if (changed.length === 0) return windowsOf(await readRow(db, ws.id));
  for (const kind of changed) {
    if (patch[kind]! > max) throw invalidInput(kind, 'max', `${kind} must be at most ${max} days`, { max });
  }
  const set = Object.fromEntries(changed.map((kind) => [RETENTION_COLUMNS[kind], patch[kind]]));
  await db.batch([
    db
      .insert(retentionWindows)
      .values({ workspaceId: ws.id, ...set, updatedAt: now() })
      .onConflictDoUpdate({ target: retentionWindows.workspaceId, set: { ...set, updatedAt: now() } }),
    ...recordChange(db, principal, {
      action: 'workspace.retention_updated',
      resourceType: 'workspace',
      resourceId: ws.id,
      metadata: Object.fromEntries(changed.map((kind) => [kind, patch[kind]])),
      activity: `Retention changed: ${changed.map((kind) => `${kind} ${patch[kind]} days`).join(', ')}`,
    }),
  ]);
  return windowsOf(await readRow(db, ws.id));
}
