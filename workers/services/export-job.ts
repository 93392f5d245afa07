import { and, eq } from 'drizzle-orm';
import { workspaceExports } from '../../schema';
import type { Env } from '../env';
import { now } from '../lib/clock';
import { globalDbOf } from '../lib/db';
import { formatId } from '../lib/ids';
import { ArchiveTooLarge, ZipUpload, type UploadState, type ZipEntry } from '../lib/zip-upload';
import { workspacePrefix } from './archive-install';
import { deliverChanges } from './audit';
import { placeOf } from './directory';
import { directoryRoutedD1, directoryRoutedShardDb } from './directory-routed';
import {
  EXPORTED_TABLES,
  FIRST_STEP,
  writeManifest,
  writeStep,
  type ExportCursor,
  type ExportedFile,
  type ExportSource,
  type ManifestFile,
} from './export-archive';
import { EXPORT_TTL_MS, LEASE_MS, unfinished } from './workspace-exports';

/**
 * Writing one export's archive in slices, from the WorkspaceExport object's alarm
 * (docs/export.md, "Running"). The object's storage holds where the job stands, written at the
 * end of every slice (a checkpoint): the multipart upload, the parts uploaded, the bytes after
 * the last part (in R2, since a part is larger than an object may store), the next file to
 * write, and every file written so far for the central directory and the manifest. A slice cut
 * off (a crash, a restart) is lost whole and the next one starts again from the last
 * checkpoint; a part it uploaded is uploaded again under the same number.
 */

/** A slice ends at the first file boundary after this long. */
export const SLICE_MS = 20_000;
/** Slices in a row that may stop without reaching a checkpoint before the job fails. */
export const MAX_STALLS = 3;
/** How soon a slice that found the workspace fenced by a move looks again. */
const FENCE_RETRY_MS = 5_000;

/** The job the object drives, as `begin` was told. */
export interface ExportRef {
  workspaceId: string;
  exportId: number;
}

interface Progress {
  requestedBy: string;
  createdAt: number;
  key: string;
  uploadId: string;
  parts: R2UploadedPart[];
  offset: number;
  /** The R2 key of the archive's bytes after its last part, if there are any. */
  tailKey: string | null;
  /** Checkpoints written. */
  seq: number;
  cursor: ExportCursor;
  /** The checkpoint the last slice started from; null when it paused of its own accord. */
  sliceFrom: number | null;
  /** Slices in a row that started from this checkpoint. */
  stalls: number;
}

/** How the job ends, once decided: kept until the job's row says so. */
type Outcome = { status: 'ready'; size: number } | { status: 'failed'; error: string };

export type Advance = { done: true } | { done: false; againInMs: number };
const DONE: Advance = { done: true };

const FILES_TABLE = `CREATE TABLE IF NOT EXISTS files (n INTEGER PRIMARY KEY, path TEXT NOT NULL, crc INTEGER NOT NULL, compressed INTEGER NOT NULL,
  size INTEGER NOT NULL, offset INTEGER NOT NULL, sha256 TEXT NOT NULL, records INTEGER)`;

type FileRow = { path: string; crc: number; compressed: number; size: number; offset: number; sha256: string; records: number | null };

const writtenFiles = (storage: DurableObjectStorage) =>
  storage.sql.exec<FileRow>('SELECT path, crc, compressed, size, offset, sha256, records FROM files ORDER BY n').toArray();

const entryOf = ({ path, crc, compressed, size, offset }: FileRow | ZipEntry): ZipEntry => ({ path, crc, compressed, size, offset });
const rowOf = (file: ExportedFile): FileRow => ({ ...file.entry, sha256: file.sha256, records: file.records });
const listed = ({ path, size, sha256, records }: FileRow): ManifestFile => ({ path, bytes: size, sha256, ...(records === null ? {} : { records }) });

/** What a cursor names, for a failure's reason. */
function describe(at: ExportCursor): string {
  switch (at.step) {
    case 'workspace':
      return 'workspace.json';
    case 'members':
      return 'members.jsonl';
    case 'records':
      return `records/${EXPORTED_TABLES[at.table]!.name}.jsonl`;
    case 'artifacts':
      return at.after === 0 ? 'the first artifact' : `the artifact after ${formatId('art', at.after)}`;
    case 'skills':
      return 'the skill files';
    case 'manifest':
      return 'manifest.json';
  }
}

