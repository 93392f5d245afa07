import { ProtocolErrorCode, type McpServer, type Resource, type ResourceTemplateType as ResourceTemplate } from '@modelcontextprotocol/server';
import { AppError } from '../errors';
import { loadBundle } from '../lib/bundle-store';
import { authorize, authorizeWithGrants } from '../auth/actor';
import { artifactContent, downloadArtifact, listArtifacts } from '../services/artifacts';
import { readMemory } from '../services/memory';
import { getInstalledSkill, type InstalledSkill, listSkills } from '../services/skills';
import { getWorkflow, listWorkflows } from '../services/workflow-definitions';
import { CAPABILITIES } from '../capabilities';
import { downloadArtifactCapability } from '../capabilities/artifacts';
import type { Capability } from '../capabilities/capability';
import { readMemoryCapability } from '../capabilities/memory';
import { listInstalledSkillsCapability } from '../capabilities/skills';
import { getWorkflowCapability } from '../capabilities/workflows';
import { JsonRpcError } from './json-rpc-error';
import { RUN_VIEW_RESOURCE, RUN_VIEW_TOOLS, RUN_VIEW_URI, runViewContents } from './run-view';
import type { ToolContext } from './tool';

type Contents = { uri: string; mimeType: string; text: string } | { uri: string; mimeType: string; blob: string };

/**
 * The 2025 revisions' `-32002` "resource not found" error; the SDK sends it to 2026-07-28
 * clients as `-32602`, that revision's code.
 */
const RESOURCE_NOT_FOUND = -32002;
/** Prompts are the installed skills: reading them is listing skills. */
export const PROMPT_CAPABILITY: Capability = listInstalledSkillsCapability;
/** How many artifacts resources/list names (newest first); older ones are read through the template. */
const LISTED_ARTIFACTS = 50;

/**
 * One kind of resource: its URI template, the operation whose access guards it (as it guards
 * that operation's route and tool), how its URIs are listed and read.
 */
interface ResourceKind {
  template: ResourceTemplate;
  capability: Capability;
  /** The template's variables from a URI of this kind, or null. */
  match: (uri: URL) => Record<string, string> | null;
  list: (ctx: ToolContext) => Promise<Resource[]>;
  read: (ctx: ToolContext, uri: string, vars: Record<string, string>) => Promise<Contents[]>;
  /** Values for a template variable starting with `prefix` (completion/complete). */
  complete?: (ctx: ToolContext, variable: string, prefix: string) => Promise<string[]>;
}

const hostOf = (uri: URL, scheme: string) => (uri.protocol === `${scheme}:` && uri.hostname ? decodeURIComponent(uri.hostname) : null);
const startingWith = (values: string[], prefix: string) => values.filter((v) => v.startsWith(prefix)).slice(0, 100);

/** Without a limit the service answers the whole list as an array. */
const installedSkills = async (ctx: ToolContext) => (await listSkills(ctx.db, ctx.actor, { offset: 0 })) as InstalledSkill[];
const skillSlugs = async (ctx: ToolContext) => (await installedSkills(ctx)).map((s) => s.slug);
const workflowSlugs = async (ctx: ToolContext) => (await listWorkflows(ctx.db, ctx.actor)).map((w) => w.slug);

