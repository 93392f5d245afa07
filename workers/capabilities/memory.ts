import { z } from 'zod';
import { appendMemory, MAX_MEMORY_BYTES, MemoryDocument, readMemory, writeMemory } from '../services/memory';
import { defineCapability, READ_ONLY, type Area } from './capability';

const WriteMemoryInput = z.object({
  // The cap is on the resulting document, checked by the service for both modes alike.
  content: z.string().describe(`The text to write; the whole document holds at most ${MAX_MEMORY_BYTES} bytes of UTF-8`),
  mode: z.enum(['overwrite', 'append']).default('overwrite').describe('overwrite (the default): replace everything; append: add after the separator'),
});

/** Reading the working memory: an MCP resource and a run tool besides its route. */
export const readMemoryCapability = defineCapability({
  name: 'read-memory',
  title: 'Read working memory',
  description: 'Reads the workspace’s shared working-memory document, which every agent paired to the workspace can read and add to.',
  access: { auth: 'credential', scope: 'memory:read' },
  input: z.object({}),
  output: MemoryDocument,
  annotations: READ_ONLY,
  http: { method: 'GET', path: '/', summary: "The workspace's working-memory document" },
  agentTool: {
    offeredTo: 'all',
    name: 'read_memory',
    description: "Read the workspace's shared working-memory document.",
    displayName: 'Read memory',
    label: () => 'working memory',
    answer: (memory) => memory.content || '(empty)',
  },
  workflowStep: { kind: 'read', output: (memory) => ({ content: memory.content }) },
  run: (ctx) => readMemory(ctx.db, ctx.actor),
});

/** The workspace's shared working-memory document, which every agent paired to the workspace can read and add to. */
export const memoryArea: Area = {
  mount: '/api/v1/memory',
  tag: 'Memory',
  capabilities: [
    readMemoryCapability,
    defineCapability({
      name: 'write-memory',
      title: 'Write working memory',
      description:
        'Writes the workspace’s working memory. mode "append" adds the content after a blank line, three hyphens and a blank line, atomically (concurrent appends are all kept); mode "overwrite" replaces the whole document.',
      access: { auth: 'credential', scope: 'memory:write' },
      input: WriteMemoryInput,
      output: MemoryDocument,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      http: { method: 'PUT', path: '/', summary: 'Replace the whole document, or with mode "append" add to it atomically' },
      agentTool: {
        offeredTo: 'all',
        name: 'append_memory',
        description: 'Append a note to the workspace working memory, for other agents and later runs.',
        displayName: 'Append to memory',
        label: () => 'working memory',
        args: WriteMemoryInput.pick({ content: true }),
        input: ({ content }) => ({ content, mode: 'append' as const }),
        answer: () => 'Appended',
      },
      run: (ctx, { content, mode }) =>
        mode === 'append' ? appendMemory(ctx.db, ctx.actor, content, ctx.toolCallKey) : writeMemory(ctx.db, ctx.actor, { content }),
    }),
  ],
};
