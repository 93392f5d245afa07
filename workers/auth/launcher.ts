import { and, eq, sql } from 'drizzle-orm';
import { apiKeys, members, oauthGrants, sessions, type Role } from '../../schema';
import type { Env, GlobalDb } from '../env';
import { now } from '../lib/clock';
import { apiScopesOf, grantLiveUntil } from '../services/oauth';
import type { Actor } from './actor';
import { narrowScopes, WILDCARD } from './scopes';

/** The launcher as it is now, or why it no longer holds (said as the step's or tool's failure). */
export type LauncherNow = { ok: true; actor: Actor } | { ok: false; reason: string };

/**
 * What the launching credential resolves to now, in the run's workspace, or why it does not;
 * `until`: how long the answer holds at most (a session's expiry, a token family's last live token's).
 */
export type Held = ({ role: Role | null; scopes: string[] } | { gone: string }) & { until?: number };

/** How the reasons below name the credential; a schedule says it its own way (workers/services/schedule-firing.ts). */
export const LAUNCHED = 'The credential that launched this run';

/** A run's launcher is a member of the run's workspace, or its credential acts for nobody there. */
const memberOf = (actor: Actor, userId: typeof apiKeys.userId | typeof sessions.userId | typeof oauthGrants.userId) =>
  and(eq(members.workspaceId, actor.workspaceId), eq(members.userId, userId));

async function apiKeyHeld(db: GlobalDb, actor: Actor, apiKeyId: number): Promise<Held> {
  const [row] = await db
    .select({ status: apiKeys.status, workspaceId: apiKeys.workspaceId, scopes: apiKeys.scopes, role: members.role })
    .from(apiKeys)
    .leftJoin(members, memberOf(actor, apiKeys.userId))
    .where(and(eq(apiKeys.id, apiKeyId), eq(apiKeys.userId, actor.userId)))
    .limit(1);
  if (!row || row.status === 'revoked') return { gone: `${LAUNCHED} was revoked` };
  if (row.status !== 'active') return { gone: `${LAUNCHED} is not activated` };
  // PUT /workspaces/current rebinds a key: it no longer acts in the run's workspace.
  if (row.workspaceId !== actor.workspaceId) return { gone: `${LAUNCHED} now acts in another workspace` };
  return { role: row.role, scopes: row.scopes };
}

async function sessionHeld(db: GlobalDb, actor: Actor, sessionId: string): Promise<Held> {
  const [row] = await db
    .select({ expiresAt: sessions.expiresAt, role: members.role })
    .from(sessions)
    .leftJoin(members, memberOf(actor, sessions.userId))
    .where(and(eq(sessions.id, sessionId), eq(sessions.userId, actor.userId)))
    .limit(1);
  if (!row) return { gone: `${LAUNCHED} was signed out` };
  if (row.expiresAt <= now()) return { gone: `${LAUNCHED} has expired` };
  return { role: row.role, scopes: [WILDCARD], until: row.expiresAt };
}

/**
 * An OAuth launcher is its grant, the token family a refresh continues, for as long as the
 * client could still act with it: a short-lived access token expiring or being refreshed leaves
 * the run going while the family holds a live token (an unexpired access token, or a refresh
 * token not yet used); the grant revoked (a revoked refresh token, refresh or code reuse), gone
 * with its client or user, or left with no live token stops it.
 */
async function grantHeld(db: GlobalDb, actor: Actor, grantId: string): Promise<Held> {
  const liveUntil = grantLiveUntil(db);
  const [row] = await db
    .select({
      revokedAt: oauthGrants.revokedAt,
      workspaceId: oauthGrants.workspaceId,
      scopes: oauthGrants.scopes,
      liveUntil: sql<number | null>`(${liveUntil})`,
      role: members.role,
    })
    .from(oauthGrants)
    .leftJoin(members, memberOf(actor, oauthGrants.userId))
    .where(and(eq(oauthGrants.id, grantId), eq(oauthGrants.userId, actor.userId)))
    .limit(1);
  if (!row || row.revokedAt !== null || row.workspaceId !== actor.workspaceId) return { gone: `${LAUNCHED} was revoked` };
  if (row.liveUntil === null) return { gone: `${LAUNCHED} has expired` };
  return { role: row.role, scopes: apiScopesOf(row.scopes), until: row.liveUntil };
}

/**
 * The launching credential of a run as D1 holds it now (by its kind and id, which the run
 * keeps), in the run's workspace. The launcher's CredentialGate asks this and remembers the
 * answer as it remembers a credential's resolution, until a change to the user's credentials
 * or memberships, at most a minute.
 */
export async function heldNow(db: GlobalDb, actor: Actor): Promise<Held> {
  const { credential } = actor;
  if (credential.type === 'api_key') return apiKeyHeld(db, actor, credential.apiKeyId);
  if (credential.type === 'session') return sessionHeld(db, actor, credential.sessionId);
  return grantHeld(db, actor, credential.grantId);
}

/**
 * The actor of a run as its launching credential stands now, as its owner's CredentialGate
 * answers (`heldNow`), with the scopes it held at launch narrowed to those it holds now and its
 * current role. A credential revoked, signed out, expired, moved to another workspace, or whose
 * holder left the workspace, answers why instead. An actor that is no run (a request's own
 * principal) is answered as it is.
 */
export async function launcherNow(env: Env, actor: Actor): Promise<LauncherNow> {
  if (!actor.run) return { ok: true, actor };
  return credentialNow(env, actor);
}

/** `launcherNow` for any stored actor, a run's or not: a schedule's, before it launches a run for it. */
export async function credentialNow(env: Env, actor: Actor): Promise<LauncherNow> {
  const held = await env.CREDENTIAL_GATE.getByName(actor.userId).launcher(actor);
  if ('gone' in held) return { ok: false, reason: held.gone };
  if (held.role === null) return { ok: false, reason: `${LAUNCHED} belongs to someone no longer a member of this workspace` };
  return { ok: true, actor: { ...actor, role: held.role, scopes: narrowScopes(actor.scopes, held.scopes) } };
}
