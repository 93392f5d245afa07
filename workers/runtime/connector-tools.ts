import type { TurnInput } from '../services/execution-events';
import { GitRef, RepoPath } from '../connectors/github';
import type { Db, Env } from '../env';
import { sourceApi } from '../services/connectors';
import type { AgentTool } from './agent-loop';
import { failed } from './tool-errors';

/** What a file read hands the model at most: a source file, small for the context. */
const MAX_FILE_CHARS = 64 * 1024;
const MAX_LISTED_FILES = 2_000;

/**
 * The tools a run started with `connector: {type:'github', fields:{repo}}` gets: list and read
 * the files of that one repository, as the run's actor (the read scope the run route checks).
 * The token is read from D1 at each call (never kept in the turn or the Durable Object), so a
 * disconnect takes effect mid-run. `remote` adds no tools.
 */
export function connectorRunTools(db: Db, env: Env, turn: TurnInput): AgentTool[] {
  const connector = turn.connector;
  if (connector?.type !== 'github') return [];
  const { repo } = connector;
  const api = () => sourceApi(db, env, turn.actor, 'github');
  const ref = (args: Record<string, unknown>) => (args.ref === undefined || args.ref === '' ? undefined : GitRef.parse(String(args.ref)));
  return [
    {
      spec: {
        name: 'list_repository_files',
        description: `List the files of the GitHub repository ${repo} (the default branch unless ref names a branch, tag or commit), optionally under a folder.`,
        inputSchema: {
          type: 'object',
          properties: { path: { type: 'string', description: 'A folder inside the repository, e.g. src' }, ref: { type: 'string' } },
        },
      },
      displayName: 'List repository files',
      label: (args) => `${repo}/${String(args.path ?? '')}`.slice(0, 200),
      run: async (args) => {
        try {
          const path = args.path === undefined || args.path === '' ? undefined : RepoPath.parse(String(args.path));
          const tree = await (await api()).tree(repo, ref(args), path);
          const files = tree.entries.filter((e) => e.type === 'file');
          const listed = files.slice(0, MAX_LISTED_FILES).map((e) => `${e.path} (${e.size ?? 0} bytes)`);
          const cut = tree.truncated || files.length > MAX_LISTED_FILES ? '\n[list truncated]' : '';
          return { content: `${repo}@${tree.ref}: ${files.length} files\n${listed.join('\n')}${cut}` };
        } catch (error) {
          return error instanceof Error && error.name === 'ZodError' ? { content: 'path or ref is not valid', isError: true } : failed(error);
        }
      },
    },
    {
      spec: {
        name: 'read_repository_file',
        description: `Read one file of the GitHub repository ${repo} (the default branch unless ref names a branch, tag or commit).`,
        inputSchema: {
          type: 'object',
          properties: { path: { type: 'string', description: 'The file, e.g. src/index.ts' }, ref: { type: 'string' } },
          required: ['path'],
        },
      },
      displayName: 'Read repository file',
      label: (args) => `${repo}/${String(args.path ?? '')}`.slice(0, 200),
      run: async (args) => {
        try {
          const file = await (await api()).content(repo, RepoPath.min(1).parse(String(args.path ?? '')), ref(args));
          if (file.encoding === 'base64') return { content: `${file.path} is a binary file of ${file.size} bytes`, isError: true };
          const cut = file.content.length > MAX_FILE_CHARS ? '\n[truncated]' : '';
          return { content: file.content.slice(0, MAX_FILE_CHARS) + cut };
        } catch (error) {
          return error instanceof Error && error.name === 'ZodError' ? { content: 'path or ref is not valid', isError: true } : failed(error);
        }
      },
    },
  ];
}
