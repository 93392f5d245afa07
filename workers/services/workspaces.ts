import { and, eq, or } from 'drizzle-orm';
import { z } from 'zod';
import { apiKeys, members, ROLES, sessions, users, workspaces, type MemberRow, type Role, type UserRow, type WorkspaceRow } from '../../schema';
import type { Principal } from '../auth/principal';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { Env, GlobalDb } from '../env';
import { AppError, forbidden, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { isUniqueViolation } from '../lib/db-errors';
import { formatId, parseUuidCursor, uuidv7 } from '../lib/ids';
import { type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { SLUG_PATTERN } from '../lib/slug';
import { recordChange } from './audit';
import { placement } from './directory';

export const WorkspaceName = z.string().trim().min(1).max(100);
export const WorkspaceSlug = z.string().regex(SLUG_PATTERN, 'lower-case letters, digits and single hyphens, 2..48 characters');

export const CreateWorkspaceBody = z.object({ name: WorkspaceName, slug: WorkspaceSlug });
export type CreateWorkspaceBody = z.infer<typeof CreateWorkspaceBody>;

/** `workspace` is a workspace id or slug. */
export const SetCurrentWorkspaceBody = z.object({ workspace: z.string().min(1).max(100) });
export type SetCurrentWorkspaceBody = z.infer<typeof SetCurrentWorkspaceBody>;

export const WorkspaceRecord = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  role: z.enum(ROLES),
  personal: z.boolean(),
  createdAt: z.string(),
});
export type WorkspaceRecord = z.infer<typeof WorkspaceRecord>;

export const MemberRecord = z.object({
  userId: z.string(),
  email: z.string(),
  name: z.string(),
  role: z.enum(ROLES),
  joinedAt: z.string(),
});
export type MemberRecord = z.infer<typeof MemberRecord>;

export const presentMember = ({ member, user }: { member: MemberRow; user: UserRow }): MemberRecord => ({
  userId: user.id,
  email: user.email,
  name: user.name,
  role: member.role,
  joinedAt: toIso(member.createdAt),
});

/** `personal` is true only for the person whose sign-up made the workspace. */
export const presentWorkspace = (row: WorkspaceRow, role: Role, viewerId: string): WorkspaceRecord => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  role,
  personal: row.personal && row.createdBy === viewerId,
  createdAt: toIso(row.createdAt),
});

const byIdOrSlug = (value: string) => or(eq(workspaces.id, value), eq(workspaces.slug, value));

/** The caller's membership of the workspace named by id or slug, or null. */
async function findMembership(db: GlobalDb, userId: string, workspace: string) {
  const [row] = await db
    .select({ workspace: workspaces, role: members.role })
    .from(workspaces)
    .innerJoin(members, and(eq(members.workspaceId, workspaces.id), eq(members.userId, userId)))
    .where(byIdOrSlug(workspace))
    .limit(1);
  return row ?? null;
}

/**
 * Routes with a workspace in the path (members, invitations) act only on the workspace the
 * credential is in; any other id answers 404, as for every other resource.
 */
export async function requireCurrentWorkspace(db: GlobalDb, principal: Principal, workspace: string): Promise<WorkspaceRow> {
  const found = await findMembership(db, principal.userId, workspace);
  if (!found || found.workspace.id !== principal.workspaceId) throw notFound('Workspace');
  return found.workspace;
}

/** The caller's current workspace for what only its owner may do: 404 for another workspace, else 403 `refusal` to a non-owner. */
export async function requireOwnedWorkspace(db: GlobalDb, principal: Principal, workspace: string, refusal: string): Promise<WorkspaceRow> {
  const ws = await requireCurrentWorkspace(db, principal, workspace);
  if (principal.role !== 'owner') throw forbidden(refusal);
  return ws;
}

export async function listWorkspaces(db: GlobalDb, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    {
      column: workspaces.id,
      parseCursor: parseUuidCursor,
      fetch: (where, orderBy, limit) =>
        db
          .select({ workspace: workspaces, role: members.role })
          .from(workspaces)
          .innerJoin(members, eq(members.workspaceId, workspaces.id))
          .where(where)
          .orderBy(orderBy)
          .limit(limit),
      publicId: (row) => row.workspace.id,
    },
    eq(members.userId, principal.userId),
  );
  return mapPage(page, (row) => presentWorkspace(row.workspace, row.role, principal.userId));
}

