import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../auth/principal';
import { validate } from '../middleware/validate';
import {
  ActivationPoll,
  ActivationRecord,
  confirmActivation,
  denyActivation,
  lookupActivation,
  PollActivationBody,
  pollActivation,
  StartActivationBody,
  StartedActivation,
  startActivation,
  UserCodeBody,
} from '../services/device-activation';
import { documented } from './openapi';

/** Spec 5.2: the device flow (RFC 8628) that hands an agent a workspace-bound key. */
export const activateRoutes = new Hono<AppEnv>()
  .post(
    '/',
    documented('Device activation', 'Start: a device code for the agent, a user code for the person', 200, StartedActivation),
    validate('json', StartActivationBody),
    async (c) => c.json(await startActivation(c.var.db, c.req.valid('json'), new URL(c.req.url).origin)),
  )
  .post(
    '/poll',
    documented('Device activation', 'Poll with the device code; `approved` carries the key, once', 200, ActivationPoll),
    validate('json', PollActivationBody),
    async (c) => c.json(await pollActivation(c.var.db, c.req.valid('json'), c.var.origin)),
  )
  .get(
    '/lookup',
    documented('Device activation', 'What a user code would approve (the app)', 200, ActivationRecord),
    validate('query', UserCodeBody),
    async (c) => c.json(await lookupActivation(c.var.db, principalOf(c), c.req.valid('query').user_code)),
  )
  .post(
    '/confirm',
    documented('Device activation', 'Approve: the key will belong to you, in your current workspace (the app)', 200, ActivationRecord),
    validate('json', UserCodeBody),
    async (c) => c.json(await confirmActivation(c.var.db, principalOf(c), c.req.valid('json').user_code)),
  )
  .post('/deny', documented('Device activation', 'Deny a user code (the app)', 200, ActivationRecord), validate('json', UserCodeBody), async (c) =>
    c.json(await denyActivation(c.var.db, principalOf(c), c.req.valid('json').user_code)),
  );
