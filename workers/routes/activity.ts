import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { ActivityEntry, ActivityQuery, listActivity } from '../services/audit';
import { cursorEnvelope, documented } from './openapi';

export const activityRoutes = new Hono<AppEnv>().get(
  '/',
  documented('Activity', 'The workspace change log, newest first', 200, cursorEnvelope(ActivityEntry)),
  validate('query', ActivityQuery),
  async (c) => c.json(await listActivity(c.var.db, principalOf(c), c.req.valid('query'))),
);
