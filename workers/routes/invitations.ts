import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { principalOf } from '../middleware/authenticate';
import { validate } from '../middleware/validate';
import { acceptInvitation, AcceptInvitationBody } from '../services/invitations';
import { WorkspaceRecord } from '../services/workspaces';
import { documented } from './openapi';

export const invitationsRoutes = new Hono<AppEnv>().post(
  '/accept',
  documented('Workspaces', 'Accept an invitation addressed to the signed-in email', 200, WorkspaceRecord),
  validate('json', AcceptInvitationBody),
  async (c) => c.json(await acceptInvitation(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('json'))),
);
