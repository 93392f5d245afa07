import type { GlobalDb } from '../env';
import { forbidden, unauthorized } from '../errors';
import { coveredByGrant } from './grants';
import type { Principal } from './principal';
import type { RouteAccess } from './access';
import { hasScope } from './scopes';

/** The run an actor acts in: an execution (`exec_<n>`) or a workflow run (its id). */
export interface ActingRun {
  kind: 'execution' | 'workflow';
  id: string;
}

/**
 * Who acts. Either the holder of a credential (a session, an API key or an OAuth token, with
 * its scopes and workspace), as a request resolves it, or a run acting for one: then `run` is
 * set and everything else is the launching credential's, its scopes copied, never widened.
 * What a run's tools and steps may do is checked against these, as the REST route they
 * mirror checks the launcher.
 */
export interface Actor extends Principal {
  run?: ActingRun;
}

/** The actor of a run started by `launcher` (itself perhaps a run: a workflow's agent step). */
export const runActor = (launcher: Actor, run: ActingRun): Actor => ({
  userId: launcher.userId,
  workspaceId: launcher.workspaceId,
  shard: launcher.shard,
  role: launcher.role,
  credential: { ...launcher.credential },
  scopes: [...launcher.scopes],
  origin: { ...launcher.origin },
  run,
});

/** Whether `actor` may call a route with `access`; throws 401 or 403 (with `details.scope`) otherwise. */
export function authorize(access: RouteAccess, actor: Actor | undefined): void {
  if (access.auth === 'public') return;
  if (!actor) throw unauthorized();
  const { credential } = actor;
  if (access.auth === 'session' && credential.type !== 'session') {
    throw forbidden('This route is for signed-in people (session token), not API keys');
  }
  if ((access.auth === 'key' || access.auth === 'agent') && credential.type !== 'api_key') throw forbidden('This route needs an API key');
  if ((access.auth === 'credential' || access.auth === 'key') && !hasScope(actor.scopes, access.scope)) throw lacksScope(actor, access.scope);
}

/** 403 naming the scope the actor's credential lacks (spec 5.5: the message names it, `details.scope` too). */
function lacksScope(actor: Actor, scope: string) {
  const holder = actor.run ? 'The credential this run acts for' : 'This credential';
  return forbidden(`${holder} lacks the scope "${scope}"`, { scope });
}

/**
 * The second chance of a key whose own scopes lack `scope` (spec 5.5): a session grant of the
 * scope, or a one-time grant, which this call then spends (`grantToken`, the
 * `x-permission-grant` header, picks which).
 */
const grantCovers = async (db: GlobalDb, actor: Actor, scope: string, grantToken: string | undefined): Promise<boolean> =>
  actor.credential.type === 'api_key' && !hasScope(actor.scopes, scope) && (await coveredByGrant(db, actor.credential.apiKeyId, scope, grantToken));

/**
 * `authorize`, after giving a key that lacks the scope its second chance (`grantCovers`).
 * REST routes, MCP tools, run tools and workflow steps all check through here.
 */
export async function authorizeWithGrants(db: GlobalDb, access: RouteAccess, actor: Actor | undefined, grantToken: string | undefined): Promise<void> {
  if ((access.auth === 'credential' || access.auth === 'key') && actor && (await grantCovers(db, actor, access.scope, grantToken))) return;
  authorize(access, actor);
}

/**
 * A scope an operation needs beyond its route's, known only from its input (a connector's
 * `connector:<app>:read|exec`): held by the credential or covered by a grant, like a route's
 * scope; 403 naming it otherwise.
 */
export async function requireScope(db: GlobalDb, actor: Actor, scope: string, grantToken: string | undefined): Promise<void> {
  if (hasScope(actor.scopes, scope) || (await grantCovers(db, actor, scope, grantToken))) return;
  throw lacksScope(actor, scope);
}

/**
 * A copy of `principal` to keep, for work that acts for it later (a schedule's fires, a
 * trigger's deliveries), as a run keeps its launcher.
 */
export const actorToKeep = (principal: Principal): Actor => ({
  userId: principal.userId,
  workspaceId: principal.workspaceId,
  shard: principal.shard,
  role: principal.role,
  credential: { ...principal.credential },
  scopes: [...principal.scopes],
  origin: { ...principal.origin },
});
