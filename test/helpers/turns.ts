import { env } from 'cloudflare:workers';
import type { TurnInput } from '../../workers/services/execution-events';
import type { Role } from '../../schema';
import { runActor } from '../../workers/auth/actor';
import { resolvePrincipal } from '../../workers/auth/credentials';
import { createKey, sessionIdOf, type TestUser } from './api';
import { globalDbOf } from '../../workers/lib/db';

const RUN = { kind: 'execution', id: 'exec_1' } as const;

/** Who launched a test turn, when not the user's own session in their workspace (the key `apiKeyId`, another workspace or request). */
interface Launcher {
  workspaceId?: string;
  shard?: number;
  userId?: string;
  role?: Role;
  apiKeyId?: number | null;
  requestId?: string;
}

/**
 * A turn as the ExecutionSession hands it to the run tools: the user's, owner, no key, unless
 * overridden. Its actor is the launching credential the launcher fields name, holding every
 * scope (the user's session, or a `*` key when `apiKeyId` is set), unless an actor is given.
 */
export const turnOf = (user: TestUser | null, extra: Partial<TurnInput> & Launcher = {}): TurnInput => {
  const { workspaceId, shard, userId, role, apiKeyId, requestId, ...turn } = extra;
  const launcher = {
    userId: userId ?? user?.user.id ?? 'user-tools',
    workspaceId: workspaceId ?? user?.workspaceId ?? 'ws-tools',
    shard: shard ?? user?.shard ?? 1,
    role: role ?? ('owner' as const),
    credential: apiKeyId != null ? { type: 'api_key' as const, apiKeyId } : { type: 'session' as const, sessionId: user ? sessionIdOf(user) : 'test' },
    scopes: ['*'],
    origin: { requestId: requestId ?? 'req-tools', ip: null, userAgent: null },
  };
  return {
    executionId: 1,
    actor: runActor(launcher, RUN),
    turnKey: 'exec_1:t',
    budget: { amount: 0, limit: 'turn' },
    skillName: 'x',
    skillSlug: 'x',
    system: '',
    text: '',
    ...turn,
  };
};

/** A turn started by a new key of `user` holding `scopes`: its actor is that key, as a request resolves it. */
export const keyTurn = async (user: TestUser, scopes: string[]): Promise<TurnInput> => turnOfKey(user, (await createKey(user, scopes)).key);

/** A turn started by the key `apiKey` of `user`: its actor is that key, as a request resolves it. */
export async function turnOfKey(user: TestUser, apiKey: string): Promise<TurnInput> {
  const principal = (await resolvePrincipal(
    globalDbOf(env),
    { apiKey, sessionToken: undefined, workspaceSelector: undefined },
    { requestId: 'req-key-turn', ip: null, userAgent: null },
  ))!;
  return turnOf(user, { actor: runActor(principal, RUN) });
}
