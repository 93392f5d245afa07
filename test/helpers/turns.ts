import { env } from 'cloudflare:workers';
import type { TurnInput } from '../../workers/services/execution-events';
import { runActor } from '../../workers/auth/actor';
import { resolvePrincipal } from '../../workers/auth/credentials';
import { apiKeyIdOf } from '../../workers/auth/principal';
import { createKey, sessionIdOf, type TestUser } from './api';
import { openDb } from '../../workers/lib/db';

const RUN = { kind: 'execution', id: 'exec_1' } as const;

/**
 * A turn as the ExecutionSession hands it to the run tools: the user's, owner, no key, unless
 * overridden. Its actor is the launching credential the other fields name, holding every scope
 * (the user's session, or a `*` key when `apiKeyId` is set), unless an actor is given.
 */
export const turnOf = (user: TestUser | null, extra: Partial<TurnInput> = {}): TurnInput => {
  const base = {
    executionId: 1,
    workspaceId: user?.workspaceId ?? 'ws-tools',
    userId: user?.user.id ?? 'user-tools',
    role: 'owner' as const,
    apiKeyId: null,
    requestId: 'req-tools',
    turnKey: 'exec_1:t',
    budget: 0,
    skillName: 'x',
    skillSlug: 'x',
    system: '',
    text: '',
    ...extra,
  };
  const launcher = {
    userId: base.userId,
    workspaceId: base.workspaceId,
    role: base.role,
    credential:
      base.apiKeyId !== null
        ? { type: 'api_key' as const, apiKeyId: base.apiKeyId }
        : { type: 'session' as const, sessionId: user ? sessionIdOf(user) : 'test' },
    scopes: ['*'],
    origin: { requestId: base.requestId, ip: null, userAgent: null },
  };
  return { actor: runActor(launcher, RUN), ...base };
};

/** A turn started by a new key of `user` holding `scopes`: its actor is that key, as a request resolves it. */
export const keyTurn = async (user: TestUser, scopes: string[]): Promise<TurnInput> => turnOfKey(user, (await createKey(user, scopes)).key);

/** A turn started by the key `apiKey` of `user`: its actor is that key, as a request resolves it. */
export async function turnOfKey(user: TestUser, apiKey: string): Promise<TurnInput> {
  const db = openDb(env.DB);
  const principal = (await resolvePrincipal(
    db,
    { apiKey, sessionToken: undefined, workspaceSelector: undefined },
    { requestId: 'req-key-turn', ip: null, userAgent: null },
  ))!;
  return turnOf(user, { apiKeyId: apiKeyIdOf(principal), requestId: 'req-key-turn', actor: runActor(principal, RUN) });
}
