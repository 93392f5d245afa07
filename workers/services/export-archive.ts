import { and, asc, eq, gt } from 'drizzle-orm';
import { artifacts, members, skills, skillVersions, users, workspaces } from '../../schema';
import type { GlobalDb, ShardDb } from '../env';
import { blobKey, type BundleManifest } from '../lib/bundle';
import { toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import type { Push, ZipEntry, ZipUpload } from '../lib/zip-upload';
import { keyPages } from './shard-copy';
import { WORKSPACE_TABLES } from './shard-tables';
import { presentMember, presentWorkspace } from './workspaces';

/** The archive layout's version (docs/export.md), raised when a reader would have to change. */
export const EXPORT_FORMAT_VERSION = 1;

/**
 * Shard tables an export leaves out: idempotency records replay answers that may hold a credential
 * shown once (a new API key, an invitation token), export jobs describe archives, not the
 * workspace, and the webhook outbox holds events on their way to the queue.
 */
const NOT_EXPORTED = new Set(['idempotency_records', 'workspace_exports', 'webhook_outbox', 'workspace_placement']);

/** Columns an export leaves out, by table: credential material, even encrypted or in part (docs/export.md). */
const WITHHELD: Readonly<Record<string, readonly string[]>> = {
  secrets: ['ciphertext'],
  connector_connections: ['ciphertext', 'token_preview'],
  workflow_triggers: ['secret', 'actor'],
  webhook_endpoints: ['secret', 'previous_secret'],
  telemetry_destinations: ['headers'],
};

/** The shard tables an export writes, each as `records/<name>.jsonl`, and the columns it keeps. */
export const EXPORTED_TABLES = WORKSPACE_TABLES.filter((table) => !NOT_EXPORTED.has(table.name)).map((table) => ({
  ...table,
  columns: table.columns.filter((column) => !WITHHELD[table.name]?.includes(column)),
}));

export interface ManifestFile {
  path: string;
  /** Its size unpacked. */
  bytes: number;
  sha256: string;
  /** Lines of a JSON Lines file. */
  records?: number;
}

export interface ExportManifest {
  format: 'workspace-export';
  version: typeof EXPORT_FORMAT_VERSION;
  workspaceId: string;
  createdAt: string;
  files: ManifestFile[];
}

/** A file written into the archive: its central directory entry and what the manifest says of it. */
export interface ExportedFile {
  entry: ZipEntry;
  sha256: string;
  records: number | null;
}

/**
 * What an archive is written from: the workspace's shard (routed by the directory at each
 * statement, so a move between two reads is followed), the global database and the bucket.
 */
export interface ExportSource {
  db: ShardDb;
  /** The same routed shard as a binding, for the rows read table by table without the query builder. */
  shard: D1Database;
  globalDb: GlobalDb;
  bucket: R2Bucket;
  workspaceId: string;
  requestedBy: string;
  createdAt: number;
}

/**
 * Where writing an archive stands: the next file to write. Files are written in this order:
 * `workspace.json`, `members.jsonl`, one `records/<table>.jsonl` per exported table, each
 * artifact (by id), each file of each skill version (by version id, then the bundle's order),
 * and last `manifest.json`.
 */
export type ExportCursor =
  | { step: 'workspace' }
  | { step: 'members' }
  | { step: 'records'; table: number }
  | { step: 'artifacts'; after: number }
  | { step: 'skills'; after: number; file: number }
  | { step: 'manifest' };

export const FIRST_STEP: ExportCursor = { step: 'workspace' };

const PAGE = 100;
const encoder = new TextEncoder();
const jsonLines = (rows: readonly unknown[]) => encoder.encode(rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
const pretty = (value: unknown) => encoder.encode(`${JSON.stringify(value, null, 2)}\n`);

/** A name as one path segment: no separators, control characters or dot-only names. */
const segment = (name: string) => name.replace(/[\u0000-\u001f/\\]/g, '_').replace(/^\.{1,2}$/, '_');

async function pushStream(body: ReadableStream<Uint8Array>, push: Push): Promise<void> {
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    await push(value);
  }
}

/** Keyset pages of `fetch(after)`, from `first` on, each next page after the key `keyOf` reads from the last row. */
async function* keyset<Row, Key>(first: Key, fetch: (after: Key) => Promise<Row[]>, keyOf: (row: Row) => Key): AsyncGenerator<Row[]> {
  let after = first;
  for (;;) {
    const rows = await fetch(after);
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE) return;
    after = keyOf(rows.at(-1)!);
  }
}

async function bytesFile(zip: ZipUpload, path: string, bytes: Uint8Array): Promise<ExportedFile> {
  const { written, entry } = await zip.file(path, (push) => push(bytes));
  return { entry, sha256: written.sha256, records: null };
}

async function jsonlFile(zip: ZipUpload, path: string, pagesOf: AsyncIterable<readonly unknown[]>): Promise<ExportedFile> {
  let records = 0;
  const { written, entry } = await zip.file(path, async (push) => {
    for await (const page of pagesOf) {
      records += page.length;
      await push(jsonLines(page));
    }
  });
  return { entry, sha256: written.sha256, records };
}

async function objectFile(zip: ZipUpload, bucket: R2Bucket, path: string, key: string): Promise<ExportedFile | null> {
  const found = await bucket.get(key);
  if (!found) return null;
  const { written, entry } = await zip.file(path, (push) => pushStream(found.body, push));
  return { entry, sha256: written.sha256, records: null };
}