const KINDS: ResourceKind[] = [
  {
    template: {
      uriTemplate: 'memory://workspace',
      name: 'working-memory',
      title: 'Working memory',
      description: "The workspace's shared memory document (Markdown)",
      mimeType: 'text/markdown',
    },
    capability: readMemoryCapability,
    match: (uri) => (uri.href === 'memory://workspace' ? {} : null),
    list: async () => [{ uri: 'memory://workspace', name: 'working-memory', title: 'Working memory', mimeType: 'text/markdown' }],
    read: async (ctx, uri) => [{ uri, mimeType: 'text/markdown', text: (await readMemory(ctx.db, ctx.actor)).content }],
  },
  {
    template: { uriTemplate: 'artifact://{artifactId}', name: 'artifact', title: 'Artifact', description: 'A file a run produced, by id (art_<n>)' },
    capability: downloadArtifactCapability,
    match: (uri) => {
      const artifactId = hostOf(uri, 'artifact');
      return artifactId && uri.pathname.replace(/^\/$/, '') === '' ? { artifactId } : null;
    },
    list: async (ctx) => {
      const page = await listArtifacts(ctx.db, ctx.actor, { limit: LISTED_ARTIFACTS });
      return page.data.map((a) => ({ uri: `artifact://${a.id}`, name: a.name, title: a.name, mimeType: a.contentType, size: a.size }));
    },
    read: async (ctx, uri, { artifactId }) => {
      const { artifact, encoding, content } = await artifactContent(await downloadArtifact(ctx.db, ctx.env.BUCKET, ctx.actor, artifactId!));
      const mimeType = artifact.contentType;
      return [encoding === 'utf-8' ? { uri, mimeType, text: content } : { uri, mimeType, blob: content }];
    },
    complete: async (ctx, _variable, prefix) => {
      const page = await listArtifacts(ctx.db, ctx.actor, { limit: LISTED_ARTIFACTS });
      return startingWith(
        page.data.map((a) => a.id),
        prefix,
      );
    },
  },
  {
    template: {
      uriTemplate: 'skill://{slug}/{+path}',
      name: 'skill-file',
      title: 'Installed skill file',
      description: "A file of an installed skill's bundle, e.g. skill://notes/SKILL.md",
    },
    capability: listInstalledSkillsCapability,
    match: (uri) => {
      const slug = hostOf(uri, 'skill');
      const path = decodeURIComponent(uri.pathname.replace(/^\//, ''));
      return slug && path ? { slug, path } : null;
    },
    // Every bundle has a SKILL.md; its other files are read through the template.
    list: async (ctx) =>
      (await installedSkills(ctx)).map((s) => ({
        uri: `skill://${s.slug}/SKILL.md`,
        name: `${s.slug}/SKILL.md`,
        title: s.name,
        description: s.description,
        mimeType: 'text/markdown',
      })),
    read: async (ctx, uri, { slug, path }) => {
      const skill = await getInstalledSkill(ctx.db, ctx.actor, slug!);
      const file = (await loadBundle(ctx.env.BUCKET, skill.storagePath))?.find((f) => f.path === path);
      if (!file) throw new JsonRpcError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
      return [{ uri, mimeType: path!.endsWith('.md') ? 'text/markdown' : 'text/plain', text: new TextDecoder().decode(file.bytes) }];
    },
    complete: async (ctx, variable, prefix) => (variable === 'slug' ? startingWith(await skillSlugs(ctx), prefix) : []),
  },
  {
    template: {
      uriTemplate: 'workflow://{workflowId}',
      name: 'workflow',
      title: 'Workflow definition',
      description: "An installed workflow's definition, by slug",
      mimeType: 'application/json',
    },
    capability: getWorkflowCapability,
    match: (uri) => {
      const workflowId = hostOf(uri, 'workflow');
      return workflowId ? { workflowId } : null;
    },
    list: async (ctx) =>
      (await listWorkflows(ctx.db, ctx.actor)).map((w) => ({
        uri: `workflow://${w.slug}`,
        name: w.slug,
        title: w.name,
        description: w.description,
        mimeType: 'application/json',
      })),
    read: async (ctx, uri, { workflowId }) => [{ uri, mimeType: 'application/json', text: (await getWorkflow(ctx.db, ctx.actor, workflowId!)).definition }],
    complete: async (ctx, _variable, prefix) => startingWith(await workflowSlugs(ctx), prefix),
  },
];

/** The operations the resources read through: their scopes are among what an MCP client asks for. */
export const RESOURCE_CAPABILITIES: readonly Capability[] = KINDS.map((k) => k.capability);

/** Whether the credential may read a kind (its operation's access), without spending a one-time grant. */
function mayRead(ctx: ToolContext, capability: Capability): boolean {
  try {
    authorize(capability.access, ctx.actor);
    return true;
  } catch {
    return false;
  }
}

/** The operations of the tools that point to the run view. */
const RUN_VIEW_CAPABILITIES = CAPABILITIES.filter((c) => RUN_VIEW_TOOLS.includes(c.name));

/** The operation whose access a `resources/read` of `uri` needs (the /mcp route's step-up check uses it too). */
export function resourceCapability(uri: string): Capability | undefined {
  const parsed = URL.canParse(uri) ? new URL(uri) : null;
  return parsed ? KINDS.find((k) => k.match(parsed))?.capability : undefined;
}

/** A service failure as a JSON-RPC error: not found as the resources spec says, the rest with its envelope. */
async function asJsonRpc<T>(uri: string | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (error.status === 404) throw new JsonRpcError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
    throw new JsonRpcError(ProtocolErrorCode.InvalidRequest, error.message, error.toEnvelope());
  }
}

/**
 * Resources (artifacts, working memory, installed skills' files, workflow definitions), one
 * prompt per installed skill, and completion of skill slugs and workflow ids. Read through the
 * same services and scope checks as the tools. The run view (an MCP App, ./run-view.ts) is
 * listed to a credential that may call a tool pointing to it, and read by any: it is the same
 * document for everyone and carries no data.
 */
export function registerResourcesAndPrompts(server: McpServer, ctx: ToolContext): void {
  const low = server.server;

  low.setRequestHandler('resources/list', async () => ({
    resources: [
      ...(RUN_VIEW_CAPABILITIES.some((c) => mayRead(ctx, c)) ? [RUN_VIEW_RESOURCE] : []),
      ...(await Promise.all(KINDS.filter((k) => mayRead(ctx, k.capability)).map((k) => k.list(ctx)))).flat(),
    ],
  }));
  low.setRequestHandler('resources/templates/list', async () => ({
    resourceTemplates: KINDS.filter((k) => k.template.uriTemplate.includes('{')).map((k) => k.template),
  }));
  low.setRequestHandler('resources/read', async ({ params: { uri } }) => {
    if (uri === RUN_VIEW_URI) return { contents: runViewContents() };
    const parsed = URL.canParse(uri) ? new URL(uri) : null;
    const kind = parsed && KINDS.find((k) => k.match(parsed));
    if (!kind || !parsed) throw new JsonRpcError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
    return asJsonRpc(uri, async () => {
      await authorizeWithGrants(ctx.globalDb, kind.capability.access, ctx.actor, ctx.grantToken);
      return { contents: await kind.read(ctx, uri, kind.match(parsed)!) };
    });
  });

  low.setRequestHandler('prompts/list', async () => ({
    prompts: mayRead(ctx, PROMPT_CAPABILITY)
      ? (await installedSkills(ctx)).map((s) => ({
          name: s.slug,
          title: s.name,
          description: s.description,
          arguments: [{ name: 'input', description: 'What the skill should work on', required: true }],
        }))
      : [],
  }));
  low.setRequestHandler('prompts/get', async ({ params }) =>
    asJsonRpc(undefined, async () => {
      await authorizeWithGrants(ctx.globalDb, PROMPT_CAPABILITY.access, ctx.actor, ctx.grantToken);
      const skill = await getInstalledSkill(ctx.db, ctx.actor, params.name).catch((error: unknown) => {
        if (error instanceof AppError && error.status === 404) throw new JsonRpcError(ProtocolErrorCode.InvalidParams, `No installed skill "${params.name}"`);
        throw error;
      });
      const input = params.arguments?.input ?? '';
      return {
        description: skill.description,
        messages: [{ role: 'user' as const, content: { type: 'text' as const, text: input ? `${skill.prompt}\n\n---\n\n${input}` : skill.prompt } }],
      };
    }),
  );

  low.setRequestHandler('completion/complete', async ({ params: { ref, argument } }) => {
    let values: string[] = [];
    const kind = ref.type === 'ref/resource' ? KINDS.find((k) => k.template.uriTemplate === ref.uri) : undefined;
    if (kind?.complete && mayRead(ctx, kind.capability)) values = await kind.complete(ctx, argument.name, argument.value);
    return { completion: { values, total: values.length, hasMore: false } };
  });
}
