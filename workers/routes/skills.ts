import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { idempotent } from '../middleware/idempotency';
import { legacyFlatErrors } from '../middleware/legacy-errors';
import { optionalJsonBody, validate } from '../middleware/validate';
import { runSkill, RunSkillBody, StartedRun } from '../services/executions';
import {
  AuthorSkillBody,
  authorSkill,
  InstallBody,
  InstalledSkill,
  InstallRecord,
  installSkill,
  listSkills,
  ListSkillsQuery,
  listVersions,
  RestoreResult,
  restoreVersion,
  SkillSlug,
  SkillVersion,
  uninstallSkill,
} from '../services/skills';
import { documented } from './openapi';

const SlugParam = z.object({ slug: SkillSlug });
const VersionParam = SlugParam.extend({ versionNumber: z.string().max(20) });

const SkillList = z.union([
  z.array(InstalledSkill),
  z.object({ items: z.array(InstalledSkill), total: z.number(), limit: z.number(), offset: z.number(), hasMore: z.boolean() }),
]);

/** Installed and authored skills of the workspace, with their versions (spec 4.2). */
export const skillsRoutes = new Hono<AppEnv>()
  .get('/', documented('Skills', 'Installed skills: a bare array, or a page with `limit`', 200, SkillList), validate('query', ListSkillsQuery), async (c) =>
    c.json(await listSkills(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .put(
    '/:slug',
    documented('Skills', 'Create or update a skill you author; every write adds a version', 200, InstallRecord),
    validate('param', SlugParam),
    validate('json', AuthorSkillBody),
    async (c) => c.json(await authorSkill(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').slug, c.req.valid('json'))),
  )
  .post(
    '/:slug/run',
    documented('Skills', 'Run the skill now: creates the execution and starts it (errors in the flat legacy shape)', 200, StartedRun),
    // Inside idempotent, so a stored and replayed failure has the same flat shape.
    idempotent,
    legacyFlatErrors,
    validate('param', SlugParam),
    validate('json', RunSkillBody),
    async (c) => c.json(await runSkill(c.var.db, c.env, principalOf(c), c.req.valid('param').slug, c.req.valid('json'))),
  )
  .post(
    '/:slug/install',
    documented('Skills', 'Install from the marketplace, an artifact bundle or another registry', 200, InstallRecord),
    validate('param', SlugParam),
    optionalJsonBody,
    validate('json', InstallBody),
    async (c) => {
      const { record } = await installSkill(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('param').slug, c.req.valid('json'));
      return c.json(record);
    },
  )
  .post(
    '/:slug/uninstall',
    documented('Skills', 'Remove the skill and its versions', 200, z.object({ success: z.literal(true) })),
    validate('param', SlugParam),
    async (c) => c.json(await uninstallSkill(c.var.db, principalOf(c), c.req.valid('param').slug)),
  )
  .get(
    '/:slug/versions',
    documented('Skills', 'Every version, newest first; one is active', 200, z.array(SkillVersion)),
    validate('param', SlugParam),
    async (c) => c.json(await listVersions(c.var.db, principalOf(c), c.req.valid('param').slug)),
  )
  .post(
    '/:slug/versions/:versionNumber/restore',
    documented('Skills', 'Restore an old version as a new one (non-destructive)', 200, RestoreResult),
    validate('param', VersionParam),
    async (c) => {
      const { slug, versionNumber } = c.req.valid('param');
      return c.json(await restoreVersion(c.var.db, principalOf(c), slug, versionNumber));
    },
  );
