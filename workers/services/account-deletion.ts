import type { BatchItem } from 'drizzle-orm/batch';
import { eq, inArray, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import {
  ACCOUNT_DELETION_STATUSES,
  accountDeletions,
  apiKeys,
  byokKeys,
  changeOutbox,
  DELETION_STATUSES,
  DELETION_STEPS,
  deviceActivations,
  invitations,
  mcpLogLevels,
  members,
  oauthCodes,
  oauthGrants,
  sessions,
  users,
  workspaceDeletionAudit,
  workspaceDeletions,
  workspaces,
  type AccountDeletionRow,
} from '../../schema';
import { credentialsChanged } from '../auth/credential-changes';
import { credentialHash } from '../auth/credentials';
import { verifyPassword } from '../auth/passwords';
import type { Principal } from '../auth/principal';
import { throttledSignIn } from '../auth/sign-in-throttle';
import type { Env, GlobalDb } from '../env';
import { AppError, conflict, forbidden, invalidInput, notFound, unauthorized } from '../errors';
import { now, toIso } from '../lib/clock';
import { randomToken } from '../lib/crypto';
import { uuidv7 } from '../lib/ids';
import { placeOf } from './directory';
import { deletionStatements, driveDeletion } from './workspace-deletion';

/**
 * Deleting an account (docs/auth.md, "Deleting an account"). The request does, in one batch,
 * everything that makes the account gone: every session, API key, OAuth grant (with its tokens)
 * and code, device activation and BYOK key of the account goes, its memberships and the
 * invitations it sent or received go, its personal fields are overwritten (so its email can
 * sign up again at once), and each workspace going with it starts its workspace deletion job;
 * then every affected credential gate forgets. What stays (the ledger, the records of shared
 * workspaces) is anonymised once those jobs completed (account-erasure.ts).
 */

/** A session signed in this recently deletes its account without typing the password again. */
export const FRESH_SESSION_MS = 10 * 60_000;

/** The email an account being deleted holds until its row goes: `.invalid` reaches no one, and its own email is free. */
const erasedEmail = (jobId: string) => `deleted+${jobId}@deleted.invalid`;

export const DeleteAccountBody = z.object({
  password: z.string().min(1).max(256).optional().describe('The account’s password; may be left out within 10 minutes of signing in (a fresh session)'),
});
export type DeleteAccountBody = z.infer<typeof DeleteAccountBody>;

export const AccountDeletion = z.object({
  id: z.string().describe('The job id'),
  status: z.enum(ACCOUNT_DELETION_STATUSES),
  statusUrl: z.string().nullable().describe('Where the job can be read without a credential (the account has none left); only in the answer to the deletion'),
  workspaces: z
    .array(
      z.object({
        workspaceId: z.string(),
        jobId: z.string(),
        status: z.enum(DELETION_STATUSES),
        step: z.enum(DELETION_STEPS),
      }),
    )
    .describe('The workspaces deleted with the account, each its own deletion job'),
  createdAt: z.string(),
  updatedAt: z.string(),
  completedAt: z.string().nullable(),
});
export type AccountDeletion = z.infer<typeof AccountDeletion>;

async function present(db: GlobalDb, row: AccountDeletionRow, statusUrl: string | null): Promise<AccountDeletion> {
  const jobs = row.workspaceIds.length
    ? await db
        .select({ workspaceId: workspaceDeletions.workspaceId, jobId: workspaceDeletions.id, status: workspaceDeletions.status, step: workspaceDeletions.step })
        .from(workspaceDeletions)
        .where(inArray(workspaceDeletions.workspaceId, row.workspaceIds))
    : [];
  return {
    id: row.id,
    status: row.status,
    statusUrl,
    workspaces: jobs,
    createdAt: toIso(row.createdAt),
    updatedAt: toIso(row.updatedAt),
    completedAt: row.completedAt === null ? null : toIso(row.completedAt),
  };
}

/** Keys, tokens and sessions are not enough to delete an account: the password, or a sign-in within FRESH_SESSION_MS. */
async function confirmPresence(db: GlobalDb, env: Env, principal: Principal, body: DeleteAccountBody, user: { email: string; passwordHash: string }) {
  if (principal.credential.type !== 'session') throw forbidden('Only a signed-in person can delete their account, not an API key or OAuth token');
  if (body.password === undefined) {
    const [session] = await db.select({ createdAt: sessions.createdAt }).from(sessions).where(eq(sessions.id, principal.credential.sessionId)).limit(1);
    if (session && now() - session.createdAt <= FRESH_SESSION_MS) return;
    throw invalidInput('password', 'required', 'Type your password to delete your account (or sign in again: within 10 minutes of signing in it is not asked)');
  }
  const password = body.password;
  // Counted with sign-in failures: a stolen session must not become a way to guess the password.
  await throttledSignIn(env, principal.origin.ip, user.email, async () => {
    if (!(await verifyPassword(password, user.passwordHash))) throw forbidden('Password is incorrect', { field: 'password' });
  });
}

/** The person's workspaces: those deleted with the account, those they leave, and those that stop the deletion. */
async function sortWorkspaces(db: GlobalDb, userId: string) {
  const mine = await db
    .select({
      workspace: workspaces,
      role: members.role,
      others: sql<number>`(SELECT count(*) FROM ${members} AS m WHERE m.workspace_id = ${workspaces.id} AND m.user_id <> ${userId})`,
      otherOwners: sql<number>`(SELECT count(*) FROM ${members} AS m WHERE m.workspace_id = ${workspaces.id} AND m.user_id <> ${userId} AND m.role = 'owner')`,
    })
    .from(members)
    .innerJoin(workspaces, eq(workspaces.id, members.workspaceId))
    .where(eq(members.userId, userId));
  const deleted = [];
  const kept = [];
  const blocking = [];
  for (const row of mine) {
    const ownPersonal = row.workspace.personal && row.workspace.createdBy === userId;
    if (row.role !== 'owner' || row.otherOwners > 0) kept.push(row.workspace);
    else if (ownPersonal || row.others === 0) deleted.push(row.workspace);
    else blocking.push(row.workspace);
  }
  return { deleted, kept, blocking };
}

/** The credential ids of the account, as the MCP log levels name them. */
async function credentialNames(db: GlobalDb, userId: string): Promise<string[]> {
  const [keys, grants, signedIn] = await Promise.all([
    db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.userId, userId)),
    db.select({ id: oauthGrants.id }).from(oauthGrants).where(eq(oauthGrants.userId, userId)),
    db.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, userId)),
  ]);
  return [...keys.map((k) => `api_key:${k.id}`), ...grants.map((g) => `oauth:${g.id}`), ...signedIn.map((s) => `session:${s.id}`)];
}

