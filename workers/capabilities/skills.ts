import { z } from 'zod';
import { followExecution } from './follow';
import { idempotent } from '../middleware/idempotency';
import { legacyFlatErrors } from '../middleware/legacy-errors';
import { optionalJsonBody } from '../middleware/validate';
import { InstallFromSourceBody, installFromSource } from '../services/archive-install';
import { runSkill, RunSkillBody, StartedRun } from '../services/executions';
import { getSkillDetails, SkillDetails } from '../services/skill-evals';
import { AuthoredSkill, promoteVersion, PromotedSkill } from '../services/skill-guard';
import { installSkill, restoreVersion, writeAuthoredSkill } from '../services/skill-writes';
import { StepError } from '../workflows/steps';
import { BindSecretBody, bindSecret, listBindings, SecretBinding, unbindSecret } from '../services/skill-secrets';
import {
  AuthorSkillBody,
  InstallBody,
  InstalledSkill,
  listSkills,
  ListSkillsInput,
  ListSkillsQuery,
  listVersions,
  RestoreResult,
  SkillSlug,
  SkillVersion,
  uninstallSkill,
} from '../services/skills';
import { defineCapability, READ_ONLY, type Area } from './capability';

const BySlug = z.object({ slug: SkillSlug.describe('The skill’s slug, e.g. meeting-summarizer') });
const Success = z.object({ success: z.literal(true) });
const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;
const LIBRARY_READ = { auth: 'credential', scope: 'library:read' } as const;
const LIBRARY_WRITE = { auth: 'credential', scope: 'library:write' } as const;

const SkillList = z.union([
  z.array(InstalledSkill),
  z.object({ items: z.array(InstalledSkill), total: z.number(), limit: z.number(), offset: z.number(), hasMore: z.boolean() }),
]);

const RunInput = z.object({ slug: SkillSlug.describe('The installed skill to run') }).extend({
  ...RunSkillBody.shape,
  input: RunSkillBody.shape.input.describe('What the skill should work on: the instructions or material for this run'),
  connector: RunSkillBody.shape.connector.describe(
    '{type:"github", fields:{repo:"owner/repo"}} gives the run read tools for that repository (needs connector:github:read and a connection); {type:"remote", fields:{}} means no source',
  ),
});

/** Listing installed skills: the MCP prompts and skill-file resources read through it too. */
export const listInstalledSkillsCapability = defineCapability({
  name: 'list-installed-skills',
  title: 'List installed skills',
  description: 'Lists the skills installed in this workspace (name, slug, description, category, prompt, source, version), alphabetical by slug.',
  access: LIBRARY_READ,
  input: ListSkillsInput,
  output: SkillList,
  annotations: READ_ONLY,
  http: { method: 'GET', path: '/', query: ListSkillsQuery, summary: 'Installed skills: a bare array, or a page with `limit`' },
  // The tool takes no page size, so its answer is always the whole list.
  mcp: {
    args: z.object({}),
    output: z.object({ skills: z.array(InstalledSkill) }),
    present: async (_ctx, skills) => ({ skills }),
  },
  run: (ctx, query) => listSkills(ctx.db, ctx.actor, query),
});

/** Running a skill: a workflow's execute-skill step does it too. */
export const executeSkillCapability = defineCapability({
  name: 'execute-skill',
  title: 'Run a skill',
  description:
    'Starts a run of an installed skill with the given input and answers at once with its executionId (status "started"); poll get-execution-status for progress and output. With a progressToken the answer waits for the run to end, sending progress (and, once logging/setLevel is info or lower, the run’s text) meanwhile. Costs credits (at least 50 Ds must be available, INSUFFICIENT_CREDITS otherwise); one run at a time per workspace (EXECUTION_RUNNING).',
  access: { auth: 'credential', scope: 'tool:execute' },
  input: RunInput,
  output: StartedRun,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  http: {
    method: 'POST',
    path: '/:slug/run',
    summary: 'Run the skill now: creates the execution and starts it (errors in the flat legacy shape)',
    // Inside idempotent, so a stored and replayed failure has the same flat shape.
    before: [idempotent, legacyFlatErrors],
  },
  mcp: {
    args: RunInput.omit({ attachments: true }).extend({
      interface: RunSkillBody.shape.interface.describe('A label for the client, recorded on the execution; defaults to the detected MCP client'),
    }),
    follow: (ctx, started, report) => followExecution(ctx, started.executionId, report),
  },
  workflowStep: {
    kind: 'execution',
    // Rule 10: `{slug, input}` from the entry before; a non-string input is JSON-stringified before it reaches the skill.
    start: async (ctx, input) => {
      const record = (input ?? {}) as Record<string, unknown>;
      if (typeof record.slug !== 'string' || record.input === undefined || record.input === null) {
        throw new StepError('execute-skill needs {slug, input} from the entry before it (a mapping that yields slug and input)');
      }
      const text = typeof record.input === 'string' ? record.input : JSON.stringify(record.input);
      const started = await runSkill(ctx.db, ctx.env, ctx.actor, record.slug, { input: text }, 'workflow');
      return { executionId: started.executionId };
    },
  },
  run: (ctx, { slug, ...body }) =>
    runSkill(ctx.db, ctx.env, ctx.actor, slug, { ...body, interface: body.interface ?? ctx.clientInterface }, ctx.source, ctx.grantToken),
});

