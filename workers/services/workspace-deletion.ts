import type { BatchItem } from 'drizzle-orm/batch';
import { and, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import {
  DELETION_STATUSES,
  DELETION_STEPS,
  invitations,
  members,
  sessions,
  workspaceDeletionAudit,
  workspaceDeletions,
  type WorkspaceDeletionRow,
  type WorkspaceRow,
} from '../../schema';
import { credentialsChanged } from '../auth/credential-changes';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import type { Env, GlobalDb } from '../env';
import { conflict, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { uuidv7 } from '../lib/ids';
import { placeOf } from './directory';
import { requireOwnedWorkspace } from './workspaces';

/**
 * Asking for a workspace's deletion, and reading how it goes (docs/behaviour.md, "Deleting a
 * workspace"). The request itself makes the workspace gone for everyone: in one batch the job
 * and its audit record are written and every membership and invitation removed, so no
 * credential resolves into the workspace any more (an API key bound to it answers 403, a session
 * falls back to its personal workspace); then every member's credential gate forgets. The rest
 * is the job's, driven by the WorkspaceDeletion object (workspace-erasure.ts).
 */

export const DeleteWorkspaceBody = z.object({
  confirm: z.string().max(200).describe("The workspace's name, typed back exactly: the deletion cannot be undone"),
});
export type DeleteWorkspaceBody = z.infer<typeof DeleteWorkspaceBody>;

export const WorkspaceDeletion = z.object({
  id: z.string().describe('The job id'),
  status: z.enum(DELETION_STATUSES),
  step: z.enum(DELETION_STEPS).describe('What the job is doing now; `done` once completed'),
  workspaceId: z.string(),
  workspaceName: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  completedAt: z.string().nullable(),
});
export type WorkspaceDeletion = z.infer<typeof WorkspaceDeletion>;

const present = (row: WorkspaceDeletionRow): WorkspaceDeletion => ({
  id: row.id,
  status: row.status,
  step: row.step,
  workspaceId: row.workspaceId,
  workspaceName: row.workspaceName,
  createdAt: toIso(row.createdAt),
  updatedAt: toIso(row.updatedAt),
  completedAt: row.completedAt === null ? null : toIso(row.completedAt),
});

export async function deletionOf(db: GlobalDb, workspaceId: string): Promise<WorkspaceDeletionRow | undefined> {
  const [row] = await db.select().from(workspaceDeletions).where(eq(workspaceDeletions.workspaceId, workspaceId)).limit(1);
  return row;
}

const checkConfirm = (name: string, confirm: string) => {
  if (confirm !== name) throw invalidInput('confirm', 'matches_name', "Type the workspace's name exactly to confirm its deletion");
};

/** Starts (or, for an unfinished job, wakes) the object that drives a deletion. */
export const driveDeletion = (env: Env, workspaceId: string) => env.WORKSPACE_DELETION.getByName(workspaceId).begin(workspaceId);

/** Who asked for a deletion, as its audit record names them. */
type DeletionActor = { userId: string; apiKeyId: number | null; ip: string | null; userAgent: string | null; requestId: string };

/** What starting a workspace's deletion writes. */
export interface DeletionStart {
  workspace: WorkspaceRow;
  shard: number;
  /** Who reads the job: the person who asked, or the anonymous id of the account being deleted with it. */
  requestedBy: string;
  actor: DeletionActor | Principal;
  /** The account deletion this is part of: its personal workspace's name and slug (the person's name) are not recorded. */
  accountDeletionId?: string;
}

const actorOf = (actor: DeletionStart['actor']): DeletionActor =>
  'credential' in actor
    ? { userId: actor.userId, apiKeyId: apiKeyIdOf(actor), ip: actor.origin.ip, userAgent: actor.origin.userAgent, requestId: actor.origin.requestId }
    : actor;

/**
 * The batch that starts a workspace's deletion: the job and its audit record, and every
 * membership and invitation of the workspace removed, so no credential resolves into it any more.
 */
export function deletionStatements(db: GlobalDb, start: DeletionStart): [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]] {
  const { workspace } = start;
  const actor = actorOf(start.actor);
  const anonymous = start.accountDeletionId !== undefined && workspace.personal;
  const at = now();
  const job = {
    id: uuidv7(),
    workspaceId: workspace.id,
    workspaceName: anonymous ? 'Personal workspace' : workspace.name,
    shard: start.shard,
    requestedBy: start.requestedBy,
    accountDeletionId: start.accountDeletionId ?? null,
    // Read in the batch that removes them, so a member who joined a moment before is not missed.
    memberIds: sql`(SELECT json_group_array(user_id) FROM ${members} WHERE ${members.workspaceId} = ${workspace.id})` as unknown as string[],
    status: 'running' as const,
    step: DELETION_STEPS[0],
    createdAt: at,
    updatedAt: at,
  };
  return [
    db.insert(workspaceDeletions).values(job).onConflictDoNothing(),
    db.insert(workspaceDeletionAudit).values({
      workspaceId: workspace.id,
      actorUserId: actor.userId,
      actorApiKeyId: actor.apiKeyId,
      action: 'workspace.deletion_requested',
      resourceType: 'workspace',
      resourceId: workspace.id,
      ip: actor.ip,
      userAgent: actor.userAgent,
      requestId: actor.requestId,
      metadata: anonymous ? { jobId: job.id, accountDeletionId: start.accountDeletionId } : { name: workspace.name, slug: workspace.slug, jobId: job.id },
      createdAt: at,
    }),
    db.delete(invitations).where(eq(invitations.workspaceId, workspace.id)),
    db.delete(members).where(eq(members.workspaceId, workspace.id)),
    db.update(sessions).set({ workspaceId: null }).where(eq(sessions.workspaceId, workspace.id)),
  ];
}

/**
 * `DELETE /api/v1/workspaces/:id {confirm}`: owners only, not a personal workspace, not during a
 * move. Asked again by the same person, answers the same job.
 */
export async function requestDeletion(db: GlobalDb, env: Env, principal: Principal, workspace: string, body: DeleteWorkspaceBody): Promise<WorkspaceDeletion> {
  const earlier = await deletionOf(db, workspace);
  if (earlier && earlier.requestedBy === principal.userId) {
    checkConfirm(earlier.workspaceName, body.confirm);
    if (earlier.status !== 'completed') await driveDeletion(env, earlier.workspaceId);
    return present(earlier);
  }
  const row = await requireOwnedWorkspace(db, principal, workspace, 'Only an owner of the workspace can delete it');
  if (row.personal) {
    throw conflict('A personal workspace is deleted only with its account', { reason: 'personal_workspace' });
  }
  checkConfirm(row.name, body.confirm);
  const place = await placeOf(db, row.id);
  if (!place) throw notFound('Workspace');
  if (place.movingTo !== null) throw conflict('The workspace is being moved to another database; delete it once the move is done');
  await db.batch(deletionStatements(db, { workspace: row, shard: place.shard, requestedBy: principal.userId, actor: principal }));
  const started = (await deletionOf(db, row.id))!;
  await credentialsChanged(env.CREDENTIAL_GATE, principal.userId, ...started.memberIds);
  await driveDeletion(env, row.id);
  return present(started);
}

/** `GET /api/v1/workspaces/:id/deletion`: the job, to the person who asked for it, also once the workspace is gone. */
export async function getDeletion(db: GlobalDb, principal: Principal, workspaceId: string): Promise<WorkspaceDeletion> {
  const [row] = await db
    .select()
    .from(workspaceDeletions)
    .where(and(eq(workspaceDeletions.workspaceId, workspaceId), eq(workspaceDeletions.requestedBy, principal.userId)))
    .limit(1);
  if (!row) throw notFound('Workspace deletion');
  return present(row);
}
