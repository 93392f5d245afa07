import { z } from 'zod';
import { getInstalledSkill, InstalledSkill, InstallRecord, installSkill, listSkills, SkillSlug, uninstallSkill } from '../../services/skills';
import { READ_ONLY } from '../../capabilities/capability';
import { defineTool } from '../tool';

const slug = SkillSlug.describe('The skill’s slug, e.g. meeting-summarizer');

export const skillTools = [
  defineTool({
    name: 'list-installed-skills',
    title: 'List installed skills',
    description: 'Lists the skills installed in this workspace (name, slug, description, category, prompt, source, version), alphabetical by slug.',
    route: 'GET /api/v1/skills',
    input: {},
    output: z.object({ skills: z.array(InstalledSkill) }),
    annotations: READ_ONLY,
    run: async (ctx) => ({ skills: await listSkills(ctx.db, ctx.actor, { offset: 0 }) }),
  }),
  defineTool({
    name: 'get-skill-details',
    title: 'Get skill details',
    description:
      'Shows one installed skill: its prompt, active version number, content checksum, bundle type and file count. Fails with NOT_FOUND if it is not installed.',
    route: 'GET /api/v1/skills',
    input: { slug },
    output: InstallRecord,
    annotations: READ_ONLY,
    run: (ctx, { slug }) => getInstalledSkill(ctx.db, ctx.actor, slug),
  }),
  defineTool({
    name: 'install-skill',
    title: 'Install a skill',
    description:
      'Installs a skill from the marketplace catalog into this workspace (or reinstalls it, adding a version only if its content changed). Fails with EXECUTION_RUNNING while a run is in progress.',
    route: 'POST /api/v1/skills/:slug/install',
    input: { slug: slug.describe('The marketplace slug of the skill to install') },
    output: InstallRecord,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    run: async (ctx, { slug }) => (await installSkill(ctx.db, ctx.env.BUCKET, ctx.actor, slug, {})).record,
  }),
  defineTool({
    name: 'uninstall-skill',
    title: 'Uninstall a skill',
    description:
      'Removes an installed skill, its versions and its secret bindings from this workspace. Fails with EXECUTION_RUNNING while a run is in progress.',
    route: 'POST /api/v1/skills/:slug/uninstall',
    input: { slug },
    output: z.object({ success: z.literal(true) }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    run: (ctx, { slug }) => uninstallSkill(ctx.db, ctx.actor, slug),
  }),
];
