import { eq, lt } from 'drizzle-orm';
import { z } from 'zod';
import { members, sessions, users, workspaces } from '../../schema';
import { credentialHash, newSessionToken, SESSION_TTL_MS } from '../auth/credentials';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../auth/passwords';
import type { Principal, RequestOrigin } from '../auth/principal';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { Env, GlobalDb } from '../env';
import { AppError, unauthorized } from '../errors';
import { now, toIso } from '../lib/clock';
import { isConstraintFailure } from '../lib/db-errors';
import { formatId, uuidv7 } from '../lib/ids';
import { slugFrom } from '../lib/slug';
import { recordChange, type ChangeActor } from './audit';
import { welcomeGrantStatements } from './credits';
import { placement } from './directory';

export const Email = z
  .email()
  .max(254)
  .transform((e) => e.toLowerCase());
export const Password = z.string().min(8).max(256);
export const PersonName = z.string().trim().min(1).max(100);

export const SignUpBody = z.object({ email: Email, password: Password, name: PersonName });
export type SignUpBody = z.infer<typeof SignUpBody>;
export const SignInBody = z.object({ email: Email, password: z.string().min(1).max(256) });
export type SignInBody = z.infer<typeof SignInBody>;

export const UserRecord = z.object({ id: z.string(), email: z.string(), name: z.string() });
export const SessionResponse = z.object({ token: z.string(), user: UserRecord });
export type SessionResponse = z.infer<typeof SessionResponse>;

/** A new session: the token goes to the caller, only its hash is stored. */
async function newSession(db: GlobalDb, userId: string, origin: RequestOrigin) {
  const token = newSessionToken();
  const insert = db.insert(sessions).values({
    id: await credentialHash(token),
    userId,
    workspaceId: null,
    expiresAt: now() + SESSION_TTL_MS,
    createdAt: now(),
    ip: origin.ip,
    userAgent: origin.userAgent,
  });
  return { token, insert };
}

/** Creates the user, their personal workspace (role owner, placed on a shard) and a session, atomically. */
/** `welcomeCredits`: hundredths of a Ds granted at sign-up (WELCOME_CREDITS). */
export async function signUp(db: GlobalDb, env: Env, input: SignUpBody, origin: RequestOrigin, welcomeCredits: number): Promise<SessionResponse> {
  const userId = uuidv7();
  const workspaceId = uuidv7();
  const session = await newSession(db, userId, origin);
  const place = await placement(db, env, workspaceId);
  const t = now();
  const owner: ChangeActor = { userId, workspaceId, credential: { type: 'session', sessionId: '' }, origin };
  const passwordHash = await hashPassword(input.password);
  try {
    await db.batch([
      db.insert(users).values({ id: userId, email: input.email, name: input.name, passwordHash, createdAt: t, updatedAt: t }),
      db.insert(workspaces).values({
        id: workspaceId,
        name: `${input.name}'s workspace`,
        slug: slugFrom(input.name),
        personal: true,
        createdBy: userId,
        createdAt: t,
      }),
      ...place.statements,
      db.insert(members).values({ workspaceId, userId, role: 'owner', createdAt: t }),
      session.insert,
      ...welcomeGrantStatements(db, userId, welcomeCredits),
      ...recordChange(db, owner, {
        action: 'user.signed_up',
        resourceType: 'user',
        resourceId: userId,
        activity: `${input.name} created the workspace`,
      }),
    ]);
  } catch (error) {
    if (isConstraintFailure(error, 'UNIQUE', 'users.email')) throw new AppError('ALREADY_EXISTS', 409, 'An account with this email already exists');
    throw error;
  }
  await place.vouch();
  return { token: session.token, user: { id: userId, email: input.email, name: input.name } };
}

/** Wrong password and unknown email answer alike, in the same time. */
export async function signIn(db: GlobalDb, input: SignInBody, origin: RequestOrigin): Promise<SessionResponse> {
  const [user] = await db.select().from(users).where(eq(users.email, input.email)).limit(1);
  const ok = user ? await verifyPassword(input.password, user.passwordHash) : await burnPasswordCheck(input.password);
  if (!user || !ok) throw unauthorized('Email or password is incorrect');
  const session = await newSession(db, user.id, origin);
  await session.insert;
  return { token: session.token, user: { id: user.id, email: user.email, name: user.name } };
}

export async function signOut(db: GlobalDb, gates: CredentialGates, token: string): Promise<void> {
  const ended = await db
    .delete(sessions)
    .where(eq(sessions.id, await credentialHash(token)))
    .returning({ userId: sessions.userId });
  await credentialsChanged(gates, ...ended.map((s) => s.userId));
}

export const Profile = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  createdAt: z.string(),
  workspace: z.object({ id: z.string(), name: z.string(), slug: z.string(), role: z.string() }),
  credential: z.object({ type: z.enum(['session', 'api_key', 'oauth']), apiKeyId: z.string().nullable() }),
  scopes: z.array(z.string()),
});
export type Profile = z.infer<typeof Profile>;

export const ProfilePatch = z.object({ name: PersonName });
export type ProfilePatch = z.infer<typeof ProfilePatch>;

/** A user's name and email (for the pages that greet them), or undefined. */
export async function userOf(db: GlobalDb, userId: string): Promise<{ name: string; email: string } | undefined> {
  const [user] = await db.select({ name: users.name, email: users.email }).from(users).where(eq(users.id, userId)).limit(1);
  return user;
}

export async function getProfile(db: GlobalDb, principal: Principal): Promise<Profile> {
  const [row] = await db
    .select({ user: users, workspace: workspaces })
    .from(users)
    .innerJoin(workspaces, eq(workspaces.id, principal.workspaceId))
    .where(eq(users.id, principal.userId))
    .limit(1);
  if (!row) throw unauthorized();
  return {
    id: row.user.id,
    email: row.user.email,
    name: row.user.name,
    createdAt: toIso(row.user.createdAt),
    workspace: { id: row.workspace.id, name: row.workspace.name, slug: row.workspace.slug, role: principal.role },
    credential:
      principal.credential.type === 'api_key'
        ? { type: 'api_key', apiKeyId: formatId('key', principal.credential.apiKeyId) }
        : { type: principal.credential.type, apiKeyId: null },
    scopes: principal.scopes,
  };
}

export async function updateProfile(db: GlobalDb, principal: Principal, patch: ProfilePatch): Promise<Profile> {
  await db.batch([
    db.update(users).set({ name: patch.name, updatedAt: now() }).where(eq(users.id, principal.userId)),
    ...recordChange(db, principal, {
      action: 'profile.updated',
      resourceType: 'user',
      resourceId: principal.userId,
      metadata: { fields: ['name'] },
    }),
  ]);
  return getProfile(db, principal);
}

/** Housekeeping: expired sessions are useless and only grow the table. */
export const deleteExpiredSessions = (db: GlobalDb) => db.delete(sessions).where(lt(sessions.expiresAt, now()));
