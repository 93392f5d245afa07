import { and, eq, inArray, isNull, lt, or } from 'drizzle-orm';
import { z } from 'zod';
import { workspaceExports, type WorkspaceExportRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { formatId, parseId } from '../lib/ids';
import { signStreamToken } from '../lib/signing';
import { recordChange } from './audit';
import { requireOwnedWorkspace } from './workspaces';

const HOUR_MS = 3_600_000;
/** How long a ready archive is kept before the housekeeping deletes it (docs/export.md). */
export const EXPORT_TTL_MS = 7 * 24 * HOUR_MS;
/** How long one download link works; reading the job again gives a fresh one. */
export const DOWNLOAD_LINK_TTL_MS = HOUR_MS;
/** A running job's heartbeat, renewed by each slice: past it, the housekeeping wakes the job's object. */
export const LEASE_MS = 10 * 60_000;

export const ExportJob = z.object({
  id: z.string().describe('exp_<n>'),
  status: z.enum(['pending', 'running', 'ready', 'failed']),
  createdAt: z.string(),
  completedAt: z.string().optional(),
  downloadUrl: z
    .string()
    .optional()
    .describe(`The archive, for ${DOWNLOAD_LINK_TTL_MS / 60_000} minutes; read the job again for a fresh link`),
  expiresAt: z.string().optional().describe('When the archive is deleted'),
  size: z.number().int().optional().describe('The archive in bytes'),
  error: z.string().optional().describe('Why a failed export failed'),
});
export type ExportJob = z.infer<typeof ExportJob>;

/** The path of an export's archive; the signed token in its query is the credential. */
export const downloadPath = (id: number) => `/downloads/exports/${formatId('exp', id)}`;

async function present(env: Env, row: WorkspaceExportRow, baseUrl: string): Promise<ExportJob> {
  const job: ExportJob = { id: formatId('exp', row.id), status: row.status, createdAt: toIso(row.createdAt) };
  if (row.completedAt !== null) job.completedAt = toIso(row.completedAt);
  if (row.expiresAt !== null) job.expiresAt = toIso(row.expiresAt);
  if (row.error !== null) job.error = row.error;
  if (row.status === 'ready' && row.expiresAt !== null && row.expiresAt > now() && row.size !== null) {
    job.size = row.size;
    const ttl = Math.min(DOWNLOAD_LINK_TTL_MS, row.expiresAt - now());
    const token = await signStreamToken(
      env.SIGNING_SECRET,
      'workspace-export',
      { subject: job.id, workspaceId: row.workspaceId, holder: `user:${row.requestedBy}` },
      ttl,
    );
    job.downloadUrl = `${baseUrl}${downloadPath(row.id)}?token=${encodeURIComponent(token)}`;
  }
  return job;
}

/** Exports are the owners': an archive holds everything, the audit log and every member's email included. */
const requireOwnerOf = (globalDb: GlobalDb, principal: Principal, workspace: string) =>
  requireOwnedWorkspace(globalDb, principal, workspace, 'Only a workspace owner can export it');

export const unfinished = inArray(workspaceExports.status, ['pending', 'running']);

/**
 * Starts an export of the workspace (owners only), or answers the one already under way. The
 * caller starts its object (`driveExport`); the hourly housekeeping wakes any left pending.
 */
export async function startExport(db: ShardDb, globalDb: GlobalDb, env: Env, principal: Principal, workspace: string, baseUrl: string) {
  const ws = await requireOwnerOf(globalDb, principal, workspace);
  const [running] = await db
    .select()
    .from(workspaceExports)
    .where(and(eq(workspaceExports.workspaceId, ws.id), unfinished))
    .limit(1);
  if (running) return { job: await present(env, running, baseUrl), started: null };
  const [row] = await db.batch([
    db.insert(workspaceExports).values({ workspaceId: ws.id, status: 'pending', requestedBy: principal.userId, createdAt: now() }).returning(),
    ...recordChange(db, principal, {
      action: 'workspace.export_started',
      resourceType: 'workspace',
      resourceId: ws.id,
      activity: 'An export of the workspace was started',
    }),
  ]);
  const created = row[0]!;
  return { job: await present(env, created, baseUrl), started: created.id };
}

export async function getExport(db: ShardDb, globalDb: GlobalDb, env: Env, principal: Principal, workspace: string, rawId: string, baseUrl: string) {
  const ws = await requireOwnerOf(globalDb, principal, workspace);
  const id = parseId('exp', rawId);
  const [row] =
    id === null
      ? []
      : await db
          .select()
          .from(workspaceExports)
          .where(and(eq(workspaceExports.workspaceId, ws.id), eq(workspaceExports.id, id)))
          .limit(1);
  if (!row) throw notFound('Export');
  return present(env, row, baseUrl);
}

/** The ready archive a download link names, or null (never made, failed, or expired). */
export async function readyArchive(db: ShardDb, workspaceId: string, rawId: string) {
  const id = parseId('exp', rawId);
  if (id === null) return null;
  const [row] = await db
    .select()
    .from(workspaceExports)
    .where(and(eq(workspaceExports.workspaceId, workspaceId), eq(workspaceExports.id, id), eq(workspaceExports.status, 'ready')))
    .limit(1);
  return row && row.r2Key !== null && row.expiresAt !== null && row.expiresAt > now() ? row : null;
}

/** Starts (or wakes, if it stalled) the object that writes export `id`'s archive (export-job.ts). */
export const driveExport = (env: Env, workspaceId: string, id: number) => env.WORKSPACE_EXPORT.getByName(formatId('exp', id)).begin(workspaceId, id);

const EXPIRED_PER_SWEEP = 100;

/**
 * The hourly housekeeping of one shard's exports: wakes the object of every unfinished job whose
 * heartbeat lapsed (its alarm stopped being retried, or it was never started), and deletes
 * archives past their expiry with their jobs.
 */
export async function maintainExports(env: Env, db: ShardDb): Promise<void> {
  const at = now();
  const stalled = await db
    .select({ id: workspaceExports.id, workspaceId: workspaceExports.workspaceId })
    .from(workspaceExports)
    .where(and(unfinished, or(isNull(workspaceExports.leaseUntil), lt(workspaceExports.leaseUntil, at))));
  for (const job of stalled) await driveExport(env, job.workspaceId, job.id).catch(logFailure(job.id));

  const expired = await db
    .select({ id: workspaceExports.id, r2Key: workspaceExports.r2Key })
    .from(workspaceExports)
    .where(lt(workspaceExports.expiresAt, at))
    .orderBy(workspaceExports.expiresAt)
    .limit(EXPIRED_PER_SWEEP);
  for (const job of expired) {
    if (job.r2Key !== null) await env.BUCKET.delete(job.r2Key);
    await db.delete(workspaceExports).where(eq(workspaceExports.id, job.id));
  }
}

/** Logs a job whose object could not be woken; the next sweep tries again. */
export const logFailure = (id: number) => (error: unknown) =>
  console.error(JSON.stringify({ level: 'error', message: 'a workspace export could not be started', exportId: formatId('exp', id), error: String(error) }));
