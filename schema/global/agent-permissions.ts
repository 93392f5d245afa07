import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { apiKeys } from './api-keys';
import { users } from './users';
import { workspaceIdColumn, workspaces } from './workspaces';

/** A decision's stored status; `expired` is derived from `expires_at` while still pending. */
export const DECISION_STATUSES = ['pending', 'granted', 'denied'] as const;
export type DecisionStatus = (typeof DECISION_STATUSES)[number];

export const GRANT_MODES = ['persistent', 'session', 'one_time'] as const;
export type GrantMode = (typeof GRANT_MODES)[number];

const keyColumns = () => ({
  workspaceId: workspaceIdColumn(),
  /** The key's owner: the only person who may decide (and the actor of the decision). */
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  apiKeyId: integer('api_key_id')
    .notNull()
    .references(() => apiKeys.id, { onDelete: 'cascade' }),
});

/** Spec 3.3: an agent asking (`POST /agents/connect`) for a set of scopes on its key. */
export const agentConsents = sqliteTable(
  'agent_consents',
  {
    /** UUIDv7: opaque to the agent that polls it. */
    id: text('id').primaryKey(),
    ...keyColumns(),
    agentDisplayName: text('agent_display_name').notNull(),
    reason: text('reason').notNull(),
    requestedScopes: text('requested_scopes', { mode: 'json' }).$type<string[]>().notNull(),
    /** What the person approved (a subset of the request). */
    grantedScopes: text('granted_scopes', { mode: 'json' }).$type<string[]>(),
    status: text('status', { enum: DECISION_STATUSES }).notNull(),
    /** SHA-256 of the normalised `XXXX-XXXX` link code the person types into the app. */
    linkCodeHash: text('link_code_hash').notNull().unique(),
    createdAt: integer('created_at').notNull(),
    /** End of the 5-minute consent window (spec 5.5). */
    expiresAt: integer('expires_at').notNull(),
    decidedAt: integer('decided_at'),
    /** When the one-time `grant_token` went out in a poll answer. */
    tokenDeliveredAt: integer('token_delivered_at'),
  },
  (t) => [index('agent_consents_key_idx').on(t.apiKeyId), index('agent_consents_workspace_idx').on(t.workspaceId, t.id)],
);

/**
 * Spec 3.4: an agent asking (`POST /agents/request-permission`) for one more scope. A granted
 * `session` or `one_time` request is itself the grant the scope check honours.
 */
export const permissionRequests = sqliteTable(
  'permission_requests',
  {
    id: text('id').primaryKey(),
    ...keyColumns(),
    scope: text('scope').notNull(),
    reason: text('reason').notNull(),
    /** The mode the agent asked for, after the default rule (docs/auth.md). */
    requestedMode: text('requested_mode', { enum: GRANT_MODES }).notNull(),
    /** The mode granted: the approver may change it. */
    mode: text('mode', { enum: GRANT_MODES }),
    status: text('status', { enum: DECISION_STATUSES }).notNull(),
    linkCodeHash: text('link_code_hash').notNull().unique(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    decidedAt: integer('decided_at'),
    /** End of a `session` (1 hour) or `one_time` (5 minutes) grant; null for `persistent`. */
    grantExpiresAt: integer('grant_expires_at'),
    /** When the request that used a `one_time` grant claimed it. */
    consumedAt: integer('consumed_at'),
    /** When the scope was revoked from the key (`DELETE /agents/:keyId/scopes/:scope`). */
    revokedAt: integer('revoked_at'),
    /** SHA-256 of the `x-permission-grant` token, set when it is delivered (once). */
    grantTokenHash: text('grant_token_hash').unique(),
  },
  (t) => [index('permission_requests_key_scope_idx').on(t.apiKeyId, t.scope, t.status), index('permission_requests_workspace_idx').on(t.workspaceId, t.id)],
);

export const DEVICE_STATUSES = ['pending', 'approved', 'denied', 'delivered'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

/** Spec 5.2: the device flow (RFC 8628) that mints a workspace-bound key for an agent. */
export const deviceActivations = sqliteTable('device_activations', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  /** SHA-256 of the device code: only the agent ever holds the code itself. */
  deviceCodeHash: text('device_code_hash').notNull().unique(),
  /** SHA-256 of the normalised user code. */
  userCodeHash: text('user_code_hash').notNull().unique(),
  clientLabel: text('client_label').notNull(),
  status: text('status', { enum: DEVICE_STATUSES }).notNull(),
  /** Seconds the agent must wait between polls; raised by 5 on every `slow_down` (RFC 8628 3.5). */
  intervalSeconds: integer('interval_seconds').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  lastPolledAt: integer('last_polled_at'),
  /** The confirming person and their workspace, bound at confirm. */
  userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  workspaceId: text('workspace_id').references(() => workspaces.id, { onDelete: 'cascade' }),
  decidedAt: integer('decided_at'),
  /** The key minted when the approval was collected. */
  apiKeyId: integer('api_key_id').references(() => apiKeys.id, { onDelete: 'set null' }),
  deliveredAt: integer('delivered_at'),
});

export type AgentConsentRow = typeof agentConsents.$inferSelect;
export type PermissionRequestRow = typeof permissionRequests.$inferSelect;
export type DeviceActivationRow = typeof deviceActivations.$inferSelect;
