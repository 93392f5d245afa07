import { and, asc, eq, gt } from 'drizzle-orm';
import { artifacts, members, skills, skillVersions, users, workspaces } from '../../schema';
import type { GlobalDb, ShardDb } from '../env';
import { blobKey, type BundleManifest } from '../lib/bundle';
import { toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import type { Push, WrittenFile, ZipUpload } from '../lib/zip-upload';
import { pages } from './shard-copy';
import { WORKSPACE_TABLES } from './shard-tables';
import { presentMember, presentWorkspace } from './workspaces';

/** The archive layout's version (docs/export.md), raised when a reader would have to change. */
export const EXPORT_FORMAT_VERSION = 1;

/**
 * Shard tables an export leaves out: idempotency records replay answers that may hold a credential
 * shown once (a new API key, an invitation token), export jobs describe archives, not the
 * workspace, and the webhook outbox holds events on their way to the queue.
 */
const NOT_EXPORTED = new Set(['idempotency_records', 'workspace_exports', 'webhook_outbox']);

/** Columns an export leaves out, by table: credential material, even encrypted or in part (docs/export.md). */
const WITHHELD: Readonly<Record<string, readonly string[]>> = {
  secrets: ['ciphertext'],
  connector_connections: ['ciphertext', 'token_preview'],
  workflow_triggers: ['secret', 'actor'],
};

/** The shard tables an export writes, each as `records/<name>.jsonl`, and the columns it keeps. */
export const EXPORTED_TABLES = WORKSPACE_TABLES.filter((table) => !NOT_EXPORTED.has(table.name)).map((table) => ({
  ...table,
  columns: table.columns.filter((column) => !WITHHELD[table.name]?.includes(column)),
}));

export interface ManifestFile extends WrittenFile {
  path: string;
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

/** What an archive is written from: the workspace's shard, the global database and the bucket. */
export interface ExportSource {
  db: ShardDb;
  /** The same shard's binding, for the rows read table by table without the query builder. */
  shard: D1Database;
  globalDb: GlobalDb;
  bucket: R2Bucket;
  workspaceId: string;
  requestedBy: string;
  createdAt: number;
}

const PAGE = 100;
const encoder = new TextEncoder();
const jsonLines = (rows: readonly unknown[]) => encoder.encode(rows.map((row) => `${JSON.stringify(row)}\n`).join(''));

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

/**
 * Writes the whole workspace into `zip`: its record and members, one JSON Lines file per shard
 * table, its artifacts' and skill versions' files, and last `manifest.json` listing every other
 * file with its size and SHA-256. Reads a page at a time; nothing is held beyond one page.
 */
export async function writeWorkspaceArchive(zip: ZipUpload, source: ExportSource): Promise<ExportManifest> {
  const { db, globalDb, bucket, workspaceId } = source;
  const files: ManifestFile[] = [];
  const jsonl = async (path: string, pagesOf: AsyncIterable<readonly unknown[]>) => {
    let records = 0;
    const written = await zip.file(path, async (push) => {
      for await (const page of pagesOf) {
        records += page.length;
        await push(jsonLines(page));
      }
    });
    files.push({ path, records, ...written });
  };
  const object = async (path: string, key: string) => {
    const found = await bucket.get(key);
    if (found) files.push({ path, ...(await zip.file(path, (push) => pushStream(found.body, push))) });
  };

  const [workspace] = await globalDb.select().from(workspaces).where(eq(workspaces.id, workspaceId)).limit(1);
  if (!workspace) throw new Error(`Workspace ${workspaceId} is gone`);
  const record = presentWorkspace(workspace, 'owner', source.requestedBy);
  files.push({ path: 'workspace.json', ...(await zip.file('workspace.json', (push) => push(encoder.encode(`${JSON.stringify(record, null, 2)}\n`)))) });

  const memberPages = async function* () {
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
  };
  await jsonl('members.jsonl', memberPages());

  for (const table of EXPORTED_TABLES) {
    const rows = async function* () {
      for await (const page of pages(source.shard, table, workspaceId, table.columns)) {
        yield page.map((row) => Object.fromEntries(table.columns.map((column) => [column, row[column]])));
      }
    };
    await jsonl(`records/${table.name}.jsonl`, rows());
  }

  const artifactPages = keyset(
    0,
    (after) =>
      db
        .select({ id: artifacts.id, name: artifacts.name, r2Key: artifacts.r2Key })
        .from(artifacts)
        .where(and(eq(artifacts.workspaceId, workspaceId), gt(artifacts.id, after)))
        .orderBy(asc(artifacts.id))
        .limit(PAGE),
    (row) => row.id,
  );
  for await (const page of artifactPages) {
    for (const artifact of page) await object(`artifacts/${formatId('art', artifact.id)}/${segment(artifact.name)}`, artifact.r2Key);
  }

  const versionPages = keyset(
    0,
    (after) =>
      db
        .select({ id: skillVersions.id, version: skillVersions.versionNumber, storagePath: skillVersions.storagePath, slug: skills.slug })
        .from(skillVersions)
        .innerJoin(skills, eq(skills.id, skillVersions.skillId))
        .where(and(eq(skillVersions.workspaceId, workspaceId), gt(skillVersions.id, after)))
        .orderBy(asc(skillVersions.id))
        .limit(PAGE),
    (row) => row.id,
  );
  for await (const page of versionPages) {
    for (const version of page) {
      const stored = await bucket.get(version.storagePath);
      if (!stored) continue;
      const bundle = (await stored.json()) as BundleManifest;
      for (const entry of bundle.files) await object(`skills/${version.slug}/v${version.version}/${entry.path}`, blobKey(entry.sha256));
    }
  }

  const manifest: ExportManifest = {
    format: 'workspace-export',
    version: EXPORT_FORMAT_VERSION,
    workspaceId,
    createdAt: toIso(source.createdAt),
    files,
  };
  await zip.file('manifest.json', (push) => push(encoder.encode(`${JSON.stringify(manifest, null, 2)}\n`)));
  return manifest;
}
