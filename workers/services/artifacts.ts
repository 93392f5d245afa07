import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { artifacts, type ArtifactRow } from '../../schema';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { notFound } from '../errors';
import { toIso } from '../lib/clock';
import { formatId } from '../lib/ids';
import { byIntegerId, type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
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

const requireArtifact = (db: Db, principal: Principal, rawId: string): Promise<ArtifactRow> =>
  requireOwned(db, artifacts, principal, 'art', rawId, 'Artifact');

export async function listArtifacts(db: Db, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    byIntegerId(artifacts.id, (where, orderBy, limit) => db.select().from(artifacts).where(where).orderBy(orderBy).limit(limit), 'art'),
    eq(artifacts.workspaceId, principal.workspaceId),
  );
  return mapPage(page, present);
}

export const getArtifact = async (db: Db, principal: Principal, rawId: string) => present(await requireArtifact(db, principal, rawId));

/** The bytes, streamed from R2 with the artifact's content type. */
export async function downloadArtifact(db: Db, bucket: R2Bucket, principal: Principal, rawId: string) {
  const row = await requireArtifact(db, principal, rawId);
  const object = await bucket.get(row.r2Key);
  if (!object) throw notFound('Artifact');
  return { row, body: object.body };
}

export async function deleteArtifact(db: Db, bucket: R2Bucket, principal: Principal, rawId: string) {
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