async function removeTails(bucket: R2Bucket, key: string): Promise<void> {
  await bucket.delete([`${key}.tail-0`, `${key}.tail-1`]);
}

/** The job has nothing left to do here (it ended, or its workspace or row is gone): the upload is given up and the object forgets it. */
async function discard(env: Env, storage: DurableObjectStorage): Promise<Advance> {
  const progress = storage.kv.get<Progress>('progress');
  if (progress) {
    await env.BUCKET.resumeMultipartUpload(progress.key, progress.uploadId)
      .abort()
      .catch(() => undefined);
    await removeTails(env.BUCKET, progress.key);
  }
  await storage.deleteAll();
  return DONE;
}

/** Records how the job ended on its row (on the shard the directory names, after any fence), then forgets it. */
async function settle(env: Env, storage: DurableObjectStorage, ref: ExportRef, outcome: Outcome): Promise<Advance> {
  storage.kv.put('outcome', outcome);
  const progress = storage.kv.get<Progress>('progress');
  if (outcome.status === 'failed' && progress) {
    await env.BUCKET.resumeMultipartUpload(progress.key, progress.uploadId)
      .abort()
      .catch(() => undefined);
  }
  const place = await placeOf(globalDbOf(env), ref.workspaceId);
  let recorded = 0;
  if (place) {
    const db = directoryRoutedShardDb(env, ref.workspaceId, place.shard);
    const at = now();
    const ended = { leaseUntil: null, completedAt: at, expiresAt: at + EXPORT_TTL_MS };
    const set = outcome.status === 'ready' ? { ...ended, status: 'ready' as const, size: outcome.size, r2Key: progress!.key } : { ...ended, ...outcome };
    const updated = await db
      .update(workspaceExports)
      .set(set)
      .where(and(eq(workspaceExports.id, ref.exportId), unfinished))
      .returning({ id: workspaceExports.id });
    recorded = updated.length;
  }
  // No row to point at the archive any more (the workspace or the job was deleted meanwhile).
  if (outcome.status === 'ready' && recorded === 0) await env.BUCKET.delete(progress!.key);
  if (progress) await removeTails(env.BUCKET, progress.key);
  await storage.deleteAll();
  return DONE;
}

/** The job's first slice: its multipart upload, and where it starts. */
async function open(env: Env, storage: DurableObjectStorage, ref: ExportRef, row: { requestedBy: string; createdAt: number }): Promise<Progress> {
  const key = `${workspacePrefix(ref.workspaceId)}exports/${formatId('exp', ref.exportId)}.zip`;
  const upload = await env.BUCKET.createMultipartUpload(key, { httpMetadata: { contentType: 'application/zip' } });
  const progress: Progress = {
    requestedBy: row.requestedBy,
    createdAt: row.createdAt,
    key,
    uploadId: upload.uploadId,
    parts: [],
    offset: 0,
    tailKey: null,
    seq: 0,
    cursor: FIRST_STEP,
    sliceFrom: null,
    stalls: 0,
  };
  storage.kv.put('progress', progress);
  return progress;
}

/** The end of a slice: the tail to R2 (under the key the previous checkpoint does not use), then everything else in one transaction. */
async function checkpoint(env: Env, storage: DurableObjectStorage, progress: Progress, state: UploadState, cursor: ExportCursor, written: ExportedFile[]) {
  const seq = progress.seq + 1;
  const tailKey = state.tail.length > 0 ? `${progress.key}.tail-${seq % 2}` : null;
  if (tailKey !== null) await env.BUCKET.put(tailKey, state.tail);
  storage.transactionSync(() => {
    for (const file of written.map(rowOf)) {
      storage.sql.exec(
        'INSERT INTO files (path, crc, compressed, size, offset, sha256, records) VALUES (?, ?, ?, ?, ?, ?, ?)',
        file.path,
        file.crc,
        file.compressed,
        file.size,
        file.offset,
        file.sha256,
        file.records,
      );
    }
    storage.kv.put('progress', { ...progress, parts: state.parts, offset: state.offset, tailKey, seq, cursor });
  });
}

