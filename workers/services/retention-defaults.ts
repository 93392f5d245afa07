/**
 * The kinds of data whose window a workspace owner may change, and their defaults in days
 * (docs/operations.md). A module of its own so that the console shows the same defaults.
 */
export const RETENTION_DEFAULTS = { executions: 30, traces: 30, workflowRuns: 30, activity: 90, audit: 365 } as const;
export type RetentionKind = keyof typeof RETENTION_DEFAULTS;
