import type { TurnInput } from '../../durable-objects/ExecutionSession';
import type { Principal } from '../auth/principal';
import type { Db } from '../env';
import { AppError } from '../errors';
import { saveArtifact } from '../services/execution-runs';
import { appendMemory, readMemory } from '../services/memory';
import type { AgentTool } from './agent-loop';

/** The run acts as whoever started it: memory writes are theirs in the audit log. */
export const runPrincipal = (turn: TurnInput): Principal => ({
  userId: turn.userId,
  workspaceId: turn.workspaceId,
  role: turn.role,
  credential: turn.apiKeyId === null ? { type: 'session', sessionId: '' } : { type: 'api_key', apiKeyId: turn.apiKeyId },
  scopes: [],
  origin: { requestId: turn.requestId, ip: null, userAgent: null },
});

const failed = (error: unknown) => ({ content: error instanceof AppError ? error.message : 'The tool failed', isError: true });

/** The tools every run offers the model (issue 4): write an artifact, read and append working memory. */
export function runTools(db: Db, bucket: R2Bucket, turn: TurnInput): AgentTool[] {
  const principal = runPrincipal(turn);
  return [
    {
      spec: {
        name: 'write_artifact',
        description: 'Save a file (Markdown or text) as an artifact of this execution.',
        inputSchema: {
          type: 'object',
          properties: { name: { type: 'string', description: 'A plain file name, e.g. notes.md' }, content: { type: 'string' } },
          required: ['name', 'content'],
        },
      },
      displayName: 'Write artifact',
      label: (args) => String(args.name ?? 'file'),
      run: async (args) => {
        const saved = await saveArtifact(db, bucket, turn, String(args.name ?? ''), String(args.content ?? ''));
        return saved ? { content: `Saved ${saved}` } : { content: 'Invalid artifact name or content', isError: true };
      },
    },
    {
      spec: {
        name: 'read_memory',
        description: "Read the workspace's shared working-memory document.",
        inputSchema: { type: 'object', properties: {} },
      },
      displayName: 'Read memory',
      label: () => 'working memory',
      run: async () => ({ content: (await readMemory(db, principal)).content || '(empty)' }),
    },
    {
      spec: {
        name: 'append_memory',
        description: 'Append a note to the workspace working memory, for other agents and later runs.',
        inputSchema: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
      },
      displayName: 'Append to memory',
      label: () => 'working memory',
      run: async (args) =>
        appendMemory(db, principal, String(args.content ?? '')).then(
          () => ({ content: 'Appended' }),
          failed,
        ),
    },
  ];
}
