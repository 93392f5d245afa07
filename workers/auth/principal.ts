import type { Role } from '../../schema';
import { unauthorized } from '../errors';

/** Where a request came from: recorded with every mutation in the audit log. */
export interface RequestOrigin {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  /** `x-agent-slug`: attribution on traces (spec 4.7 rule 3), never an access check. */
  agentSlug?: string | null;
  /** The caller's W3C `traceparent` (normalized), or null: the parent of the traces of runs it starts (docs/telemetry.md). */
  traceparent?: string | null;
}

export type Credential =
  | { type: 'session'; sessionId: string }
  | { type: 'api_key'; apiKeyId: number }
  /** An OAuth access token (spec 5.3): bound to one user, workspace and client at consent. */
  | { type: 'oauth'; grantId: string; clientId: string; resource: string | null };

/**
 * Who is calling, in which workspace, with what rights. Every service function takes one,
 * and reads the workspace from it, never from the request.
 */
export interface Principal {
  userId: string;
  workspaceId: string;
  /** The shard database holding the workspace's rows, as the directory names it. */
  shard: number;
  /** Set while a move of the workspace fences its writes (the directory's `moving_to`): writes answer 503. */
  fenced?: boolean;
  role: Role;
  credential: Credential;
  /** Granted scopes; `["*"]` for sessions and legacy keys. */
  scopes: string[];
  origin: RequestOrigin;
}

export const apiKeyIdOf = (p: Pick<Principal, 'credential'>): number | null => (p.credential.type === 'api_key' ? p.credential.apiKeyId : null);

/** The principal of a route whose table entry requires one. */
export const principalOf = (c: { var: { principal: Principal | undefined } }): Principal => {
  if (!c.var.principal) throw unauthorized();
  return c.var.principal;
};
