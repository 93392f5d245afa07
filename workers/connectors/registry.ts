import { z } from 'zod';
import type { Env } from '../env';
import { configuredUrl } from '../lib/outbound';
import { type GithubApi, GithubRepo, REPO_PATTERN } from './github';

/** A JSON Schema object (draft 2020-12 subset) describing an action's input. */
export type JsonSchema = Record<string, unknown>;

export interface ConnectorAction {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  /** Whether the action changes anything at the provider. */
  writes: boolean;
}

export interface ConnectorTrigger {
  name: string;
  description: string;
  /**
   * How events reach the service. `workflow_trigger`: the provider's webhook posts them to a
   * workflow trigger of this connector's source (docs/workflows.md, GitHub triggers), which starts a run.
   */
  delivery: 'workflow_trigger';
}

/** Whether this deployment can use a connector type, and if not, which setting is missing or wrong. */
export type Configuration = { configured: true } | { configured: false; setting: string; reason: string };

/** The connector a skill run was started with (spec 4.3): never a token, which is read from D1 when a tool runs. */
export type RunConnector = { type: 'github'; repo: string } | { type: 'remote' };

export interface ConnectorDefinition {
  /** The path segment and the `connector.type` of a run. */
  type: string;
  /** The `<app>` of the scopes `connector:<app>:read` and `connector:<app>:exec`. */
  app: string;
  name: string;
  description: string;
  /** How a workspace connects: a token the user provides (OAuth is offered only where a provider's client is configured by environment; none is yet). */
  connect: { method: 'token'; help: string };
  configuration(env: Env): Configuration;
  /** The read operations (sources), by their MCP tool names. */
  reads: { name: string; description: string }[];
  actions: ConnectorAction[];
  triggers: ConnectorTrigger[];
}

export const GITHUB_DEFAULT_API = 'https://api.github.com';

/**
 * GitHub's API base: unset means github.com; set, it must be https (or http on loopback for
 * development). Set to anything else (an empty value included), GitHub is not configured.
 */
export function githubBase(env: Env): URL | null {
  const raw = env.GITHUB_API_BASE_URL;
  if (raw === undefined) return new URL(GITHUB_DEFAULT_API);
  return configuredUrl(raw.trim());
}

const title = { type: 'string', minLength: 1, maxLength: 256 };
const repo = { type: 'string', pattern: REPO_PATTERN, description: 'owner/repo' };
const branch = { type: 'string', minLength: 1, maxLength: 255 };

export const github: ConnectorDefinition = {
  type: 'github',
  app: 'github',
  name: 'GitHub',
  description: 'Repositories, branches, source files, issues and pull requests on GitHub (or GitHub Enterprise), over the REST API with the workspace’s token.',
  connect: {
    method: 'token',
    help: 'A personal access token (classic: scope repo; fine-grained: Contents read, Issues and Pull requests read and write on the chosen repositories).',
  },
  configuration: (env) =>
    githubBase(env)
      ? { configured: true }
      : { configured: false, setting: 'GITHUB_API_BASE_URL', reason: 'GITHUB_API_BASE_URL is set but is not an https URL' },
  reads: [
    { name: 'list-github-repos', description: 'The repositories the token can see.' },
    { name: 'list-branches', description: 'The branches of a repository.' },
    { name: 'list-sources', description: 'The files and folders of a branch, tag or commit (recursive).' },
    { name: 'get-source-content', description: 'One file’s content at a branch, tag or commit.' },
  ],
  actions: [
    {
      name: 'create_issue',
      title: 'Create an issue',
      description: 'Opens a new issue in a GitHub repository, with an optional Markdown body and labels.',
      inputSchema: {
        type: 'object',
        properties: {
          repo,
          title,
          body: { type: 'string', maxLength: 65536 },
          labels: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 50 }, maxItems: 20 },
        },
        required: ['repo', 'title'],
        additionalProperties: false,
      },
      writes: true,
    },
    {
      name: 'comment_on_issue',
      title: 'Comment on an issue or pull request',
      description: 'Adds a Markdown comment to an issue or pull request of a GitHub repository.',
      inputSchema: {
        type: 'object',
        properties: { repo, issue_number: { type: 'integer', minimum: 1 }, body: { type: 'string', minLength: 1, maxLength: 65536 } },
        required: ['repo', 'issue_number', 'body'],
        additionalProperties: false,
      },
      writes: true,
    },
    {
      name: 'open_pull_request',
      title: 'Open a pull request',
      description: 'Opens a pull request in a GitHub repository from the head branch into the base branch, optionally as a draft.',
      inputSchema: {
        type: 'object',
        properties: { repo, title, head: branch, base: branch, body: { type: 'string', maxLength: 65536 }, draft: { type: 'boolean' } },
        required: ['repo', 'title', 'head', 'base'],
        additionalProperties: false,
      },
      writes: true,
    },
  ],
  triggers: [
    { name: 'push', description: 'Commits were pushed to a branch or a tag of a repository.', delivery: 'workflow_trigger' },
    { name: 'pull_request', description: 'A pull request was opened, edited, closed, reopened or synchronised.', delivery: 'workflow_trigger' },
  ],
};

/** Every connector type the service knows, by `type`. */
export const CONNECTORS: readonly ConnectorDefinition[] = [github];

/** The typed inputs of GitHub's actions, checked after the JSON Schema (same rules, for the types). */
export const GithubActionInput = {
  create_issue: z.object({ repo: GithubRepo, title: z.string(), body: z.string().optional(), labels: z.array(z.string()).optional() }),
  comment_on_issue: z.object({ repo: GithubRepo, issue_number: z.number().int(), body: z.string() }),
  open_pull_request: z.object({
    repo: GithubRepo,
    title: z.string(),
    head: z.string(),
    base: z.string(),
    body: z.string().optional(),
    draft: z.boolean().optional(),
  }),
};

/** Runs a GitHub action whose input already passed its JSON Schema. */
export async function runGithubAction(api: GithubApi, action: string, input: unknown): Promise<object> {
  switch (action) {
    case 'create_issue': {
      const { repo, ...rest } = GithubActionInput.create_issue.parse(input);
      return api.createIssue(repo, rest);
    }
    case 'comment_on_issue': {
      const { repo, issue_number, body } = GithubActionInput.comment_on_issue.parse(input);
      return api.comment(repo, issue_number, body);
    }
    case 'open_pull_request': {
      const { repo, ...rest } = GithubActionInput.open_pull_request.parse(input);
      return api.openPullRequest(repo, rest);
    }
    default:
      throw new Error(`GitHub has no action ${action}`);
  }
}