/** Installed and authored skills of the workspace, with their versions, and runs of them. */
export const skillsArea: Area = {
  mount: '/api/v1/skills',
  tag: 'Skills',
  capabilities: [
    listInstalledSkillsCapability,
    defineCapability({
      name: 'get-skill-details',
      title: 'Get skill details',
      description:
        'Shows one installed skill: its prompt, active version number, content checksum, bundle type and file count, whether its active version carries eval cases, and the latest eval of each version (cases, pass rate with and without the skill, model, date; `local` marks a run on the built-in local model). Fails with NOT_FOUND if it is not installed.',
      access: LIBRARY_READ,
      input: BySlug,
      output: SkillDetails,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:slug', summary: 'One installed skill, with the latest eval of each version' },
      run: (ctx, { slug }) => getSkillDetails(ctx.db, ctx.globalDb, ctx.env.BUCKET, ctx.actor, slug),
    }),
    defineCapability({
      name: 'author-skill',
      title: 'Write a skill',
      description:
        'Creates or updates a skill you author; every write adds a version. With the workspace’s version guard on and a current version carrying eval cases, the new version is held back (202, `guard`) until its eval shows it scores at least as well.',
      access: LIBRARY_WRITE,
      input: BySlug.extend(AuthorSkillBody.shape),
      output: AuthoredSkill,
      annotations: WRITE,
      http: {
        method: 'PUT',
        path: '/:slug',
        summary: 'Create or update a skill you author; every write adds a version (202 with `guard` when the version guard holds it back)',
        respond: { schema: AuthoredSkill, send: (c, record) => c.json(record, record.guard ? 202 : 200) },
      },
      mcp: false,
      run: (ctx, { slug, ...body }) => writeAuthoredSkill(ctx.db, ctx.env, ctx.actor, slug, body, ctx.grantToken),
    }),
    executeSkillCapability,
    defineCapability({
      name: 'install-skill',
      title: 'Install a skill',
      description:
        'Installs a skill from the marketplace catalog into this workspace (or reinstalls it, adding a version only if its content changed). With the workspace’s version guard on and the installed version carrying eval cases, a new version is held back (`guard`) until its eval shows it scores at least as well. Fails with EXECUTION_RUNNING while a run is in progress.',
      access: LIBRARY_WRITE,
      input: BySlug.extend(InstallBody.shape),
      output: AuthoredSkill,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      http: {
        method: 'POST',
        path: '/:slug/install',
        summary: 'Install from the marketplace, an artifact bundle or another registry (202 with `guard` when the version guard holds it back)',
        before: [optionalJsonBody],
        respond: { schema: AuthoredSkill, send: (c, record) => c.json(record, record.guard ? 202 : 200) },
      },
      // The tool installs from the catalog only.
      mcp: { args: z.object({ slug: BySlug.shape.slug.describe('The marketplace slug of the skill to install') }) },
      run: (ctx, { slug, ...body }) => installSkill(ctx.db, ctx.env, ctx.actor, slug, body, ctx.grantToken),
    }),
    defineCapability({
      name: 'uninstall-skill',
      title: 'Uninstall a skill',
      description:
        'Removes an installed skill, its versions and its secret bindings from this workspace. Fails with EXECUTION_RUNNING while a run is in progress.',
      access: LIBRARY_WRITE,
      input: BySlug,
      output: Success,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      http: { method: 'POST', path: '/:slug/uninstall', summary: 'Remove the skill and its versions' },
      run: (ctx, { slug }) => uninstallSkill(ctx.db, ctx.globalDb, ctx.actor, slug),
    }),
    defineCapability({
      name: 'list-skill-versions',
      title: 'List skill versions',
      description: 'Every version of an installed skill, newest first; one is active.',
      access: LIBRARY_READ,
      input: BySlug,
      output: z.array(SkillVersion),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:slug/versions', summary: 'Every version, newest first; one is active' },
      mcp: false,
      run: (ctx, { slug }) => listVersions(ctx.db, ctx.globalDb, ctx.actor, slug),
    }),
    defineCapability({
      name: 'restore-skill-version',
      title: 'Restore a skill version',
      description:
        'Restores an old version of a skill as a new one (non-destructive). With the workspace’s version guard on, a version that did not pass its eval is held back (`guard`) like a write.',
      access: LIBRARY_WRITE,
      input: BySlug.extend({ versionNumber: z.string().max(20).describe('The version to restore') }),
      output: RestoreResult,
      annotations: WRITE,
      http: {
        method: 'POST',
        path: '/:slug/versions/:versionNumber/restore',
        summary: 'Restore an old version as a new one (non-destructive; 202 with `guard` when the version guard holds it back)',
        respond: { schema: RestoreResult, send: (c, result) => c.json(result, result.guard ? 202 : 200) },
      },
      mcp: false,
      run: (ctx, { slug, versionNumber }) => restoreVersion(ctx.db, ctx.env, ctx.actor, slug, versionNumber, ctx.grantToken),
    }),
    defineCapability({
      name: 'promote-skill-version',
      title: 'Promote a held-back skill version',
      description:
        'Makes a version the workspace’s version guard holds back (being evaluated, or refused) current anyway (owners only); audited with its eval’s numbers.',
      access: LIBRARY_WRITE,
      input: BySlug.extend({ versionNumber: z.string().max(20).describe('The version to make current') }),
      output: PromotedSkill,
      annotations: WRITE,
      http: { method: 'POST', path: '/:slug/versions/:versionNumber/promote', summary: 'Make a version the guard held back current (owners only)' },
      mcp: false,
      run: (ctx, { slug, versionNumber }) => promoteVersion(ctx.db, ctx.globalDb, ctx.actor, slug, versionNumber),
    }),
  ],
};

