import { z } from 'zod';
import { invalidInput } from '../errors';
import { GithubRepo, GitRef, RepoPath } from '../connectors/github';
import {
  ConnectBody,
  connectConnector,
  ConnectorList,
  ConnectorStatus,
  connectorStatus,
  ConnectorType,
  disconnectConnector,
  getSourceContent,
  listBranches,
  listConnectors,
  listConnectorTriggers,
  listGithubRepos,
  listSources,
  runConnectorAction,
  searchConnectorActions,
} from '../services/connectors';
import { defineCapability, READ_ONLY, type Area } from './capability';

/**
 * Every connector operation needs `connector:list`; the service adds the per-app scope:
 * `connector:<app>:read` to read sources, `connector:<app>:exec` to connect, disconnect and run
 * actions (an action writes to the provider, so it needs the app's exec scope).
 */
const CONNECTOR_ACCESS = { auth: 'credential', scope: 'connector:list' } as const;
const connector = ConnectorType.describe('The connector type (the REST path’s :type), e.g. github');
const sourceConnector = ConnectorType.default('github').describe('The connector type; github (the default) is the one with sources');
const repo = GithubRepo.describe('The repository, owner/repo');
const ref = GitRef.optional().describe('A branch, tag or commit; the default branch when omitted');
const OPEN_READ = { ...READ_ONLY, openWorldHint: true } as const;
const byType = { type: 'connector' };
/** What the provider answered, passed on as it is (so the MCP tool declares no output schema). */
const ProviderAnswer = z.record(z.string(), z.unknown());
/** ProviderAnswer, typed as the service returns it for the run tools' answers. */
const providerAnswer = <T>() => ProviderAnswer as unknown as z.ZodType<T>;

/** What a run's repository tools hand the model at most: a source file, a list, small for the context. */
const MAX_FILE_CHARS = 64 * 1024;
const MAX_LISTED_FILES = 2_000;
const PATH_OR_REF = 'path or ref is not valid';
// Models send an empty ref for the default branch.
const runRef = z.preprocess((value) => (value === '' ? undefined : value), GitRef.optional());
const RepositoryFolder = z.object({ path: RepoPath.optional().describe('A folder inside the repository, e.g. src'), ref: runRef });
const RepositoryFile = z.object({ path: RepoPath.min(1).describe('The file, e.g. src/index.ts'), ref: runRef });

function fileList(tree: Awaited<ReturnType<typeof listSources>>): string {
  const files = tree.entries.filter((e) => e.type === 'file');
  const listed = files.slice(0, MAX_LISTED_FILES).map((e) => `${e.path} (${e.size ?? 0} bytes)`);
  const cut = tree.truncated || files.length > MAX_LISTED_FILES ? '\n[list truncated]' : '';
  return `${tree.repo}@${tree.ref}: ${files.length} files\n${listed.join('\n')}${cut}`;
}

function fileText(file: Awaited<ReturnType<typeof getSourceContent>>): string {
  if (file.encoding === 'base64') throw invalidInput('path', 'text_file', `${file.path} is a binary file of ${file.size} bytes`);
  return file.content.slice(0, MAX_FILE_CHARS) + (file.content.length > MAX_FILE_CHARS ? '\n[truncated]' : '');
}

