import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import { InstallFromSourceBody, installFromSource } from '../services/archive-install';
import { InstallRecord } from '../services/skills';
import { documented } from './openapi';

/** Spec 4.6: install a definition from object storage or an archive URL. */
export const installRoutes = new Hono<AppEnv>().post(
  '/',
  documented('Skills', 'Install a skill bundle from a zip or tar(.gz) archive in this workspace’s R2 prefix or at an https URL', 200, InstallRecord),
  validate('json', InstallFromSourceBody),
  async (c) => c.json(await installFromSource(c.var.db, c.env.BUCKET, principalOf(c), c.req.valid('json'))),
);
