import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { artifacts, type ArtifactRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { ShardDb } from '../env';
import { notFound } from '../errors';
import { toBase64 } from '../lib/base64';
import { toIso } from '../lib/clock';
import { formatId, parseId } from '../lib/ids';
import { byIntegerId, CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { recordChange } from './audit';
import { requireOwned } from './tenant';

export const ArtifactRecord = z.object({
  id: z.string(),
  executionId: z.string().nullable(),
  name: z.string(),
  contentType: z.string(),
  size: z.number().int(),
  createdAt: z.string(),
});
export type ArtifactRecord = z.infer<typeof ArtifactRecord>;

const present = (row: ArtifactRow): ArtifactRecord => ({
  id: formatId('art', row.id),
  executionId: row.executionId === null ? null : formatId('exec', row.executionId),
  name: row.name,
  contentType: row.contentType,
  size: row.size,
  createdAt: toIso(row.createdAt),
});

const requireArtifact = (db: ShardDb, principal: Principal, rawId: string): Promise<ArtifactRow> =>
  requireOwned(db, artifacts, principal, 'art', rawId, 'Artifact');

export const ListArtifactsQuery = CursorQuery.extend({
  /** Only the files of this execution (`exec_12` or `12`); another workspace's execution lists nothing. */
  executionId: z
    .string()
    .max(40)
    .transform((raw, ctx) => {
      const id = parseId('exec', raw);
      if (id === null) ctx.addIssue({ code: 'custom', message: 'executionId is an execution id (exec_12 or 12)' });
      return id ?? 0;
    })
    .optional()
    .describe('Only the files of this execution (exec_<n> or <n>)'),
});
export type ListArtifactsQuery = z.infer<typeof ListArtifactsQuery>;

export async function listArtifacts(db: ShardDb, principal: Principal, query: ListArtifactsQuery) {
  const page = await cursorPage(
    query,
    byIntegerId(artifacts.id, (where, orderBy, limit) => db.select().from(artifacts).where(where).orderBy(orderBy).limit(limit), 'art'),
    and(eq(artifacts.workspaceId, principal.workspaceId), query.executionId === undefined ? undefined : eq(artifacts.executionId, query.executionId)),
  );
  return mapPage(page, present);
}

/** Every file an execution of this workspace produced, oldest first. */
export async function artifactsOfExecution(db: ShardDb, principal: Principal, executionId: number): Promise<ArtifactRecord[]> {
  const rows = await db
    .select()
    .from(artifacts)
    .where(and(eq(artifacts.workspaceId, principal.workspaceId), eq(artifacts.executionId, executionId)))
    .orderBy(artifacts.id);
  return rows.map(present);
}

export const getArtifact = async (db: ShardDb, principal: Principal, rawId: string) => present(await requireArtifact(db, principal, rawId));

/** The record and its bytes, streamed from R2. */
export async function downloadArtifact(db: ShardDb, bucket: R2Bucket, principal: Principal, rawId: string) {
  const row = await requireArtifact(db, principal, rawId);
  const object = await bucket.get(row.r2Key);
  if (!object) throw notFound('Artifact');
  return { artifact: present(row), body: object.body };
}

const TEXTUAL = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript)\b)/;

/** An artifact's bytes as a JSON string: text for textual types, base64 otherwise (MCP has no byte answers). */
export async function artifactContent(download: { artifact: ArtifactRecord; body: ReadableStream }) {
  const bytes = new Uint8Array(await new Response(download.body).arrayBuffer());
  const textual = TEXTUAL.test(download.artifact.contentType);
  return {
    artifact: download.artifact,
    encoding: textual ? ('utf-8' as const) : ('base64' as const),
    content: textual ? new TextDecoder().decode(bytes) : toBase64(bytes),
  };
}

export async function deleteArtifact(db: ShardDb, bucket: R2Bucket, principal: Principal, rawId: string) {
  const row = await requireArtifact(db, principal, rawId);
  await db.batch([
    db.delete(artifacts).where(eq(artifacts.id, row.id)),
    ...recordChange(db, principal, {
      action: 'artifact.deleted',
      resourceType: 'artifact',
      resourceId: formatId('art', row.id),
      metadata: { name: row.name },
      activity: `Artifact ${row.name} was deleted`,
    }),
  ]);
  await bucket.delete(row.r2Key);
  return { success: true as const };
}