export async function createWorkspace(db: GlobalDb, env: Env, principal: Principal, input: CreateWorkspaceBody): Promise<WorkspaceRecord> {
  const row: WorkspaceRow = {
    id: uuidv7(),
    name: input.name,
    slug: input.slug,
    personal: false,
    createdBy: principal.userId,
    createdAt: now(),
  };
  const place = await placement(db, env, row.id);
  try {
    await db.batch([
      db.insert(workspaces).values(row),
      ...place.statements,
      db.insert(members).values({ workspaceId: row.id, userId: principal.userId, role: 'owner', createdAt: row.createdAt }),
      ...recordChange(
        db,
        { ...principal, workspaceId: row.id },
        {
          action: 'workspace.created',
          resourceType: 'workspace',
          resourceId: row.id,
          metadata: { name: row.name, slug: row.slug },
          activity: `Workspace "${row.name}" was created`,
        },
      ),
    ]);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('ALREADY_EXISTS', 409, `The slug "${input.slug}" is taken`, { field: 'slug' });
    throw error;
  }
  await place.vouch();
  // A session may have named the new workspace before it existed.
  await credentialsChanged(env.CREDENTIAL_GATE, principal.userId);
  return presentWorkspace(row, 'owner', principal.userId);
}

export async function getCurrentWorkspace(db: GlobalDb, principal: Principal): Promise<WorkspaceRecord> {
  const [row] = await db.select().from(workspaces).where(eq(workspaces.id, principal.workspaceId)).limit(1);
  if (!row) throw notFound('Workspace');
  return presentWorkspace(row, principal.role, principal.userId);
}

/**
 * An API key is rebound to the target workspace (spec 4.6); a session remembers the choice as
 * its default. Either way the caller must be a member of the target.
 */
export async function setCurrentWorkspace(
  db: GlobalDb,
  gates: CredentialGates,
  principal: Principal,
  input: SetCurrentWorkspaceBody,
): Promise<WorkspaceRecord> {
  const target = await findMembership(db, principal.userId, input.workspace);
  if (!target) throw notFound('Workspace');
  const { credential } = principal;
  // An OAuth token acts in the workspace the user chose at consent (spec 5.3), nowhere else.
  if (credential.type === 'oauth') throw forbidden('An OAuth access token is bound to the workspace chosen when it was granted');
  const change =
    credential.type === 'api_key'
      ? db.update(apiKeys).set({ workspaceId: target.workspace.id }).where(eq(apiKeys.id, credential.apiKeyId))
      : db.update(sessions).set({ workspaceId: target.workspace.id }).where(eq(sessions.id, credential.sessionId));
  await db.batch([
    change,
    ...recordChange(
      db,
      { ...principal, workspaceId: target.workspace.id },
      {
        action: credential.type === 'api_key' ? 'api_key.rebound' : 'session.workspace_selected',
        resourceType: credential.type === 'api_key' ? 'api_key' : 'user',
        resourceId: credential.type === 'api_key' ? formatId('key', credential.apiKeyId) : principal.userId,
        metadata: { fromWorkspaceId: principal.workspaceId },
      },
    ),
  ]);
  await credentialsChanged(gates, principal.userId);
  return presentWorkspace(target.workspace, target.role, principal.userId);
}

export async function listMembers(db: GlobalDb, principal: Principal, workspace: string, query: CursorQuery) {
  const ws = await requireCurrentWorkspace(db, principal, workspace);
  const page = await cursorPage(
    query,
    {
      column: members.userId,
      parseCursor: parseUuidCursor,
      fetch: (where, orderBy, limit) =>
        db.select({ member: members, user: users }).from(members).innerJoin(users, eq(users.id, members.userId)).where(where).orderBy(orderBy).limit(limit),
      publicId: (row) => row.user.id,
    },
    eq(members.workspaceId, ws.id),
  );
  return mapPage(page, presentMember);
}
