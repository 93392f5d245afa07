import type { DrizzleD1Database } from 'drizzle-orm/d1';
import type { Principal, RequestOrigin } from './auth/principal';

/**
 * The Worker's environment. The bindings and vars of wrangler.toml and the secrets named in
 * .dev.vars.example are `GeneratedEnv`, written by `npm run types` into
 * worker-configuration.d.ts (npm test fails when it is out of date); what follows are the
 * settings a deployment may leave unset, which no configuration file names.
 */
export interface Env extends GeneratedEnv {
  /** Model provider selection (workers/runtime/providers/index.ts; docs/operations.md). */
  MODEL_PROVIDER?: string;
  MODEL?: string;
  ANTHROPIC_API_KEY?: string;
  ANTHROPIC_BASE_URL?: string;
  OPENAI_API_KEY?: string;
  OPENAI_BASE_URL?: string;
  /** Stripe (workers/services/stripe.ts; docs/billing.md). Without the secret key, purchase is 503. */
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  STRIPE_PUBLISHABLE_KEY?: string;
  /** Comma-separated browser origins, besides the service's own, that may call /mcp (docs/mcp.md). */
  MCP_ALLOWED_ORIGINS?: string;
  /** The service's public origin (`https://skills.example.com`): browsers on it may call /mcp (docs/mcp-clients.md). */
  PUBLIC_ORIGIN?: string;
  /** `true` on a developer's machine and in tests only (workers/lib/local-development.ts); `npm run deploy` refuses it. */
  LOCAL_DEVELOPMENT?: string;
  /** GitHub's REST API base (default https://api.github.com; GitHub Enterprise: https://HOST/api/v3). Set but unusable: the connector is not configured. */
  GITHUB_API_BASE_URL?: string;
  /** Event streams (SSE) and WebSockets each credential may hold open at once, each (default 20; workers/lib/stream-slots.ts). */
  MAX_OPEN_STREAMS?: string;
  /** The longest retention window, in days, a workspace owner may set (default 400; docs/operations.md, "Retention"). */
  RETENTION_MAX_DAYS?: string;
  /** The first retry delay of a webhook delivery in seconds, each next one four times longer (default 5; docs/webhooks.md); tests set 1. */
  WEBHOOK_RETRY_BASE_SECONDS?: string;
}

/** The query builder over a D1 database or one of its sessions (`$client`, for statements built once: workers/lib/select-once.ts). */
export type Db = DrizzleD1Database & { $client: D1Database | D1DatabaseSession };

declare const kindOfDb: unique symbol;
/**
 * The global database (binding DB): users, sessions, credentials, OAuth, the credit ledger, the
 * catalog and the directory. Its own type, so a service written for one kind of database does
 * not compile when handed the other (schema/STORAGE.md says which table lives where).
 */
export type GlobalDb = Db & { readonly [kindOfDb]: 'global' };
/** A shard database (binding SHARD_<n>): every row of the workspaces the directory places on it. */
export type ShardDb = Db & { readonly [kindOfDb]: 'shard'; readonly shard: number };

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** The client's `x-d1-bookmark`, by database name; and the sessions this request opened, to answer theirs. */
    bookmarks: Map<string, string>;
    sessions: Map<string, D1DatabaseSession>;
    /** The global database, in the request's read-replication session. */
    globalDb: GlobalDb;
    /** The shard of the principal's workspace, in the request's session; set with the principal. */
    db: ShardDb;
    origin: RequestOrigin;
    /** Set by the auth middleware when the request carries a usable credential. */
    principal: Principal | undefined;
  };
};
