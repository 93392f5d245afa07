import { and, eq, inArray, lt, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import { workspaceExports, type WorkspaceExportRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Env, GlobalDb, ShardDb } from '../env';
import { notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { shardBinding } from '../lib/db';
import { formatId, parseId } from '../lib/ids';
import { signStreamToken } from '../lib/signing';
import { ArchiveTooLarge, ZipUpload } from '../lib/zip-upload';
import { workspacePrefix } from './archive-install';
import { deliverChanges, recordChange } from './audit';
import { writeWorkspaceArchive } from './export-archive';
import { requireOwnedWorkspace } from './workspaces';

const HOUR_MS = 3_600_000;
/** How long a ready archive is kept before the housekeeping deletes it (docs/export.md). */
export const EXPORT_TTL_MS = 7 * 24 * HOUR_MS;
/** How long one download link works; reading the job again gives a fresh one. */
export const DOWNLOAD_LINK_TTL_MS = HOUR_MS;
/** An attempt's claim: longer than any one invocation may run (15 minutes), so two never overlap. */
const LEASE_MS = 20 * 60_000;
/** Attempts before a job that keeps stopping is failed. */
export const MAX_ATTEMPTS = 3;

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

const unfinished = inArray(workspaceExports.status, ['pending', 'running']);

/**
 * Starts an export of the workspace (owners only), or answers the one already under way. The
 * caller runs it (`runExport`) in the background; the hourly housekeeping starts any left pending.
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

/** Claims the job for a new attempt if no live attempt holds it and it has attempts left. */
async function claim(db: ShardDb, id: number) {
  const at = now();
  const [row] = await db
    .update(workspaceExports)
    .set({ status: 'running', attempts: sql`${workspaceExports.attempts} + 1`, leaseUntil: at + LEASE_MS })
    .where(
      and(
        eq(workspaceExports.id, id),
        lt(workspaceExports.attempts, MAX_ATTEMPTS),
        or(eq(workspaceExports.status, 'pending'), and(eq(workspaceExports.status, 'running'), lt(workspaceExports.leaseUntil, at))),
      ),
    )
    .returning();
  return row;
}

/** This attempt's row, only while it is still the job's current attempt. */
const ownAttempt = (job: WorkspaceExportRow) =>
  and(eq(workspaceExports.id, job.id), eq(workspaceExports.attempts, job.attempts), eq(workspaceExports.status, 'running'));

async function abortUpload(bucket: R2Bucket, key: string | null, uploadId: string | null) {
  if (key === null || uploadId === null) return;
  await bucket
    .resumeMultipartUpload(key, uploadId)
    .abort()
    .catch(() => undefined);
}

const attemptKey = (job: WorkspaceExportRow) => `${workspacePrefix(job.workspaceId)}exports/${formatId('exp', job.id)}-${job.attempts}.zip`;

/**
 * Runs one attempt of export `id` from the beginning: claims it, writes the archive into a
 * multipart upload of its own, and marks the job ready. An attempt that dies leaves the claim to
 * lapse and the housekeeping starts another; one that fails hands the job back (pending) until
 * its attempts are spent, then marks it failed.
 */
export async function runExport(env: Env, db: ShardDb, globalDb: GlobalDb, id: number): Promise<void> {
  const job = await claim(db, id);
  if (!job) return;
  // A previous attempt's upload (it died mid-way) is never completed.
  await abortUpload(env.BUCKET, job.r2Key, job.uploadId);
  const key = attemptKey(job);
  const upload = await env.BUCKET.createMultipartUpload(key, { httpMetadata: { contentType: 'application/zip' } });
  await db.update(workspaceExports).set({ r2Key: key, uploadId: upload.uploadId }).where(ownAttempt(job));
  try {
    // Audit and activity of changes made in the global database are on the shard once delivered.
    await deliverChanges(globalDb, db, job.workspaceId);
    const zip = new ZipUpload(upload, job.createdAt);
    await writeWorkspaceArchive(zip, {
      db,
      shard: shardBinding(env, db.shard),
      globalDb,
      bucket: env.BUCKET,
      workspaceId: job.workspaceId,
      requestedBy: job.requestedBy,
      createdAt: job.createdAt,
    });
    const size = await zip.finish();
    const at = now();
    const done = await db
      .update(workspaceExports)
      .set({ status: 'ready', size, uploadId: null, leaseUntil: null, completedAt: at, expiresAt: at + EXPORT_TTL_MS })
      .where(ownAttempt(job))
      .returning({ id: workspaceExports.id });
    // Superseded (this attempt outlived its claim): the current attempt writes its own archive.
    if (done.length === 0) await env.BUCKET.delete(key);
  } catch (error) {
    await upload.abort().catch(() => undefined);
    const final = error instanceof ArchiveTooLarge || job.attempts >= MAX_ATTEMPTS;
    const at = now();
    await db
      .update(workspaceExports)
      .set(
        final
          ? { status: 'failed', error: errorText(error), uploadId: null, leaseUntil: null, completedAt: at, expiresAt: at + EXPORT_TTL_MS }
          : { status: 'pending', uploadId: null, leaseUntil: null },
      )
      .where(ownAttempt(job));
    throw error;
  }
}

const errorText = (error: unknown) => (error instanceof ArchiveTooLarge ? error.message : 'The export could not be written');

/** Jobs the housekeeping starts per shard and hour: each may run for minutes. */
const RESUMED_PER_SWEEP = 3;
const EXPIRED_PER_SWEEP = 100;

/**
 * The hourly housekeeping of one shard's exports: fails jobs whose attempts are spent, starts
 * again those left pending or whose attempt died (its claim lapsed), and deletes archives past
 * their expiry with their jobs.
 */
export async function maintainExports(env: Env, db: ShardDb, globalDb: GlobalDb): Promise<void> {
  const at = now();
  const lapsed = and(eq(workspaceExports.status, 'running'), lt(workspaceExports.leaseUntil, at));
  const spent = await db
    .select()
    .from(workspaceExports)
    .where(and(lapsed, sql`${workspaceExports.attempts} >= ${MAX_ATTEMPTS}`));
  for (const job of spent) {
    await abortUpload(env.BUCKET, job.r2Key, job.uploadId);
    await db
      .update(workspaceExports)
      .set({
        status: 'failed',
        error: `The export stopped ${MAX_ATTEMPTS} times before it was written`,
        uploadId: null,
        leaseUntil: null,
        completedAt: at,
        expiresAt: at + EXPORT_TTL_MS,
      })
      .where(and(eq(workspaceExports.id, job.id), eq(workspaceExports.attempts, job.attempts)));
  }

  const due = await db
    .select({ id: workspaceExports.id })
    .from(workspaceExports)
    .where(and(or(eq(workspaceExports.status, 'pending'), lapsed), lt(workspaceExports.attempts, MAX_ATTEMPTS)))
    .orderBy(workspaceExports.id)
    .limit(RESUMED_PER_SWEEP);
  for (const { id } of due) await runExport(env, db, globalDb, id).catch(logFailure(id));

  const expired = await db
    .select({ id: workspaceExports.id, r2Key: workspaceExports.r2Key, uploadId: workspaceExports.uploadId })
    .from(workspaceExports)
    .where(lt(workspaceExports.expiresAt, at))
    .orderBy(workspaceExports.expiresAt)
    .limit(EXPIRED_PER_SWEEP);
  for (const job of expired) {
    if (job.r2Key !== null) await env.BUCKET.delete(job.r2Key);
    await db.delete(workspaceExports).where(eq(workspaceExports.id, job.id));
  }
}

/** Logs an attempt that failed; the job waits for the next one. */
export const logFailure = (id: number) => (error: unknown) =>
  console.error(JSON.stringify({ level: 'error', message: 'a workspace export attempt failed', exportId: formatId('exp', id), error: String(error) }));
