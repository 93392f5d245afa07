import { and, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { invitations, members, users, workspaces, type InvitationRow } from '../../schema';
import { credentialHash } from '../auth/credentials';
import type { Principal } from '../auth/principal';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { GlobalDb } from '../env';
import { AppError, conflict, forbidden, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { randomToken } from '../lib/crypto';
import { isUniqueViolation } from '../lib/db-errors';
import { byIntegerId, type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { Email } from './accounts';
import { recordChange } from './audit';
import { presentWorkspace, requireCurrentWorkspace, type WorkspaceRecord } from './workspaces';

/** Invitations stay open for 7 days. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

/** Ownership is not handed out by invitation. */
export const CreateInvitationBody = z.object({ email: Email, role: z.enum(['admin', 'member']) });
export type CreateInvitationBody = z.infer<typeof CreateInvitationBody>;

export const AcceptInvitationBody = z.object({ token: z.string().min(1).max(200) });
export type AcceptInvitationBody = z.infer<typeof AcceptInvitationBody>;

export const InvitationRecord = z.object({
  id: z.number().int(),
  workspaceId: z.string(),
  email: z.string(),
  role: z.enum(['owner', 'admin', 'member']),
  status: z.enum(['pending', 'accepted', 'revoked', 'expired']),
  expiresAt: z.string(),
  createdAt: z.string(),
});
export type InvitationRecord = z.infer<typeof InvitationRecord>;

/** The create response is the only place the acceptance token ever appears. */
export const CreatedInvitation = InvitationRecord.extend({ token: z.string() });

const presentInvitation = (row: InvitationRow): InvitationRecord => ({
  id: row.id,
  workspaceId: row.workspaceId,
  email: row.email,
  role: row.role,
  status: row.status === 'pending' && row.expiresAt <= now() ? 'expired' : row.status,
  expiresAt: toIso(row.expiresAt),
  createdAt: toIso(row.createdAt),
});

export async function createInvitation(db: GlobalDb, principal: Principal, workspace: string, input: CreateInvitationBody) {
  const ws = await requireCurrentWorkspace(db, principal, workspace);
  if (principal.role === 'member') throw forbidden('Only owners and admins can invite people');
  const [existing] = await db
    .select({ userId: members.userId })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.workspaceId, ws.id), eq(users.email, input.email)))
    .limit(1);
  if (existing) throw new AppError('ALREADY_EXISTS', 409, `${input.email} is already a member`, { field: 'email' });

  const token = `inv_${randomToken(24)}`;
  const t = now();
  const values = {
    workspaceId: ws.id,
    email: input.email,
    role: input.role,
    tokenHash: await credentialHash(token),
    status: 'pending' as const,
    invitedBy: principal.userId,
    createdAt: t,
    expiresAt: t + INVITATION_TTL_MS,
  };
  const [[row]] = await db.batch([
    db.insert(invitations).values(values).returning(),
    ...recordChange(db, principal, {
      action: 'invitation.created',
      resourceType: 'invitation',
      resourceId: sql`(SELECT CAST(${invitations.id} AS TEXT) FROM ${invitations} WHERE ${invitations.tokenHash} = ${values.tokenHash})`,
      metadata: { email: input.email, role: input.role },
      activity: `${input.email} was invited as ${input.role}`,
    }),
  ]);
  return { ...presentInvitation(row!), token };
}

export async function listInvitations(db: GlobalDb, principal: Principal, workspace: string, query: CursorQuery) {
  const ws = await requireCurrentWorkspace(db, principal, workspace);
  const page = await cursorPage(
    query,
    byIntegerId(invitations.id, (where, orderBy, limit) => db.select().from(invitations).where(where).orderBy(orderBy).limit(limit)),
    eq(invitations.workspaceId, ws.id),
  );
  return mapPage(page, presentInvitation);
}

/**
 * Joins the invitation's workspace. Only the invited email can accept; anything else about
 * a token that is not yours answers 404, so tokens cannot be probed.
 */
export async function acceptInvitation(db: GlobalDb, gates: CredentialGates, principal: Principal, input: AcceptInvitationBody): Promise<WorkspaceRecord> {
  const [found] = await db
    .select({ invitation: invitations, workspace: workspaces, email: users.email })
    .from(invitations)
    .innerJoin(workspaces, eq(workspaces.id, invitations.workspaceId))
    .innerJoin(users, eq(users.id, principal.userId))
    .where(eq(invitations.tokenHash, await credentialHash(input.token)))
    .limit(1);
  if (!found || found.invitation.email !== found.email || found.invitation.status === 'revoked') {
    throw notFound('Invitation');
  }
  const { invitation, workspace } = found;
  if (invitation.status === 'accepted') throw conflict('This invitation has already been accepted');
  if (invitation.expiresAt <= now()) throw new AppError('EXPIRED', 410, 'This invitation has expired');
  const joiner = { ...principal, workspaceId: workspace.id };
  try {
    await db.batch([
      db.insert(members).values({ workspaceId: workspace.id, userId: principal.userId, role: invitation.role, createdAt: now() }),
      db
        .update(invitations)
        .set({ status: 'accepted', acceptedAt: now() })
        .where(and(eq(invitations.id, invitation.id), eq(invitations.status, 'pending'))),
      ...recordChange(db, joiner, {
        action: 'member.joined',
        resourceType: 'member',
        resourceId: principal.userId,
        metadata: { invitationId: invitation.id, role: invitation.role },
        activity: `${found.email} joined as ${invitation.role}`,
      }),
    ]);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('You are already a member of this workspace');
    throw error;
  }
  await credentialsChanged(gates, principal.userId);
  return presentWorkspace(workspace, invitation.role, principal.userId);
}
