import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { CursorQuery } from '../lib/pagination';
import { principalOf } from '../middleware/authenticate';
import { idempotent } from '../middleware/idempotency';
import { validate } from '../middleware/validate';
import { createInvitation, CreateInvitationBody, CreatedInvitation, InvitationRecord, listInvitations } from '../services/invitations';
import {
  createWorkspace,
  CreateWorkspaceBody,
  getCurrentWorkspace,
  listMembers,
  listWorkspaces,
  MemberRecord,
  setCurrentWorkspace,
  SetCurrentWorkspaceBody,
  WorkspaceRecord,
} from '../services/workspaces';
import { cursorEnvelope, documented } from './openapi';

const WorkspaceParam = z.object({ id: z.string().min(1).max(100) });

export const workspacesRoutes = new Hono<AppEnv>()
  .get('/', documented('Workspaces', "The caller's workspaces", 200, cursorEnvelope(WorkspaceRecord)), validate('query', CursorQuery), async (c) =>
    c.json(await listWorkspaces(c.var.db, principalOf(c), c.req.valid('query'))),
  )
  .post(
    '/',
    documented('Workspaces', 'Create a workspace; the caller becomes its owner', 201, WorkspaceRecord),
    idempotent,
    validate('json', CreateWorkspaceBody),
    async (c) => c.json(await createWorkspace(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('json')), 201),
  )
  .get('/current', documented('Workspaces', 'The workspace this credential acts in', 200, WorkspaceRecord), async (c) =>
    c.json(await getCurrentWorkspace(c.var.db, principalOf(c))),
  )
  .put(
    '/current',
    documented('Workspaces', 'Rebind the API key (or set the session default) to another workspace', 200, WorkspaceRecord),
    validate('json', SetCurrentWorkspaceBody),
    async (c) => c.json(await setCurrentWorkspace(c.var.db, c.env.CREDENTIAL_GATE, principalOf(c), c.req.valid('json'))),
  )
  .get(
    '/:id/members',
    documented('Workspaces', 'Members of the current workspace', 200, cursorEnvelope(MemberRecord)),
    validate('param', WorkspaceParam),
    validate('query', CursorQuery),
    async (c) => c.json(await listMembers(c.var.db, principalOf(c), c.req.valid('param').id, c.req.valid('query'))),
  )
  .get(
    '/:id/invitations',
    documented('Workspaces', 'Invitations of the current workspace', 200, cursorEnvelope(InvitationRecord)),
    validate('param', WorkspaceParam),
    validate('query', CursorQuery),
    async (c) => c.json(await listInvitations(c.var.db, principalOf(c), c.req.valid('param').id, c.req.valid('query'))),
  )
  .post(
    '/:id/invitations',
    documented('Workspaces', 'Invite someone by email (owners and admins); the token is shown once', 201, CreatedInvitation),
    validate('param', WorkspaceParam),
    validate('json', CreateInvitationBody),
    async (c) => c.json(await createInvitation(c.var.db, principalOf(c), c.req.valid('param').id, c.req.valid('json')), 201),
  );
