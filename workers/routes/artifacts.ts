import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { ArtifactRecord, deleteArtifact, downloadArtifact, getArtifact, listArtifacts, ListArtifactsQuery } from '../services/artifacts';
import { cursorEnvelope, documented } from './openapi';

const IdParam = z.object({ id: z.string().min(1).max(40) });

/** Files runs produced (docs/executions.md). */
export const artifactsRoutes = new Hono<AppEnv>()
  .get(
    '/',
    documented('Artifacts', 'Artifacts of the workspace, newest first; `executionId` keeps one execution’s', 200, cursorEnvelope(ArtifactRecord)),
    validate('query', ListArtifactsQuery),
    async (c) => c.json(await listArtifacts(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .get('/:id', documented('Artifacts', 'One artifact', 200, ArtifactRecord), validate('param', IdParam), async (c) =>
    c.json(await getArtifact(c.var.db, principalOf(c), c.req.valid('param').id)),
  )
  .get('/:id/download', documented('Artifacts', 'The bytes, with the artifact’s content type', 200, z.string()), validate('param', IdParam), async (c) => {
    const { row, body } = await downloadArtifact(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').id);
    c.header('content-type', row.contentType);
    c.header('content-length', String(row.size));
    c.header('content-disposition', `attachment; filename="${row.name}"`);
    return c.body(body);
  })
  .delete(
    '/:id',
    documented('Artifacts', 'Delete an artifact and its bytes', 200, z.object({ success: z.literal(true) })),
    validate('param', IdParam),
    async (c) => c.json(await deleteArtifact(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').id)),
  );