async function workspaceFile(zip: ZipUpload, source: ExportSource): Promise<ExportedFile> {
  const [workspace] = await source.globalDb.select().from(workspaces).where(eq(workspaces.id, source.workspaceId)).limit(1);
  if (!workspace) throw new Error(`Workspace ${source.workspaceId} is gone`);
  return bytesFile(zip, 'workspace.json', pretty(presentWorkspace(workspace, 'owner', source.requestedBy)));
}

function memberPages({ globalDb, workspaceId }: ExportSource) {
  return (async function* () {
    const byUser = keyset(
      '',
      (after) =>
        globalDb
          .select({ member: members, user: users })
          .from(members)
          .innerJoin(users, eq(users.id, members.userId))
          .where(and(eq(members.workspaceId, workspaceId), gt(members.userId, after)))
          .orderBy(asc(members.userId))
          .limit(PAGE),
      (row) => row.user.id,
    );
    for await (const page of byUser) yield page.map(presentMember);
  })();
}

function recordPages(source: ExportSource, table: (typeof EXPORTED_TABLES)[number]) {
  return (async function* () {
    for await (const page of keyPages(source.shard, table, source.workspaceId, table.columns)) {
      yield page.map((row) => Object.fromEntries(table.columns.map((column) => [column, row[column]])));
    }
  })();
}

/** The artifact after `after` (by id), or none. */
async function nextArtifact({ db, workspaceId }: ExportSource, after: number) {
  const [artifact] = await db
    .select({ id: artifacts.id, name: artifacts.name, r2Key: artifacts.r2Key })
    .from(artifacts)
    .where(and(eq(artifacts.workspaceId, workspaceId), gt(artifacts.id, after)))
    .orderBy(asc(artifacts.id))
    .limit(1);
  return artifact;
}

/** The skill version after `after` (by id) with its bundle's files, or none; a version whose bundle is gone has no files. */
async function nextVersion({ db, bucket, workspaceId }: ExportSource, after: number) {
  const [version] = await db
    .select({ id: skillVersions.id, version: skillVersions.versionNumber, storagePath: skillVersions.storagePath, slug: skills.slug })
    .from(skillVersions)
    .innerJoin(skills, eq(skills.id, skillVersions.skillId))
    .where(and(eq(skillVersions.workspaceId, workspaceId), gt(skillVersions.id, after)))
    .orderBy(asc(skillVersions.id))
    .limit(1);
  if (!version) return undefined;
  const stored = await bucket.get(version.storagePath);
  return { ...version, files: stored ? ((await stored.json()) as BundleManifest).files : [] };
}

/**
 * Writes the file `at` names (none, for an artifact or a skill file whose object is gone) and
 * answers it with where writing goes on. Each file is read a page at a time; nothing is held
 * beyond one page. The manifest is not written here: it lists every file (`writeManifest`).
 */
export async function writeStep(zip: ZipUpload, source: ExportSource, at: ExportCursor): Promise<{ file: ExportedFile | null; next: ExportCursor }> {
  switch (at.step) {
    case 'workspace':
      return { file: await workspaceFile(zip, source), next: { step: 'members' } };
    case 'members':
      return { file: await jsonlFile(zip, 'members.jsonl', memberPages(source)), next: { step: 'records', table: 0 } };
    case 'records': {
      const table = EXPORTED_TABLES[at.table]!;
      const next: ExportCursor = at.table + 1 < EXPORTED_TABLES.length ? { step: 'records', table: at.table + 1 } : { step: 'artifacts', after: 0 };
      return { file: await jsonlFile(zip, `records/${table.name}.jsonl`, recordPages(source, table)), next };
    }
    case 'artifacts': {
      const artifact = await nextArtifact(source, at.after);
      if (!artifact) return { file: null, next: { step: 'skills', after: 0, file: 0 } };
      const path = `artifacts/${formatId('art', artifact.id)}/${segment(artifact.name)}`;
      return { file: await objectFile(zip, source.bucket, path, artifact.r2Key), next: { step: 'artifacts', after: artifact.id } };
    }
    case 'skills': {
      const version = await nextVersion(source, at.after);
      if (!version) return { file: null, next: { step: 'manifest' } };
      const entry = version.files[at.file];
      const next: ExportCursor =
        at.file + 1 < version.files.length ? { step: 'skills', after: at.after, file: at.file + 1 } : { step: 'skills', after: version.id, file: 0 };
      if (!entry) return { file: null, next };
      return { file: await objectFile(zip, source.bucket, `skills/${version.slug}/v${version.version}/${entry.path}`, blobKey(entry.sha256)), next };
    }
    case 'manifest':
      throw new Error('The manifest is written by writeManifest');
  }
}

/** Writes `manifest.json`, listing every other file with its size and SHA-256; the archive's last file. */
export async function writeManifest(zip: ZipUpload, source: ExportSource, files: ManifestFile[]): Promise<ExportedFile> {
  const manifest: ExportManifest = {
    format: 'workspace-export',
    version: EXPORT_FORMAT_VERSION,
    workspaceId: source.workspaceId,
    createdAt: toIso(source.createdAt),
    files,
  };
  return bytesFile(zip, 'manifest.json', pretty(manifest));
}
