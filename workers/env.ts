import type { DrizzleD1Database } from 'drizzle-orm/d1';
import type * as schema from '../schema';
import type { ExecutionSession } from '../durable-objects/ExecutionSession';
import type { RateLimiter } from '../durable-objects/RateLimiter';
import type { WorkspaceChannel } from '../durable-objects/WorkspaceChannel';
import type { WorkflowRun } from '../durable-objects/WorkflowRun';
import type { Principal } from './auth/principal';

export interface Env {
  DB: D1Database;
  BUCKET: R2Bucket;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  EXECUTION_SESSION: DurableObjectNamespace<ExecutionSession>;
  /** One per workspace: the control-plane WebSocket and /api/events (durable-objects/WorkspaceChannel.ts). */
  WORKSPACE_CHANNEL: DurableObjectNamespace<WorkspaceChannel>;
  WORKFLOW_STEPS: Queue;
  WORKFLOW_RUN: DurableObjectNamespace<WorkflowRun>;
  MAX_ACTIVE_EXECUTIONS: string;
  MAX_BODY_BYTES: string;
  /** Ds granted to every new user (a `purchase` transaction). */
  WELCOME_CREDITS?: string;
  /** Pause between the local model's streamed words, in ms (0: as fast as possible). */
  LOCAL_MODEL_DELAY_MS?: string;
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
  /** The app's URI scheme for the Checkout return pages' deep links (default `workspaceskills`). */
  APP_SCHEME?: string;
  /** Comma-separated browser origins, besides the service's own, that may call /mcp (docs/mcp.md). */
  MCP_ALLOWED_ORIGINS?: string;
  /** GitHub's REST API base (default https://api.github.com; GitHub Enterprise: https://HOST/api/v3). Set but unusable: the connector is not configured. */
  GITHUB_API_BASE_URL?: string;
  /** Static files of the API reference UI (wrangler.toml [assets]), served under /docs/assets/. */
  ASSETS: Fetcher;
  /** HMAC secret for signed stream and control-plane URLs. */
  SIGNING_SECRET: string;
  /** Base64 AES-256 key for secrets and BYOK keys at rest. */
  ENCRYPTION_KEY: string;
}

export type Db = DrizzleD1Database<typeof schema>;

/** Where a request came from: recorded with every mutation in the audit log. */
export interface RequestOrigin {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  /** `x-agent-slug`: attribution on traces (spec 4.7 rule 3), never an access check. */
  agentSlug?: string | null;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    db: Db;
    origin: RequestOrigin;
    /** Set by the auth middleware when the request carries a usable credential. */
    principal: Principal | undefined;
  };
};
