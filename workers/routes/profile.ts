import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { getProfile, Profile, ProfilePatch, updateProfile } from '../services/accounts';
import { documented } from './openapi';

export const profileRoutes = new Hono<AppEnv>()
  .get('/', documented('Profile', 'The caller, their workspace and scopes', 200, Profile), async (c) => c.json(await getProfile(c.var.db, principalOf(c))))
  .patch('/', documented('Profile', 'Rename the caller', 200, Profile), validate('json', ProfilePatch), async (c) =>
    c.json(await updateProfile(c.var.db, principalOf(c), c.req.valid('json'))),
  );
