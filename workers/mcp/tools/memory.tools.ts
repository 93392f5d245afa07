import { z } from 'zod';
import { appendMemory, MAX_MEMORY_CHARS, MemoryDocument, readMemory, writeMemory } from '../../services/memory';
import { defineTool, READ_ONLY } from '../tool';

export const memoryTools = [
  defineTool({
    name: 'read-memory',
    title: 'Read working memory',
    description: 'Reads the workspace’s shared working-memory document, which every agent paired to the workspace can read and add to.',
    route: 'GET /api/v1/memory',
    input: {},
    output: MemoryDocument,
    annotations: READ_ONLY,
    run: (ctx) => readMemory(ctx.db, ctx.principal),
  }),
  defineTool({
    name: 'write-memory',
    title: 'Write working memory',
    description:
      'Writes the workspace’s working memory. mode "append" adds the content after a blank line, three hyphens and a blank line, atomically (concurrent appends are all kept); mode "overwrite" replaces the whole document.',
    route: 'PUT /api/v1/memory',
    input: {
      content: z.string().max(MAX_MEMORY_CHARS).describe('The text to write'),
      mode: z.enum(['overwrite', 'append']).describe('append: add after the separator; overwrite: replace everything'),
    },
    output: MemoryDocument,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    run: (ctx, { content, mode }) => (mode === 'append' ? appendMemory(ctx.db, ctx.principal, content) : writeMemory(ctx.db, ctx.principal, { content })),
  }),
];
