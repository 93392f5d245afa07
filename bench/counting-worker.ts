/**
 * The service's Worker for `bench/capacity-measure.ts`: the same Worker and Durable Objects, each
 * given bindings that count what they are asked (D1 statements and the rows D1 reports, for the
 * global database `DB` and for the shards `SHARD_<n>` together; Durable Object calls by class,
 * queue messages, R2 operations). The counts live in this isolate's
 * memory (under `wrangler dev` the Worker, its objects and its queue consumer share one isolate)
 * and are read and reset at `/__capacity` (GET answers them, DELETE resets them).
 */
import service, * as objects from '../workers/index';
import type { Env } from '../workers/env';
import { boundShards, shardBinding } from '../workers/lib/db';
import { CAPACITY_WEBHOOK_SECRET } from './capacity-webhook-secret';
import { measureShardStorage } from './shard-storage';

export * from '../workers/index';
import type { Counts, D1Counts, DatabaseKind, TableStorage } from './operation-cost';

const noD1 = (): D1Counts => ({ reads: 0, writes: 0, rowsRead: 0, rowsWritten: 0 });
const fresh = (): Counts => ({ d1: { global: noD1(), shard: noD1() }, doCalls: {}, queueMessages: 0, r2: {} });
let counts = fresh();

const bump = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1);

/** A statement's reads or writes, by its verb; rows come from D1's own `meta` where the call answers it. */
function countStatement(kind: DatabaseKind, sql: string) {
  if (/^\s*(select|with\b[\s\S]*\bselect)/i.test(sql) && !/\b(insert|update|delete)\b/i.test(sql)) counts.d1[kind].reads++;
  else counts.d1[kind].writes++;
}
function countMeta(kind: DatabaseKind, result: unknown) {
  const meta = (result as { meta?: { rows_read?: number; rows_written?: number } } | null)?.meta;
  counts.d1[kind].rowsRead += meta?.rows_read ?? 0;
  counts.d1[kind].rowsWritten += meta?.rows_written ?? 0;
}

const realStatements = new WeakMap<object, D1PreparedStatement>();
/** The SQL of a counted statement, for batches (which run the statements themselves). */
const sqlOf = new WeakMap<object, string>();

function countingStatement(kind: DatabaseKind, statement: D1PreparedStatement, sql: string): D1PreparedStatement {
  const wrapped = new Proxy(statement, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property === 'bind') return (...args: unknown[]) => countingStatement(kind, Reflect.apply(value, target, args), sql);
      if (['run', 'all', 'first', 'raw'].includes(String(property)))
        return async (...args: unknown[]) => {
          countStatement(kind, sql);
          const result = await Reflect.apply(value, target, args);
          countMeta(kind, result);
          return result;
        };
      return value.bind(target);
    },
  });
  realStatements.set(wrapped, statement);
  sqlOf.set(wrapped, sql);
  return wrapped;
}

function countingD1(kind: DatabaseKind, db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      // Requests read through a D1 session (read replication): it counts like the database.
      if (property === 'withSession') return (...args: unknown[]) => countingD1(kind, Reflect.apply(value as Function, target, args) as D1Database);
      if (property === 'prepare') return (sql: string) => countingStatement(kind, target.prepare(sql), sql);
      if (property === 'batch')
        return async (statements: D1PreparedStatement[]) => {
          const sqls = statements.map((s) => realStatements.get(s) ?? s);
          for (const s of statements) countStatement(kind, sqlOf.get(s) ?? '');
          const results = await target.batch(sqls);
          for (const r of results) countMeta(kind, r);
          return results;
        };
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function countingNamespace<N extends object>(namespace: N, className: string): N {
  const stub = (real: object) =>
    new Proxy(real, {
      get(target, property) {
        const value = Reflect.get(target, property);
        if (typeof value !== 'function' || property === 'then') return value;
        return (...args: unknown[]) => {
          bump(counts.doCalls, className);
          return Reflect.apply(value, target, args);
        };
      },
    });
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'getByName' || property === 'get') return (...args: unknown[]) => stub(Reflect.apply(value, target, args) as object);
      return value.bind(target);
    },
  });
}

