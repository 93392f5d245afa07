import type { Scope } from './scopes';

/**
 * Who may carry out an operation:
 * - `public`: no credential (the marketplace, discovery, device-flow start);
 * - `credential`: an API key, session token or OAuth token holding `scope`
 *   (sessions and `*` keys skip the scope check);
 * - `session`: a signed-in person only (the app's approval routes);
 * - `key`: an API key only;
 * - `agent`: an API key, activated or not, with no scope check: connect, request-permission and
 *   their polls, where a key gets its scopes in the first place.
 */
export type RouteAccess = { auth: 'public' } | { auth: 'credential'; scope: Scope } | { auth: 'session' } | { auth: 'key'; scope: Scope } | { auth: 'agent' };
