/** Spec 5.4: the scope vocabulary. */
export const SENSITIVE_SCOPES = [
  'profile:write',
  'memory:write',
  'thread:read',
  'thread:write',
  'workspace:files:write',
  'tool:execute',
  'library:write',
  'workflow:run',
  'trace:read',
  'agent:message',
] as const;

export const READ_SCOPES = [
  'profile:read',
  'profile:search',
  'memory:read',
  'workspace:files:read',
  'stats:read',
  'model:read',
  'connector:list',
  'library:read',
  'activity:read',
  'agent:list',
  'channel:read',
  'billing:read',
] as const;

export const WRITE_SCOPES = ['trace:write'] as const;

export const WILDCARD = '*';

export type Scope = (typeof SENSITIVE_SCOPES)[number] | (typeof READ_SCOPES)[number] | (typeof WRITE_SCOPES)[number];

/** Scopes a new key gets when none are named. */
export const DEFAULT_KEY_SCOPES: Scope[] = ['profile:read', 'agent:list'];

const NAMED = new Set<string>([...SENSITIVE_SCOPES, ...READ_SCOPES, ...WRITE_SCOPES]);
const CONNECTOR_SCOPE = /^connector:[a-z][a-z0-9_-]{0,31}:(read|exec)$/;

/** A scope the server knows: a named one or `connector:<app>:read|exec`. `*` is never requested. */
export const isKnownScope = (scope: string): boolean => NAMED.has(scope) || CONNECTOR_SCOPE.test(scope);

export const isSensitiveScope = (scope: string): boolean => (SENSITIVE_SCOPES as readonly string[]).includes(scope) || scope.endsWith(':exec');

/** Whether a credential's scope set covers `needed`. */
export const hasScope = (granted: readonly string[], needed: string): boolean => granted.includes(WILDCARD) || granted.includes(needed);

/** The scopes both sets cover: what a run may use of what its launcher held at launch (`ceiling`) and holds now (`current`). */
export const narrowScopes = (ceiling: readonly string[], current: readonly string[]): string[] =>
  ceiling.includes(WILDCARD) ? [...current] : current.includes(WILDCARD) ? [...ceiling] : ceiling.filter((s) => current.includes(s));
