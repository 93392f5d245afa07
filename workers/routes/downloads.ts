import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { notFound, unauthorized } from '../errors';
import { globalDbOf, shardDbOf } from '../lib/db';
import { verifyStreamToken } from '../lib/signing';
import { placeOf } from '../services/directory';
import { readyArchive } from '../services/workspace-exports';
import { documentedProtocol } from './openapi';

/**
 * Signed download URLs (docs/export.md): no API key or session, the token in the query is the
 * credential. It names the export and its workspace and expires an hour after it was issued.
 */
export const downloadsRoutes = new Hono<AppEnv>().get(
  '/exports/:id',
  documentedProtocol(
    'Workspaces',
    "A workspace export's archive (the signed downloadUrl of get-export)",
    'a zip archive (APPNOTE 6.3), docs/export.md',
    200,
    'application/zip',
  ),
  async (c) => {
    const token = c.req.query('token');
    const claims = token ? await verifyStreamToken(c.env.SIGNING_SECRET, 'workspace-export', token) : null;
    if (!claims || claims.subject !== c.req.param('id')) throw unauthorized('The download URL is invalid or has expired');
    const place = await placeOf(globalDbOf(c.env), claims.workspaceId);
    const job = place && (await readyArchive(shardDbOf(c.env, place.shard), claims.workspaceId, claims.subject));
    const object = job && job.r2Key ? await c.env.BUCKET.get(job.r2Key) : null;
    if (!object) throw notFound('Export');
    return new Response(object.body, {
      headers: {
        'content-type': 'application/zip',
        'content-length': String(object.size),
        'content-disposition': `attachment; filename="${claims.workspaceId}-${claims.subject}.zip"`,
        'cache-control': 'private, no-store',
      },
    });
  },
);
