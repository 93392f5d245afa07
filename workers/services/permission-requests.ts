import { and, eq, isNull, type SQL, sql } from 'drizzle-orm';
import { z } from 'zod';
import { apiKeys, GRANT_MODES, type GrantMode, permissionRequests, type PermissionRequestRow } from '../../schema';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import { GRANT_TOKEN_HEADER, grantTokenHash, hasSessionGrant } from '../auth/grants';
import { hasScope, isKnownScope, isSensitiveScope, WILDCARD } from '../auth/scopes';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { GlobalDb } from '../env';
import { AppError, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { formatId, isUuid, parseId, parseUuidCursor, uuidv7 } from '../lib/ids';
import { cursorPage, mapPage } from '../lib/pagination';
import {
  approvalUrl,
  callingKey,
  DECISION_WINDOW_MS,
  decidable,
  type DecisionsQuery,
  isoOrNull,
  MAX_REASON_LENGTH,
  newGrantToken,
  RequestableScope,
  statusFilter,
} from './agent-requests';
import { ApiKeyRecord, presentApiKey } from './api-keys';
import { recordChange } from './audit';
import { decideOnce, decisionOf, requirePending, withFreshCode } from './pending-decisions';

/**
 * Permission requests (spec 3.4, 5.5): an active key asks for one more scope, persistently, for
 * a session or for one use; its owner approves or denies in the app, the agent polls for the
 * grant; and the owner can take a scope off a key again.
 */

/** Spec 8: agents poll a permission request every 2 s. */
const REQUEST_POLL_INTERVAL_SECONDS = 2;
/** Spec 5.5: grant lifetimes. A persistent grant lives on the key until revoked. */
const SESSION_GRANT_MS = 3600_000;
const ONE_TIME_GRANT_MS = 5 * 60_000;

/** Counted in characters as people see them (code points), not UTF-16 units. */
const Reason = z
  .string()
  .refine((s) => s.trim().length > 0, { message: 'reason must not be empty' })
  .refine((s) => [...s].length <= MAX_REASON_LENGTH, { message: `reason must be at most ${MAX_REASON_LENGTH} characters` });

export const RequestPermissionBody = z.object({
  scope: RequestableScope,
  reason: Reason,
  /** Spec 5.5: an omitted or unrecognised mode becomes `session`, so any value is accepted here. */
  mode: z.unknown().optional(),
});
export type RequestPermissionBody = z.infer<typeof RequestPermissionBody>;

export const ApproveRequestBody = z.object({ mode: z.enum(GRANT_MODES).optional() });
export type ApproveRequestBody = z.infer<typeof ApproveRequestBody>;

/**
 * Spec 5.5's own rule for the request's `mode` field wins: omitted or unrecognised is
 * `session`, for read scopes too (docs/auth.md, "How an agent obtains a scope"). `one_time` is only
 * ever what the agent (or the approver) explicitly chose.
 */
const effectiveMode = (mode: unknown): GrantMode =>
  typeof mode === 'string' && (GRANT_MODES as readonly string[]).includes(mode) ? (mode as GrantMode) : 'session';

/** How long a grant of `mode` decided at `t` lasts; null for persistent grants. */
const grantExpiry = (mode: GrantMode, t: number): number | null =>
  mode === 'session' ? t + SESSION_GRANT_MS : mode === 'one_time' ? t + ONE_TIME_GRANT_MS : null;

export const PermissionRequestRecord = z.object({
  kind: z.literal('permission_request'),
  request_id: z.string(),
  status: z.enum(['pending', 'granted', 'denied', 'expired']),
  scope: z.string(),
  sensitive: z.boolean(),
  reason: z.string(),
  requested_mode: z.enum(GRANT_MODES),
  mode: z.enum(GRANT_MODES).nullable(),
  key: z.object({ id: z.string(), name: z.string() }),
  created_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
  grant_expires_at: z.string().nullable(),
});
export type PermissionRequestRecord = z.infer<typeof PermissionRequestRecord>;

const presentRequest = (row: PermissionRequestRow, keyName: string): PermissionRequestRecord => ({
  kind: 'permission_request',
  request_id: row.id,
  status: decisionOf(row),
  scope: row.scope,
  sensitive: isSensitiveScope(row.scope),
  reason: row.reason,
  requested_mode: row.requestedMode,
  mode: row.mode,
  key: { id: formatId('key', row.apiKeyId), name: keyName },
  created_at: toIso(row.createdAt),
  expires_at: toIso(row.expiresAt),
  decided_at: isoOrNull(row.decidedAt),
  grant_expires_at: isoOrNull(row.grantExpiresAt),
});

async function decidableRequest(db: GlobalDb, principal: Principal, where: SQL) {
  const [found] = await db
    .select({ request: permissionRequests, keyName: apiKeys.name })
    .from(permissionRequests)
    .innerJoin(apiKeys, eq(apiKeys.id, permissionRequests.apiKeyId))
    .where(and(decidable(permissionRequests, principal), where))
    .limit(1);
  return found;
}

/** The permission request a link code stands for (by its hash), when the signed-in person may decide it. */
export async function requestByLinkCode(db: GlobalDb, principal: Principal, codeHash: string): Promise<PermissionRequestRecord | undefined> {
  const found = await decidableRequest(db, principal, eq(permissionRequests.linkCodeHash, codeHash));
  return found && presentRequest(found.request, found.keyName);
}

async function requireRequest(db: GlobalDb, principal: Principal, requestId: string) {
  const found = isUuid(requestId) ? await decidableRequest(db, principal, eq(permissionRequests.id, requestId)) : undefined;
  if (!found) throw notFound('Permission request');
  return found;
}

export type RequestPermissionAnswer =
  | { status: 'already_granted'; grant_token: null }
  | {
      status: 'pending';
      request_id: string;
      poll_url: string;
      poll_interval_seconds: number;
      link_code: string;
      approval_url: string;
      mode: GrantMode;
      expires_at: string;
    };

/**
 * `POST /agents/request-permission`. The key must be active (409 `ACTIVATION_REQUIRED`
 * pointing at connect otherwise); a scope the key holds, or holds for this session, is
 * `already_granted`; anything else opens a request for the person to decide.
 */
export async function requestPermission(db: GlobalDb, principal: Principal, input: RequestPermissionBody, baseUrl: string): Promise<RequestPermissionAnswer> {
  const key = await callingKey(db, principal);
  if (key.status !== 'active') {
    throw new AppError('ACTIVATION_REQUIRED', 409, 'This key is not activated yet: connect first and have its scopes approved', {
      activation_url: `${baseUrl}/api/v1/agents/connect`,
    });
  }
  if (hasScope(key.scopes, input.scope) || (await hasSessionGrant(db, key.id, input.scope))) {
    return { status: 'already_granted', grant_token: null };
  }
  const t = now();
  const id = uuidv7();
  const mode = effectiveMode(input.mode);
  const { code: linkCode } = await withFreshCode((linkCodeHash) =>
    db.batch([
      db.insert(permissionRequests).values({
        id,
        workspaceId: key.workspaceId,
        userId: key.userId,
        apiKeyId: key.id,
        scope: input.scope,
        reason: input.reason,
        requestedMode: mode,
        status: 'pending',
        linkCodeHash,
        createdAt: t,
        expiresAt: t + DECISION_WINDOW_MS,
      }),
      ...recordChange(db, principal, {
        action: 'agent.permission_requested',
        resourceType: 'permission_request',
        resourceId: id,
        metadata: { scope: input.scope, mode, apiKeyId: formatId('key', key.id) },
      }),
    ]),
  );
  return {
    status: 'pending',
    request_id: id,
    poll_url: `${baseUrl}/api/v1/agents/request-permission/poll/${id}`,
    poll_interval_seconds: REQUEST_POLL_INTERVAL_SECONDS,
    link_code: linkCode,
    approval_url: approvalUrl(baseUrl, linkCode),
    mode,
    expires_at: toIso(t + DECISION_WINDOW_MS),
  };
}

export type RequestPoll =
  | { status: 'pending' | 'denied' | 'expired' }
  | { status: 'granted'; mode: 'persistent' }
  | { status: 'granted'; mode: 'session' | 'one_time'; expires_at: string | null; grant_token?: string; token_header?: string };

/** A permission request of the calling key, or 404. */
async function keysRequest(db: GlobalDb, principal: Principal, requestId: string): Promise<PermissionRequestRow> {
  const keyId = apiKeyIdOf(principal);
  const [row] =
    keyId === null || !isUuid(requestId)
      ? []
      : await db
          .select()
          .from(permissionRequests)
          .where(and(eq(permissionRequests.id, requestId), eq(permissionRequests.apiKeyId, keyId)))
          .limit(1);
  if (!row) throw notFound('Permission request');
  return row;
}

/** Where the calling key's request stands, read without claiming its grant token (the poll's first granted answer keeps it). */
export const permissionRequestStatus = async (db: GlobalDb, principal: Principal, requestId: string) => decisionOf(await keysRequest(db, principal, requestId));

/**
 * `GET /agents/request-permission/poll/:requestId`. A persistent grant answers status and mode
 * only (spec 5.5); a time-boxed one adds `expires_at`, and its first granted answer carries the
 * grant's `x-permission-grant` token, stored hashed and claimed by one conditional UPDATE.
 */
export async function pollPermissionRequest(db: GlobalDb, principal: Principal, requestId: string): Promise<RequestPoll> {
  const row = await keysRequest(db, principal, requestId);
  const decision = decisionOf(row);
  if (decision !== 'granted') return { status: decision };
  if (row.mode === 'persistent' || row.mode === null) return { status: 'granted', mode: 'persistent' };
  const answer = { status: 'granted' as const, mode: row.mode, expires_at: isoOrNull(row.grantExpiresAt) };
  const token = newGrantToken();
  const claimed = await db
    .update(permissionRequests)
    .set({ grantTokenHash: await grantTokenHash(token) })
    .where(and(eq(permissionRequests.id, row.id), isNull(permissionRequests.grantTokenHash)))
    .returning({ id: permissionRequests.id });
  return claimed.length === 1 ? { ...answer, grant_token: token, token_header: GRANT_TOKEN_HEADER } : answer;
}

/** `GET /agents/permission-requests`: the person's requests in this workspace, newest first. */
export async function listPermissionRequests(db: GlobalDb, principal: Principal, query: DecisionsQuery) {
  const page = await cursorPage(
    query,
    {
      column: permissionRequests.id,
      parseCursor: parseUuidCursor,
      publicId: (row: { request: PermissionRequestRow }) => row.request.id,
      fetch: (where, orderBy, limit) =>
        db
          .select({ request: permissionRequests, keyName: apiKeys.name })
          .from(permissionRequests)
          .innerJoin(apiKeys, eq(apiKeys.id, permissionRequests.apiKeyId))
          .where(where)
          .orderBy(orderBy)
          .limit(limit),
    },
    and(decidable(permissionRequests, principal), statusFilter(permissionRequests, query.status, now())),
  );
  return mapPage(page, (row) => presentRequest(row.request, row.keyName));
}

/**
 * Approves a permission request with the agent's mode or the approver's `mode`: persistent
 * writes the scope to the key; session and one-time record a grant that expires after 1 hour
 * and 5 minutes (the one-time grant also ends at its first use).
 */
export async function approvePermissionRequest(
  db: GlobalDb,
  gates: CredentialGates,
  principal: Principal,
  requestId: string,
  input: ApproveRequestBody,
): Promise<PermissionRequestRecord> {
  const { request, keyName } = await requireRequest(db, principal, requestId);
  requirePending(request, 'permission request');
  const t = now();
  const mode = input.mode ?? request.requestedMode;
  const scope = JSON.stringify([request.scope]);
  await decideOnce(db, {
    table: permissionRequests,
    id: request.id,
    what: 'permission request',
    status: 'granted',
    t,
    set: { mode, grantExpiresAt: grantExpiry(mode, t) },
    audit: (resourceId) =>
      recordChange(db, principal, {
        action: 'agent.permission_granted',
        resourceType: 'permission_request',
        resourceId,
        metadata: { apiKeyId: formatId('key', request.apiKeyId), scope: request.scope, mode, sensitive: isSensitiveScope(request.scope) },
        activity: `${keyName} was granted ${request.scope} (${mode.replace('_', '-')})`,
      }),
    effects:
      mode === 'persistent'
        ? [
            db
              .update(apiKeys)
              .set({
                scopes: sql`(SELECT json_group_array(value) FROM (SELECT value FROM json_each(${apiKeys.scopes}) UNION SELECT value FROM json_each(${scope})))`,
              })
              .where(eq(apiKeys.id, request.apiKeyId)),
          ]
        : [],
  });
  if (mode === 'persistent') await credentialsChanged(gates, principal.userId);
  return presentRequest({ ...request, status: 'granted', mode, decidedAt: t, grantExpiresAt: grantExpiry(mode, t) }, keyName);
}

export async function denyPermissionRequest(db: GlobalDb, principal: Principal, requestId: string): Promise<PermissionRequestRecord> {
  const { request, keyName } = await requireRequest(db, principal, requestId);
  requirePending(request, 'permission request');
  const t = now();
  await decideOnce(db, {
    table: permissionRequests,
    id: request.id,
    what: 'permission request',
    status: 'denied',
    t,
    audit: (resourceId) =>
      recordChange(db, principal, {
        action: 'agent.permission_denied',
        resourceType: 'permission_request',
        resourceId,
        metadata: { apiKeyId: formatId('key', request.apiKeyId), scope: request.scope },
      }),
  });
  return presentRequest({ ...request, status: 'denied', decidedAt: t }, keyName);
}

export const RevokeScopeParams = z.object({
  keyId: z.string().min(1).max(40),
  scope: z
    .string()
    .max(100)
    .refine((s) => s === WILDCARD || isKnownScope(s), { message: 'unknown scope' }),
});
export type RevokeScopeParams = z.infer<typeof RevokeScopeParams>;

/**
 * `DELETE /agents/:keyId/scopes/:scope`: takes the scope off one of the caller's keys in this
 * workspace and ends its unexpired session and one-time grants. A scope the key lacks is
 * harmless (the answer is the unchanged key).
 */
export async function revokeScope(db: GlobalDb, gates: CredentialGates, principal: Principal, params: RevokeScopeParams): Promise<ApiKeyRecord> {
  const id = parseId('key', params.keyId);
  const [key] =
    id === null
      ? []
      : await db
          .select()
          .from(apiKeys)
          .where(and(eq(apiKeys.id, id), eq(apiKeys.workspaceId, principal.workspaceId), eq(apiKeys.userId, principal.userId)))
          .limit(1);
  if (!key) throw notFound('API key');
  const t = now();
  const [[updated]] = await db.batch([
    db
      .update(apiKeys)
      .set({ scopes: sql`(SELECT json_group_array(value) FROM json_each(${apiKeys.scopes}) WHERE value <> ${params.scope})` })
      .where(eq(apiKeys.id, key.id))
      .returning(),
    db
      .update(permissionRequests)
      .set({ revokedAt: t })
      .where(
        and(
          eq(permissionRequests.apiKeyId, key.id),
          eq(permissionRequests.scope, params.scope),
          eq(permissionRequests.status, 'granted'),
          isNull(permissionRequests.revokedAt),
        ),
      ),
    ...recordChange(db, principal, {
      action: 'api_key.scope_revoked',
      resourceType: 'api_key',
      resourceId: formatId('key', key.id),
      metadata: { scope: params.scope },
      activity: `The scope ${params.scope} was revoked from API key "${key.name}"`,
    }),
  ]);
  await credentialsChanged(gates, key.userId);
  return presentApiKey(updated!);
}