/**
 * `DELETE /api/v1/profile {password}`: a session only. Refused with 409 (`details.reason`
 * `sole_owner`, `details.workspaces`) while the person is the only owner of a workspace that
 * has other members, other than their personal one: those are deleted (or left by the others)
 * first, on purpose, each with its name typed back.
 */
export async function requestAccountDeletion(db: GlobalDb, env: Env, principal: Principal, body: DeleteAccountBody, baseUrl: string): Promise<AccountDeletion> {
  const [user] = await db.select().from(users).where(eq(users.id, principal.userId)).limit(1);
  if (!user) throw unauthorized();
  await confirmPresence(db, env, principal, body, user);
  const { deleted, kept, blocking } = await sortWorkspaces(db, user.id);
  if (blocking.length > 0) {
    throw conflict('You are the only owner of workspaces other people use: delete them first (or they leave), then your account', {
      reason: 'sole_owner',
      workspaces: blocking.map((w) => ({ id: w.id, name: w.name })),
    });
  }
  const places = await Promise.all(deleted.map(async (workspace) => ({ workspace, place: await placeOf(db, workspace.id) })));
  if (places.some(({ place }) => place?.movingTo !== null && place?.movingTo !== undefined)) {
    throw new AppError('CONFLICT', 409, 'One of your workspaces is being moved to another database; delete your account once the move is done', {
      retryAfterSeconds: 5,
    });
  }

  const token = `adel_${randomToken(24)}`;
  const at = now();
  const job = {
    id: uuidv7(),
    tokenHash: await credentialHash(token),
    anonymousId: `deleted_${uuidv7()}`,
    account: { userId: user.id, email: user.email, name: user.name },
    workspaceIds: deleted.map((w) => w.id),
    keptWorkspaceIds: kept.map((w) => w.id),
    status: 'running' as const,
    createdAt: at,
    updatedAt: at,
  };
  // The account's own record carries no ip or user agent: it outlives the account without personal data.
  const actor = { userId: job.anonymousId, apiKeyId: null, ip: null, userAgent: null, requestId: principal.origin.requestId };
  const credentials = await credentialNames(db, user.id);
  const keptIds = kept.map((w) => w.id);
  const statements: BatchItem<'sqlite'>[] = [
    db.insert(accountDeletions).values(job),
    db.insert(workspaceDeletionAudit).values({
      workspaceId: job.anonymousId,
      actorUserId: job.anonymousId,
      action: 'account.deletion_requested',
      resourceType: 'account',
      resourceId: job.anonymousId,
      requestId: principal.origin.requestId,
      metadata: { jobId: job.id, workspacesDeleted: deleted.length, workspacesLeft: kept.length },
      createdAt: at,
    }),
    ...places.flatMap(({ workspace, place }) =>
      place ? deletionStatements(db, { workspace, shard: place.shard, requestedBy: job.anonymousId, actor, accountDeletionId: job.id }) : [],
    ),
    // What the other members of a workspace the person leaves read in its activity.
    ...keptIds.map((workspaceId) =>
      db.insert(changeOutbox).values({
        workspaceId,
        actorUserId: job.anonymousId,
        action: 'member.account_deleted',
        resourceType: 'member',
        resourceId: job.anonymousId,
        requestId: principal.origin.requestId,
        metadata: {},
        createdAt: at,
        activity: 'A member deleted their account',
      }),
    ),
    db.delete(members).where(eq(members.userId, user.id)),
    db.delete(invitations).where(or(eq(invitations.invitedBy, user.id), eq(invitations.email, user.email))),
    db.delete(sessions).where(eq(sessions.userId, user.id)),
    // Agent consents and permission requests go with their key, OAuth tokens with their grant (foreign keys).
    db.delete(deviceActivations).where(eq(deviceActivations.userId, user.id)),
    db.delete(apiKeys).where(eq(apiKeys.userId, user.id)),
    db.delete(oauthGrants).where(eq(oauthGrants.userId, user.id)),
    db.delete(oauthCodes).where(eq(oauthCodes.userId, user.id)),
    db.delete(mcpLogLevels).where(credentials.length ? inArray(mcpLogLevels.credential, credentials) : sql`0`),
    db.delete(byokKeys).where(eq(byokKeys.userId, user.id)),
    db
      .update(users)
      .set({ email: erasedEmail(job.id), name: 'Deleted user', passwordHash: '', updatedAt: at })
      .where(eq(users.id, user.id)),
  ];
  await db.batch(statements as [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]]);
  const memberIds = (
    await db.select({ memberIds: workspaceDeletions.memberIds }).from(workspaceDeletions).where(eq(workspaceDeletions.accountDeletionId, job.id))
  ).flatMap((row) => row.memberIds);
  await credentialsChanged(env.CREDENTIAL_GATE, user.id, ...memberIds);
  for (const workspace of deleted) await driveDeletion(env, workspace.id);
  const [started] = await db.select().from(accountDeletions).where(eq(accountDeletions.id, job.id)).limit(1);
  return present(db, started!, `${baseUrl}/api/v1/account-deletions/${token}`);
}

/** `GET /api/v1/account-deletions/:token`: the job, to whoever holds its status token; 404 for any other. */
export async function getAccountDeletion(db: GlobalDb, token: string): Promise<AccountDeletion> {
  const [row] = await db
    .select()
    .from(accountDeletions)
    .where(eq(accountDeletions.tokenHash, await credentialHash(token)))
    .limit(1);
  if (!row) throw notFound('Account deletion');
  return present(db, row, null);
}