function countingQueue(queue: Queue): Queue {
  return {
    send: (body, options) => ((counts.queueMessages += 1), queue.send(body, options)),
    sendBatch: (messages, options) => ((counts.queueMessages += [...messages].length), queue.sendBatch(messages, options)),
  } as Queue;
}

function countingR2(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        bump(counts.r2, String(property));
        return Reflect.apply(value, target, args);
      };
    },
  });
}

const counted = new WeakMap<object, Env>();

/** The bindings with counters, and a webhook secret so a signed Stripe event can be measured. */
function counting(env: Env): Env {
  let wrapped = counted.get(env);
  if (!wrapped) {
    const shards = boundShards(env).map((shard) => [`SHARD_${shard}`, countingD1('shard', shardBinding(env, shard))]);
    const overrides: Partial<Env> = {
      ...Object.fromEntries(shards),
      DB: countingD1('global', env.DB),
      BUCKET: countingR2(env.BUCKET),
      WORKFLOW_STEPS: countingQueue(env.WORKFLOW_STEPS),
      RATE_LIMITER: countingNamespace(env.RATE_LIMITER, 'RateLimiter'),
      CREDENTIAL_GATE: countingNamespace(env.CREDENTIAL_GATE, 'CredentialGate'),
      EXECUTION_SESSION: countingNamespace(env.EXECUTION_SESSION, 'ExecutionSession'),
      WORKSPACE_CHANNEL: countingNamespace(env.WORKSPACE_CHANNEL, 'WorkspaceChannel'),
      WORKFLOW_RUN: countingNamespace(env.WORKFLOW_RUN, 'WorkflowRun'),
      STRIPE_WEBHOOK_SECRET: CAPACITY_WEBHOOK_SECRET,
    };
    // A proxy rather than a copy: secrets are not all enumerable on the runtime's env.
    wrapped = new Proxy(env, { get: (target, property) => (property in overrides ? overrides[property as keyof Env] : Reflect.get(target, property)) });
    counted.set(env, wrapped);
  }
  return wrapped;
}

/** Each object class, constructed with the counting bindings. */
export class CredentialGate extends objects.CredentialGate {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, counting(env));
  }
}
export class ExecutionSession extends objects.ExecutionSession {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, counting(env));
  }
}
export class WorkflowRun extends objects.WorkflowRun {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, counting(env));
  }
}
export class WorkspaceChannel extends objects.WorkspaceChannel {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, counting(env));
  }
}
export class RateLimiter extends objects.RateLimiter {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, counting(env));
  }
}

/**
 * Every shard table's rows and computed bytes, summed over the shards, and the shard files' own
 * size as D1 reports it (pages, free ones included); read uncounted.
 */
async function shardStorage(env: Env) {
  const tables: Record<string, TableStorage> = {};
  let fileBytes = 0;
  for (const shard of boundShards(env)) {
    const db = shardBinding(env, shard);
    for (const [name, { rows, bytes }] of Object.entries(await measureShardStorage(db))) {
      const sum = (tables[name] ??= { rows: 0, bytes: 0 });
      sum.rows += rows;
      sum.bytes += bytes;
    }
    fileBytes += (await db.prepare('SELECT 1').run()).meta.size_after;
  }
  return { tables, fileBytes };
}

export default {
  ...service,
  async fetch(request: Request, env: Env, ctx: ExecutionContext) {
    if (new URL(request.url).pathname === '/__capacity/storage') return Response.json(await shardStorage(env));
    if (new URL(request.url).pathname === '/__capacity') {
      if (request.method === 'DELETE') counts = fresh();
      return Response.json(counts);
    }
    return service.fetch(request, counting(env), ctx);
  },
  queue: (batch: MessageBatch, env: Env) => service.queue(batch as never, counting(env)),
} satisfies ExportedHandler<Env>;