/** Secrets handed to a skill's runs as environment variables; the mount's `:slug` names the skill. */
export const skillSecretsArea: Area = {
  mount: '/api/v1/skills/:slug/secrets',
  tag: 'Skills',
  capabilities: [
    defineCapability({
      name: 'list-skill-secrets',
      title: 'List a skill’s secret bindings',
      description: 'The skill’s secret bindings, oldest first.',
      access: LIBRARY_READ,
      input: BySlug,
      output: z.array(SecretBinding),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/', summary: "The skill's secret bindings, oldest first" },
      mcp: false,
      run: (ctx, { slug }) => listBindings(ctx.db, ctx.globalDb, ctx.actor, slug),
    }),
    defineCapability({
      name: 'bind-skill-secret',
      title: 'Bind a secret to a skill',
      description: 'Binds a secret to an environment variable of the skill’s runs.',
      access: LIBRARY_WRITE,
      input: BySlug.extend(BindSecretBody.shape),
      output: SecretBinding,
      annotations: WRITE,
      http: { method: 'POST', path: '/', status: 201, summary: 'Bind a secret to an environment variable of the skill' },
      mcp: false,
      run: (ctx, { slug, ...body }) => bindSecret(ctx.db, ctx.globalDb, ctx.actor, slug, body),
    }),
    defineCapability({
      name: 'unbind-skill-secret',
      title: 'Remove a secret binding',
      description: 'Removes one of the skill’s secret bindings.',
      access: LIBRARY_WRITE,
      input: BySlug.extend({ id: z.string().min(1).max(20).describe('The binding id') }),
      output: Success,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      http: { method: 'DELETE', path: '/:id', summary: 'Remove a binding' },
      mcp: false,
      run: (ctx, { slug, id }) => unbindSecret(ctx.db, ctx.globalDb, ctx.actor, slug, id),
    }),
  ],
};

/** Installing a skill bundle from an archive, in this workspace's object storage or at a URL. */
export const installArea: Area = {
  mount: '/api/v1/install',
  tag: 'Skills',
  capabilities: [
    defineCapability({
      name: 'install-from-source',
      title: 'Install a skill from an archive',
      description:
        'Installs a skill bundle from a zip or tar(.gz) archive in this workspace’s R2 prefix or at an https URL; over an installed version the version guard holds back, it is held back (`guard`) like any install.',
      access: LIBRARY_WRITE,
      input: InstallFromSourceBody,
      output: AuthoredSkill,
      annotations: { ...WRITE, openWorldHint: true },
      http: {
        method: 'POST',
        path: '/',
        summary:
          'Install a skill bundle from a zip or tar(.gz) archive in this workspace’s R2 prefix or at an https URL (202 with `guard` when the version guard holds it back)',
        respond: { schema: AuthoredSkill, send: (c, record) => c.json(record, record.guard ? 202 : 200) },
      },
      mcp: false,
      run: (ctx, body) => installFromSource(ctx.db, ctx.env, ctx.actor, body, ctx.grantToken),
    }),
  ],
};
