import { z } from 'zod';
import { toBase64 } from '../../lib/base64';
import { cursorEnvelope } from '../../lib/pagination';
import { ArtifactRecord, deleteArtifact, downloadArtifact, getArtifact, listArtifacts } from '../../services/artifacts';
import { defineTool, READ_ONLY, type ToolContext } from '../tool';

const artifactId = z.string().min(1).max(40).describe('The artifact id, art_<n> or <n>');
const TEXTUAL = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript)\b)/;

/** An artifact's content: text for textual types, base64 otherwise (the download tool and the artifact resources). */
export async function artifactContent(ctx: ToolContext, artifactId: string) {
  const { row, body } = await downloadArtifact(ctx.db, ctx.env.BUCKET, ctx.principal, artifactId);
  const bytes = new Uint8Array(await new Response(body).arrayBuffer());
  const textual = TEXTUAL.test(row.contentType);
  return {
    contentType: row.contentType,
    encoding: textual ? ('utf-8' as const) : ('base64' as const),
    content: textual ? new TextDecoder().decode(bytes) : toBase64(bytes),
  };
}

export const artifactTools = [
  defineTool({
    name: 'list-artifacts',
    title: 'List artifacts',
    description: 'Lists the files runs produced in this workspace (id, executionId, name, contentType, size), newest first, with cursor paging.',
    route: 'GET /api/v1/artifacts',
    input: {
      limit: z.number().int().min(1).max(100).optional().describe('Page size (default 20)'),
      after_id: z.string().min(1).max(64).optional().describe('Continue after this artifact id (last_id of the previous page)'),
    },
    output: cursorEnvelope(ArtifactRecord),
    annotations: READ_ONLY,
    run: (ctx, args) => listArtifacts(ctx.db, ctx.principal, { limit: args.limit ?? 20, after_id: args.after_id }),
  }),
  defineTool({
    name: 'get-artifact',
    title: 'Get an artifact',
    description: 'Shows one artifact’s record: the execution that made it, its name, content type, size and creation time.',
    route: 'GET /api/v1/artifacts/:id',
    input: { artifactId },
    output: ArtifactRecord,
    annotations: READ_ONLY,
    run: (ctx, { artifactId }) => getArtifact(ctx.db, ctx.principal, artifactId),
  }),
  defineTool({
    name: 'download-artifact',
    title: 'Download an artifact',
    description: 'Returns an artifact’s content: as text for text, Markdown and JSON files, otherwise base64 (encoding says which).',
    route: 'GET /api/v1/artifacts/:id/download',
    input: { artifactId },
    output: z.object({ artifact: ArtifactRecord, encoding: z.enum(['utf-8', 'base64']), content: z.string() }),
    annotations: READ_ONLY,
    run: async (ctx, { artifactId }) => {
      const { encoding, content } = await artifactContent(ctx, artifactId);
      return { artifact: await getArtifact(ctx.db, ctx.principal, artifactId), encoding, content };
    },
  }),
  defineTool({
    name: 'delete-artifact',
    title: 'Delete an artifact',
    description: 'Deletes an artifact and its stored bytes. This cannot be undone.',
    route: 'DELETE /api/v1/artifacts/:id',
    input: { artifactId },
    output: z.object({ success: z.literal(true) }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: (ctx, { artifactId }) => deleteArtifact(ctx.db, ctx.env.BUCKET, ctx.principal, artifactId),
  }),
];
