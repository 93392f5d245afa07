import type { RouteAccess } from '../auth/access';
import { SCOPES_SUPPORTED } from '../auth/oauth/metadata';
import { CONNECTORS } from '../connectors/registry';
import { PROMPT_CAPABILITY, RESOURCE_CAPABILITIES } from './resources';
import { MCP_TOOLS } from './server';

const scopeOf = (access: RouteAccess) => (access.auth === 'credential' || access.auth === 'key' ? [access.scope] : []);

/** Named scopes in the vocabulary's order (reads first), then connector scopes: the order the consent page lists them. */
const vocabularyOrder = (scope: string) => {
  const index = SCOPES_SUPPORTED.indexOf(scope);
  return index === -1 ? SCOPES_SUPPORTED.length : index;
};

/**
 * Every API scope the MCP surface asks for at sign-in: each listed tool's (but a step-up tool's,
 * which is asked for when it is called), each resource's and the prompts' operation, and each
 * connector's `read` and `exec`, which its tools check per app.
 */
export const MCP_SCOPES: readonly string[] = [
  ...new Set([
    ...[...MCP_TOOLS.filter((t) => !t.stepUp).map((t) => t.access), ...RESOURCE_CAPABILITIES.map((c) => c.access), PROMPT_CAPABILITY.access].flatMap(scopeOf),
    ...CONNECTORS.flatMap((c) => [`connector:${c.app}:read`, `connector:${c.app}:exec`]),
  ]),
].sort((a, b) => vocabularyOrder(a) - vocabularyOrder(b));

/**
 * What an MCP client asks for when it first signs in (the 401 challenge's `scope`, and the
 * default of an authorization request for `/mcp` that names none): every scope the tools it
 * lists need (but the step-up tools'), and staying signed in. The person may untick any of them on the consent page.
 * Asking for all at once matters: the TypeScript SDK, once it holds a refresh token, answers a
 * step-up challenge by refreshing, which can never widen a grant.
 */
export const MCP_STARTING_SCOPES: readonly string[] = [...MCP_SCOPES, 'offline_access'];

/**
 * The step-up ask after a token lacked `missing`: what it holds plus what it lacks (and staying
 * signed in, as at the start). A client's new grant replaces its old one, so asking for the
 * missing scope alone would lose everything else.
 */
export const stepUpScopes = (held: readonly string[], missing: string): string[] => [...new Set([...held, missing, 'offline_access'])];

/**
 * The `WWW-Authenticate` value for a 401 or 403 at the MCP endpoint (RFC 9728 5.1, MCP
 * authorization spec "Authorization Server Location" and "Scope Selection Strategy"; RFC 6750
 * 3.1 for `error`, `error_description` and `scope`). Without a `scope`, the starting scopes.
 */
export function mcpWwwAuthenticate(
  base: string,
  problem?: { error: 'invalid_token' | 'insufficient_scope'; scope?: readonly string[]; description?: string },
): string {
  const parts = [`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`];
  if (problem) parts.push(`error="${problem.error}"`);
  // RFC 6750 3: the description's characters are %x20-21 / %x23-5B / %x5D-7E.
  if (problem?.description) parts.push(`error_description="${problem.description.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '')}"`);
  parts.push(`scope="${(problem?.scope ?? MCP_STARTING_SCOPES).join(' ')}"`);
  return `Bearer ${parts.join(', ')}`;
}