/** Connections of a workspace to outside services (GitHub), their sources and actions. */
export const connectorsArea: Area = {
  mount: '/api/v1/connectors',
  tag: 'Connectors',
  capabilities: [
    defineCapability({
      name: 'list-connectors',
      title: 'List connectors',
      description:
        'Lists every connector type (GitHub so far): how it connects, the scopes it uses, its read operations, actions and trigger types, and its state in this workspace (connected, not_connected, not_configured).',
      access: CONNECTOR_ACCESS,
      input: z.object({}),
      output: ConnectorList,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: 'Every connector type: what it reads and does, and its state in this workspace' },
      run: (ctx) => listConnectors(ctx.db, ctx.env, ctx.actor),
    }),
    defineCapability({
      name: 'connect-connector',
      title: 'Connect a connector',
      description:
        'Connects this workspace to a connector with a token the provider accepts (for GitHub, a personal access token), replacing any earlier one. The token is stored encrypted and never shown again. Needs connector:<app>:exec.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector, token: ConnectBody.shape.token.describe('The provider token, e.g. a GitHub personal access token') }),
      output: ConnectorStatus,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
      http: {
        method: 'POST',
        path: '/:type/connect',
        params: byType,
        summary: 'Connect with a token the provider accepts (stored encrypted, never shown again); needs connector:<app>:exec too',
      },
      run: (ctx, { connector, token }) => connectConnector(ctx.db, ctx.env, ctx.actor, connector, { token }, ctx.grantToken),
    }),
    defineCapability({
      name: 'disconnect-connector',
      title: 'Disconnect a connector',
      description: 'Forgets this workspace’s token for a connector (nothing changes when it is not connected). Needs connector:<app>:exec.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector }),
      output: ConnectorStatus,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      http: {
        method: 'POST',
        path: '/:type/disconnect',
        params: byType,
        summary: 'Forget the workspace’s token (a no-op when not connected); needs connector:<app>:exec too',
      },
      run: (ctx, { connector }) => disconnectConnector(ctx.db, ctx.env, ctx.actor, connector, ctx.grantToken),
    }),
    defineCapability({
      name: 'get-connector-status',
      title: 'Get connector status',
      description:
        'Shows whether a connector is connected in this workspace, as whom, and checks the stored token with the provider (token_rejected when it no longer works), with the provider’s rate-limit budget.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector }),
      output: ConnectorStatus,
      annotations: OPEN_READ,
      http: { method: 'GET', path: '/:type/status', params: byType, summary: 'The connection’s state, checked with the provider when a token is stored' },
      run: (ctx, { connector }) => connectorStatus(ctx.db, ctx.env, ctx.actor, connector),
    }),
    defineCapability({
      name: 'list-github-repos',
      title: 'List GitHub repositories',
      description:
        'Lists the GitHub repositories the workspace’s token can see (every page, up to 1,000; truncated says when there are more). Needs connector:github:read.',
      access: CONNECTOR_ACCESS,
      input: z.object({}),
      output: ProviderAnswer,
      annotations: OPEN_READ,
      run: (ctx) => listGithubRepos(ctx.db, ctx.env, ctx.actor, ctx.grantToken),
    }),
    defineCapability({
      name: 'list-branches',
      title: 'List branches',
      description: 'Lists the branches of a repository of a source connector (every page, up to 1,000). Needs connector:<app>:read.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector: sourceConnector, repo }),
      output: ProviderAnswer,
      annotations: OPEN_READ,
      run: (ctx, args) => listBranches(ctx.db, ctx.env, ctx.actor, args, ctx.grantToken),
    }),
    defineCapability({
      name: 'list-sources',
      title: 'List source files',
      description:
        'Lists the files and folders (recursively) of a repository at a branch, tag or commit, optionally under a folder: path, type (file or dir) and size. Needs connector:<app>:read.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector: sourceConnector, repo, ref, path: RepoPath.optional().describe('Only what is under this folder, e.g. src') }),
      output: providerAnswer<Awaited<ReturnType<typeof listSources>>>(),
      annotations: OPEN_READ,
      agentTool: {
        offeredTo: 'repository',
        name: 'list_repository_files',
        description: ({ repo }) =>
          `List the files of the GitHub repository ${repo} (the default branch unless ref names a branch, tag or commit), optionally under a folder.`,
        displayName: 'List repository files',
        label: (args, { repo }) => `${repo}/${String(args.path ?? '')}`.slice(0, 200),
        args: RepositoryFolder,
        invalid: { path: PATH_OR_REF, ref: PATH_OR_REF },
        input: (args, { repo }) => ({ connector: 'github', repo, ...args }),
        answer: fileList,
      },
      run: (ctx, args) => listSources(ctx.db, ctx.env, ctx.actor, args, ctx.grantToken),
    }),
    defineCapability({
      name: 'get-source-content',
      title: 'Get a source file',
      description:
        'Reads one file of a repository at a branch, tag or commit: UTF-8 text as it is (encoding utf-8), anything else as base64 (encoding base64). Files over 1 MB are refused. Needs connector:<app>:read.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector: sourceConnector, repo, path: RepoPath.min(1).describe('The file, e.g. src/index.ts'), ref }),
      output: providerAnswer<Awaited<ReturnType<typeof getSourceContent>>>(),
      annotations: OPEN_READ,
      agentTool: {
        offeredTo: 'repository',
        name: 'read_repository_file',
        description: ({ repo }) => `Read one file of the GitHub repository ${repo} (the default branch unless ref names a branch, tag or commit).`,
        displayName: 'Read repository file',
        label: (args, { repo }) => `${repo}/${String(args.path ?? '')}`.slice(0, 200),
        args: RepositoryFile,
        invalid: { path: PATH_OR_REF, ref: PATH_OR_REF },
        input: (args, { repo }) => ({ connector: 'github', repo, ...args }),
        answer: fileText,
      },
      run: (ctx, args) => getSourceContent(ctx.db, ctx.env, ctx.actor, args, ctx.grantToken),
    }),
    defineCapability({
      name: 'search-connector-actions',
      title: 'Search connector actions',
      description:
        'Searches every connector’s actions by words in their names and descriptions (all words must match; no query lists them all), with each action’s JSON Schema input, whether it writes, and the scope it needs.',
      access: CONNECTOR_ACCESS,
      input: z.object({
        query: z.string().max(200).optional().describe('Words to look for, e.g. "pull request"'),
        connector: connector.optional().describe('Only this connector’s actions'),
      }),
      output: ProviderAnswer,
      annotations: READ_ONLY,
      run: async (_ctx, { query, connector }) => searchConnectorActions(query, connector),
    }),
    defineCapability({
      name: 'run-connector-action',
      title: 'Run a connector action',
      description:
        'Runs one connector action (see search-connector-actions) with the workspace’s connection, e.g. github create_issue, comment_on_issue or open_pull_request. The input is checked against the action’s JSON Schema. Needs connector:<app>:exec.',
      access: CONNECTOR_ACCESS,
      input: z.object({
        connector,
        action: z.string().min(1).max(100).describe('The action name, e.g. create_issue'),
        input: z.record(z.string(), z.unknown()).default({}).describe('The action’s input, matching its JSON Schema'),
      }),
      output: ProviderAnswer,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      run: (ctx, args) => runConnectorAction(ctx.db, ctx.env, ctx.actor, args, ctx.grantToken),
    }),
    defineCapability({
      name: 'list-connector-triggers',
      title: 'List connector triggers',
      description:
        'Lists the trigger types connectors declare (GitHub: push, pull_request). delivery workflow_trigger: the provider’s webhook delivers them to a workflow trigger (source github), which starts a run of a workflow that declares them.',
      access: CONNECTOR_ACCESS,
      input: z.object({ connector: connector.optional().describe('Only this connector’s triggers') }),
      output: ProviderAnswer,
      annotations: READ_ONLY,
      run: async (_ctx, { connector }) => listConnectorTriggers(connector),
    }),
  ],
};
