import { z } from 'zod';
import { cursorEnvelope } from '../lib/pagination';
import { artifactContent, ArtifactRecord, deleteArtifact, downloadArtifact, getArtifact, listArtifacts, ListArtifactsQuery } from '../services/artifacts';
import { defineCapability, READ_ONLY, type Area } from './capability';

const ArtifactId = z.object({ artifactId: z.string().min(1).max(40).describe('The artifact id, art_<n> or <n>') });
const byId = { id: 'artifactId' };

/** Downloading an artifact: the MCP resource artifact://{artifactId} reads through it too. */
export const downloadArtifactCapability = defineCapability({
  name: 'download-artifact',
  title: 'Download an artifact',
  description: 'Returns an artifact’s content: as text for text, Markdown and JSON files, otherwise base64 (encoding says which).',
  access: { auth: 'credential', scope: 'workspace:files:read' },
  input: ArtifactId,
  output: z.object({ artifact: ArtifactRecord, body: z.instanceof(ReadableStream) }),
  annotations: READ_ONLY,
  http: {
    method: 'GET',
    path: '/:id/download',
    params: byId,
    summary: 'The bytes, with the artifact’s content type',
    respond: {
      schema: z.string(),
      send: (c, { artifact, body }) => {
        c.header('content-type', artifact.contentType);
        c.header('content-length', String(artifact.size));
        c.header('content-disposition', `attachment; filename="${artifact.name}"`);
        return c.body(body);
      },
    },
  },
  mcp: {
    output: z.object({ artifact: ArtifactRecord, encoding: z.enum(['utf-8', 'base64']), content: z.string() }),
    present: (_ctx, download) => artifactContent(download),
  },
  run: (ctx, { artifactId }) => downloadArtifact(ctx.db, ctx.env.BUCKET, ctx.actor, artifactId),
});

/** Files runs produced, kept in R2 with their record in D1. */
export const artifactsArea: Area = {
  mount: '/api/v1/artifacts',
  tag: 'Artifacts',
  capabilities: [
    defineCapability({
      name: 'list-artifacts',
      title: 'List artifacts',
      description:
        'Lists the files runs produced in this workspace (id, executionId, name, contentType, size), newest first, with cursor paging; executionId keeps one execution’s.',
      access: { auth: 'credential', scope: 'workspace:files:read' },
      input: ListArtifactsQuery,
      output: cursorEnvelope(ArtifactRecord),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: 'Artifacts of the workspace, newest first; `executionId` keeps one execution’s' },
      run: (ctx, query) => listArtifacts(ctx.db, ctx.actor, query),
    }),
    defineCapability({
      name: 'get-artifact',
      title: 'Get an artifact',
      description: 'Shows one artifact’s record: the execution that made it, its name, content type, size and creation time.',
      access: { auth: 'credential', scope: 'workspace:files:read' },
      input: ArtifactId,
      output: ArtifactRecord,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:id', params: byId, summary: 'One artifact' },
      run: (ctx, { artifactId }) => getArtifact(ctx.db, ctx.actor, artifactId),
    }),
    downloadArtifactCapability,
    defineCapability({
      name: 'delete-artifact',
      title: 'Delete an artifact',
      description: 'Deletes an artifact and its stored bytes. This cannot be undone.',
      access: { auth: 'credential', scope: 'workspace:files:write' },
      input: ArtifactId,
      output: z.object({ success: z.literal(true) }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      http: { method: 'DELETE', path: '/:id', params: byId, summary: 'Delete an artifact and its bytes' },
      run: (ctx, { artifactId }) => deleteArtifact(ctx.db, ctx.env.BUCKET, ctx.actor, artifactId),
    }),
  ],
};
