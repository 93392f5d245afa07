import { env } from 'cloudflare:workers';
import { resolvePrincipal } from '../../workers/auth/credentials';
import type { RequestOrigin } from '../../workers/auth/principal';
import type { CapabilityContext } from '../../workers/capabilities/capability';
import { globalDbOf, openShard, shardBinding } from '../../workers/lib/db';
import { createKey, type TestUser } from './api';

const ORIGIN: RequestOrigin = { requestId: 'req-follow', ip: null, userAgent: null };

/** `binding`, telling `prepared` the SQL of each statement prepared on it. */
function watched(binding: D1Database, prepared: (sql: string) => void): D1Database {
  return new Proxy(binding, {
    get(target, key) {
      if (key === 'prepare') {
        return (sql: string) => {
          prepared(sql);
          return target.prepare(sql);
        };
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The workspace's shard as the service opens it, counting the statements sent to it. */
export function countedShard(shard: number) {
  const count = { statements: 0 };
  return {
    db: openShard(
      watched(shardBinding(env, shard), () => count.statements++),
      shard,
    ),
    count,
  };
}

/** The environment with its global database recording the SQL of every statement prepared on it. */
export function recordedGlobal() {
  const statements: string[] = [];
  return { env: { ...env, DB: watched(env.DB, (sql) => statements.push(sql)) }, statements };
}

/** The context of an MCP call by a new `*` key of `user`, on `db`. */
export async function keyContext(user: TestUser, db: CapabilityContext['db']): Promise<CapabilityContext> {
  const apiKey = (await createKey(user, ['*'])).key;
  const actor = await resolvePrincipal(globalDbOf(env), { apiKey, sessionToken: undefined, workspaceSelector: undefined }, ORIGIN);
  return {
    db,
    globalDb: globalDbOf(env),
    env,
    actor: actor!,
    requestId: ORIGIN.requestId,
    clientInterface: 'mcp',
    baseUrl: 'https://service.test',
    requestOrigin: ORIGIN,
  };
}