async function tailOf(bucket: R2Bucket, key: string | null): Promise<Uint8Array> {
  if (key === null) return new Uint8Array(0);
  const stored = await bucket.get(key);
  if (!stored) throw new Error(`The export's checkpoint lost its tail (${key})`);
  return new Uint8Array(await stored.arrayBuffer());
}

/**
 * One slice of the job the object holds: writes files into the archive from the last checkpoint
 * until `budgetMs` has passed (at least one), then writes a checkpoint; the last slice writes the
 * manifest and the central directory and records the job ready. Answers whether the job is done
 * or when to run the next slice. A slice that throws is tried again by the caller; the third in a
 * row that gets no further fails the job.
 */
export async function advanceExport(env: Env, storage: DurableObjectStorage, budgetMs = SLICE_MS): Promise<Advance> {
  const ref = storage.kv.get<ExportRef>('job');
  if (!ref) return DONE;
  const decided = storage.kv.get<Outcome>('outcome');
  if (decided) return settle(env, storage, ref, decided);
  const place = await placeOf(globalDbOf(env), ref.workspaceId);
  if (!place) return discard(env, storage);
  const db = directoryRoutedShardDb(env, ref.workspaceId, place.shard);
  const [row] = await db.select().from(workspaceExports).where(eq(workspaceExports.id, ref.exportId)).limit(1);
  if (!row || (row.status !== 'pending' && row.status !== 'running')) return discard(env, storage);
  let progress = storage.kv.get<Progress>('progress');
  if (place.movingTo !== null) {
    // The row cannot be written under a move's fence; waiting for it is no stall.
    if (progress) storage.kv.put('progress', { ...progress, sliceFrom: null });
    return { done: false, againInMs: FENCE_RETRY_MS };
  }
  progress ??= await open(env, storage, ref, row);
  const stalls = progress.sliceFrom === progress.seq ? progress.stalls + 1 : 0;
  if (stalls >= MAX_STALLS) {
    const error = `The export stopped ${MAX_STALLS} times at ${describe(storage.kv.get<ExportCursor>('at') ?? progress.cursor)} without getting further`;
    return settle(env, storage, ref, { status: 'failed', error });
  }
  progress = { ...progress, sliceFrom: progress.seq, stalls };
  storage.kv.put('progress', progress);
  storage.sql.exec(FILES_TABLE);

  await db
    .update(workspaceExports)
    .set({ status: 'running', leaseUntil: now() + LEASE_MS })
    .where(and(eq(workspaceExports.id, ref.exportId), unfinished));
  // Audit and activity of changes made in the global database are on the shard once delivered.
  if (progress.seq === 0) await deliverChanges(globalDbOf(env), db, ref.workspaceId);

  const upload = env.BUCKET.resumeMultipartUpload(progress.key, progress.uploadId);
  const zip = new ZipUpload(upload, progress.createdAt, { parts: progress.parts, offset: progress.offset, tail: await tailOf(env.BUCKET, progress.tailKey) });
  const source: ExportSource = {
    db,
    shard: directoryRoutedD1(env, ref.workspaceId, place.shard),
    globalDb: globalDbOf(env),
    bucket: env.BUCKET,
    workspaceId: ref.workspaceId,
    requestedBy: progress.requestedBy,
    createdAt: progress.createdAt,
  };
  const written: ExportedFile[] = [];
  let cursor = progress.cursor;
  const started = Date.now();
  try {
    do {
      storage.kv.put('at', cursor);
      if (cursor.step === 'manifest') {
        const files = [...writtenFiles(storage), ...written.map(rowOf)];
        const manifest = await writeManifest(zip, source, files.map(listed));
        const size = await zip.finish([...files.map(entryOf), manifest.entry]);
        return await settle(env, storage, ref, { status: 'ready', size });
      }
      const step = await writeStep(zip, source, cursor);
      if (step.file) written.push(step.file);
      cursor = step.next;
    } while (Date.now() - started < budgetMs);
  } catch (error) {
    if (error instanceof ArchiveTooLarge) return settle(env, storage, ref, { status: 'failed', error: error.message });
    throw error;
  }
  await checkpoint(env, storage, progress, zip.state(), cursor, written);
  return { done: false, againInMs: 0 };
}
