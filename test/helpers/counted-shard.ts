import { env } from 'cloudflare:workers';
import { resolvePrincipal } from '../../workers/auth/credentials';
import type { RequestOrigin } from '../../workers/auth/principal';
import type { CapabilityContext } from '../../workers/capabilities/capability';
import { globalDbOf, openShard, shardBinding } from '../../workers/lib/db';
import { createKey, type TestUser } from './api';

const ORIGIN: RequestOrigin = { requestId: 'req-follow', ip: null, userAgent: null };

/** The workspace's shard as the service opens it, counting the statements sent to it. */
export function countedShard(shard: number) {
  const binding = shardBinding(env, shard);
  const count = { statements: 0 };
  const database = new Proxy(binding, {
    get(target, key) {
      if (key === 'prepare') {
        return (sql: string) => {
          count.statements++;
          return target.prepare(sql);
        };
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db: openShard(database, shard), count };
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
