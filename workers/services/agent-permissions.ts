import { and, eq, gt, isNull, lte, type SQL, sql } from 'drizzle-orm';
import { z } from 'zod';
import {
  agentConsents,
  apiKeys,
  type AgentConsentRow,
  type ApiKeyRow,
  GRANT_MODES,
  type GrantMode,
  permissionRequests,
  type PermissionRequestRow,
} from '../../schema';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import { GRANT_TOKEN_HEADER, grantTokenHash, hasSessionGrant } from '../auth/grants';
import { DEFAULT_KEY_SCOPES, hasScope, isKnownScope, isSensitiveScope, WILDCARD } from '../auth/scopes';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { Db } from '../env';
import { AppError, invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { randomToken } from '../lib/crypto';
import { formatId, isUuid, parseId, parseUuidCursor, uuidv7 } from '../lib/ids';
import { cursorPage, mapPage } from '../lib/pagination';
import { normalizeUserCode, userCodeHash } from '../lib/user-codes';
import { ApiKeyRecord, presentApiKey } from './api-keys';
import { recordChange } from './audit';
import { decideOnce, decisionOf, requirePending, withFreshCode } from './pending-decisions';

/** Spec 5.5 and 8: a consent or request waits 5 minutes for its decision. */
export const DECISION_WINDOW_MS = 5 * 60_000;
/** Spec 8: agents poll a consent every 3 s and a permission request every 2 s. */
export const CONNECT_POLL_INTERVAL_SECONDS = 3;
export const REQUEST_POLL_INTERVAL_SECONDS = 2;
/** Spec 5.5: grant lifetimes. A persistent grant lives on the key until revoked. */
export const SESSION_GRANT_MS = 3600_000;
export const ONE_TIME_GRANT_MS = 5 * 60_000;
/** Spec 5.5: at most 280 characters, shown verbatim. */
export const MAX_REASON_LENGTH = 280;

/** A scope an agent may ask for: a known one, never the legacy `*` (spec 5.4). */
const RequestableScope = z.string().max(100).refine(isKnownScope, { message: 'unknown scope' });

/** Counted in characters as people see them (code points), not UTF-16 units. */
const Reason = z
  .string()
  .refine((s) => s.trim().length > 0, { message: 'reason must not be empty' })
  .refine((s) => [...s].length <= MAX_REASON_LENGTH, { message: `reason must be at most ${MAX_REASON_LENGTH} characters` });

export const ConnectBody = z.object({
  requestedScopes: z.array(RequestableScope).max(64).optional(),
  agentDisplayName: z.string().trim().min(1).max(100).optional(),
  reason: z
    .string()
    .refine((s) => [...s].length <= MAX_REASON_LENGTH, { message: `reason must be at most ${MAX_REASON_LENGTH} characters` })
    .optional(),
});
export type ConnectBody = z.infer<typeof ConnectBody>;

export const RequestPermissionBody = z.object({
  scope: RequestableScope,
  reason: Reason,
  /** Spec 5.5: an omitted or unrecognised mode becomes `session`, so any value is accepted here. */
  mode: z.unknown().optional(),
});
export type RequestPermissionBody = z.infer<typeof RequestPermissionBody>;

export const ApproveConsentBody = z.object({ scopes: z.array(RequestableScope).min(1).max(64).optional() });
export type ApproveConsentBody = z.infer<typeof ApproveConsentBody>;

export const ApproveRequestBody = z.object({ mode: z.enum(GRANT_MODES).optional() });
export type ApproveRequestBody = z.infer<typeof ApproveRequestBody>;

export const LinkCodeBody = z.object({ link_code: z.string().min(1).max(32) });
export type LinkCodeBody = z.infer<typeof LinkCodeBody>;

/** The query of the app's lists of consents and of permission requests. */
export const DecisionsQuery = z.object({
  status: z.enum(['pending', 'granted', 'denied', 'expired']).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after_id: z.string().min(1).max(64).optional(),
  before_id: z.string().min(1).max(64).optional(),
});
export type DecisionsQuery = z.infer<typeof DecisionsQuery>;

/**
 * Spec 5.5's own rule for the request's `mode` field wins: omitted or unrecognised is
 * `session`, for read scopes too (docs/auth.md, "How an agent obtains a scope"). `one_time` is only
 * ever what the agent (or the approver) explicitly chose.
 */
export const effectiveMode = (mode: unknown): GrantMode =>
  typeof mode === 'string' && (GRANT_MODES as readonly string[]).includes(mode) ? (mode as GrantMode) : 'session';

/** How long a grant of `mode` decided at `t` lasts; null for persistent grants. */
const grantExpiry = (mode: GrantMode, t: number): number | null =>
  mode === 'session' ? t + SESSION_GRANT_MS : mode === 'one_time' ? t + ONE_TIME_GRANT_MS : null;

const scopeList = (scopes: readonly string[]) => scopes.map((scope) => ({ scope, sensitive: isSensitiveScope(scope) }));

/** The calling key's row. Agent routes admit unactivated keys, so this is read fresh. */
async function callingKey(db: Db, principal: Principal): Promise<ApiKeyRow> {
  const id = apiKeyIdOf(principal);
  const [row] = id === null ? [] : await db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
  if (!row) throw notFound('API key');
  return row;
}

const newGrantToken = () => `pgt_${randomToken(32)}`;

const approvalUrl = (baseUrl: string, linkCode: string) => `${baseUrl}/approve?code=${linkCode}`;

// ---------------------------------------------------------------------------------------------
// Connect (spec 3.3)

export interface ConnectActive {
  status: 'active';
  scopes: string[];
}
export interface ConnectPending {
  status: 'pending';
  consent_id: string;
  link_code: string;
  poll_url: string;
  poll_interval_seconds: number;
  approval_url: string;
  expires_at: string;
}

/**
 * `POST /agents/connect`: an active key already holding every requested scope is `active`
 * (200); anything else, and a `*` key always (so the person can narrow it), opens a consent.
 */
export async function connect(db: Db, principal: Principal, input: ConnectBody, baseUrl: string): Promise<ConnectActive | ConnectPending> {
  const key = await callingKey(db, principal);
  const scopes = [...new Set(input.requestedScopes?.length ? input.requestedScopes : DEFAULT_KEY_SCOPES)];
  if (key.status === 'active' && !key.scopes.includes(WILDCARD) && scopes.every((s) => key.scopes.includes(s))) {
    return { status: 'active', scopes: key.scopes };
  }
  const t = now();
  const id = uuidv7();
  const agentDisplayName = input.agentDisplayName ?? key.name;
  const { code: linkCode } = await withFreshCode((linkCodeHash) =>
    db.batch([
      db.insert(agentConsents).values({
        id,
        workspaceId: key.workspaceId,
        userId: key.userId,
        apiKeyId: key.id,
        agentDisplayName,
        reason: input.reason ?? '',
        requestedScopes: scopes,
        status: 'pending',
        linkCodeHash,
        createdAt: t,
        expiresAt: t + DECISION_WINDOW_MS,
      }),
      ...recordChange(db, principal, {
        action: 'agent.consent_requested',
        resourceType: 'agent_consent',
        resourceId: id,
        metadata: { agentDisplayName, scopes, apiKeyId: formatId('key', key.id) },
      }),
    ]),
  );
  return {
    status: 'pending',
    consent_id: id,
    link_code: linkCode,
    poll_url: `${baseUrl}/api/v1/agents/connect/poll/${id}`,
    poll_interval_seconds: CONNECT_POLL_INTERVAL_SECONDS,
    approval_url: approvalUrl(baseUrl, linkCode),
    expires_at: toIso(t + DECISION_WINDOW_MS),
  };
}

/** A consent of the calling key; anything else (unknown, another key's) is 404. */
async function ownConsentForKey(db: Db, principal: Principal, consentId: string): Promise<AgentConsentRow> {
  const keyId = apiKeyIdOf(principal);
  const [row] =
    keyId === null || !isUuid(consentId)
      ? []
      : await db
          .select()
          .from(agentConsents)
          .where(and(eq(agentConsents.id, consentId), eq(agentConsents.apiKeyId, keyId)))
          .limit(1);
  if (!row) throw notFound('Consent');
  return row;
}

export type ConnectPoll = { status: 'pending' | 'denied' | 'expired' } | { status: 'granted'; scopes: string[]; grant_token?: string; token_header?: string };

/**
 * `GET /agents/connect/poll/:consentId`. Once granted, `scopes` is the key's effective set; the
 * first granted answer alone carries `grant_token` (claimed by one conditional UPDATE, so two
 * racing polls cannot both get it). The approved scopes are on the key already, so the token
 * is a receipt: a retried call succeeds with or without it.
 */
export async function pollConsent(db: Db, principal: Principal, consentId: string): Promise<ConnectPoll> {
  const row = await ownConsentForKey(db, principal, consentId);
  const decision = decisionOf(row);
  if (decision !== 'granted') return { status: decision };
  const [key, claimed] = await Promise.all([
    callingKey(db, principal),
    db
      .update(agentConsents)
      .set({ tokenDeliveredAt: now() })
      .where(and(eq(agentConsents.id, row.id), isNull(agentConsents.tokenDeliveredAt)))
      .returning({ id: agentConsents.id }),
  ]);
  if (claimed.length === 0) return { status: 'granted', scopes: key.scopes };
  return { status: 'granted', scopes: key.scopes, grant_token: newGrantToken(), token_header: GRANT_TOKEN_HEADER };
}

// ---------------------------------------------------------------------------------------------
// The app's side: look up by link code, approve, deny (session only)

/** Rows the signed-in person may decide: those of their own keys in the current workspace. */
const decidable = <T extends typeof agentConsents | typeof permissionRequests>(table: T, principal: Principal) =>
  and(eq(table.workspaceId, principal.workspaceId), eq(table.userId, principal.userId));

export const ConsentRecord = z.object({
  kind: z.literal('consent'),
  consent_id: z.string(),
  status: z.enum(['pending', 'granted', 'denied', 'expired']),
  agent_display_name: z.string(),
  reason: z.string(),
  key: z.object({ id: z.string(), name: z.string() }),
  requested_scopes: z.array(z.object({ scope: z.string(), sensitive: z.boolean() })),
  granted_scopes: z.array(z.string()).nullable(),
  created_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
});
export type ConsentRecord = z.infer<typeof ConsentRecord>;

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

const isoOrNull = (ms: number | null) => (ms === null ? null : toIso(ms));

const presentConsent = (row: AgentConsentRow, keyName: string): ConsentRecord => ({
  kind: 'consent',
  consent_id: row.id,
  status: decisionOf(row),
  agent_display_name: row.agentDisplayName,
  reason: row.reason,
  key: { id: formatId('key', row.apiKeyId), name: keyName },
  requested_scopes: scopeList(row.requestedScopes),
  granted_scopes: row.grantedScopes,
  created_at: toIso(row.createdAt),
  expires_at: toIso(row.expiresAt),
  decided_at: isoOrNull(row.decidedAt),
});

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

async function decidableConsent(db: Db, principal: Principal, where: SQL) {
  const [found] = await db
    .select({ consent: agentConsents, keyName: apiKeys.name })
    .from(agentConsents)
    .innerJoin(apiKeys, eq(apiKeys.id, agentConsents.apiKeyId))
    .where(and(decidable(agentConsents, principal), where))
    .limit(1);
  return found;
}

async function decidableRequest(db: Db, principal: Principal, where: SQL) {
  const [found] = await db
    .select({ request: permissionRequests, keyName: apiKeys.name })
    .from(permissionRequests)
    .innerJoin(apiKeys, eq(apiKeys.id, permissionRequests.apiKeyId))
    .where(and(decidable(permissionRequests, principal), where))
    .limit(1);
  return found;
}

/**
 * `POST /agents/connect/by-code`: what a link code stands for, a consent or a permission
 * request, in any state. Only the key's owner, acting in the key's workspace, finds it: any
 * other code is 404.
 */
export async function findByLinkCode(db: Db, principal: Principal, input: LinkCodeBody): Promise<ConsentRecord | PermissionRequestRecord> {
  const code = normalizeUserCode(input.link_code);
  if (code === null) throw notFound('Link code');
  const hash = await userCodeHash(code);
  const consent = await decidableConsent(db, principal, eq(agentConsents.linkCodeHash, hash));
  if (consent) return presentConsent(consent.consent, consent.keyName);
  const request = await decidableRequest(db, principal, eq(permissionRequests.linkCodeHash, hash));
  if (request) return presentRequest(request.request, request.keyName);
  throw notFound('Link code');
}

export async function getConsent(db: Db, principal: Principal, consentId: string): Promise<ConsentRecord> {
  const { consent, keyName } = await requireConsent(db, principal, consentId);
  return presentConsent(consent, keyName);
}

async function requireConsent(db: Db, principal: Principal, consentId: string) {
  const found = isUuid(consentId) ? await decidableConsent(db, principal, eq(agentConsents.id, consentId)) : undefined;
  if (!found) throw notFound('Consent');
  return found;
}

async function requireRequest(db: Db, principal: Principal, requestId: string) {
  const found = isUuid(requestId) ? await decidableRequest(db, principal, eq(permissionRequests.id, requestId)) : undefined;
  if (!found) throw notFound('Permission request');
  return found;
}

/**
 * Approves a consent, optionally narrowing it to `scopes` (a subset of the request). The
 * scopes are merged into the key, except on a `*` key, whose scopes become exactly the approved
 * set (the point of always asking for `*` keys); an unactivated key becomes active.
 */
export async function approveConsent(
  db: Db,
  gates: CredentialGates,
  principal: Principal,
  consentId: string,
  input: ApproveConsentBody,
): Promise<ConsentRecord & { scopes: string[] }> {
  const { consent } = await requireConsent(db, principal, consentId);
  requirePending(consent, 'consent');
  const granted = [...new Set(input.scopes ?? consent.requestedScopes)];
  const extra = granted.find((s) => !consent.requestedScopes.includes(s));
  if (extra !== undefined) throw invalidInput('scopes', 'subset', `"${extra}" was not requested: approve a subset of the requested scopes`);

  const approved = JSON.stringify(granted);
  await decideOnce(db, {
    table: agentConsents,
    id: consent.id,
    what: 'consent',
    status: 'granted',
    t: now(),
    set: { grantedScopes: granted },
    audit: (resourceId) =>
      recordChange(db, principal, {
        action: 'agent.consent_approved',
        resourceType: 'agent_consent',
        resourceId,
        metadata: { apiKeyId: formatId('key', consent.apiKeyId), scopes: granted, sensitive: granted.filter(isSensitiveScope) },
        activity: `${consent.agentDisplayName} was granted ${granted.join(', ')}`,
      }),
    effects: [
      // Merged in SQL, so a concurrent change to the key's scopes is not overwritten.
      db
        .update(apiKeys)
        .set({
          scopes: sql`CASE WHEN EXISTS (SELECT 1 FROM json_each(${apiKeys.scopes}) WHERE value = ${WILDCARD}) THEN json(${approved})
            ELSE (SELECT json_group_array(value) FROM (SELECT value FROM json_each(${apiKeys.scopes}) UNION SELECT value FROM json_each(${approved}))) END`,
          status: sql`CASE WHEN ${apiKeys.status} = 'unactivated' THEN 'active' ELSE ${apiKeys.status} END`,
        })
        .where(eq(apiKeys.id, consent.apiKeyId)),
    ],
  });
  await credentialsChanged(gates, principal.userId);
  const [[row], [key]] = await Promise.all([
    db.select().from(agentConsents).where(eq(agentConsents.id, consent.id)),
    db.select().from(apiKeys).where(eq(apiKeys.id, consent.apiKeyId)),
  ]);
  return { ...presentConsent(row!, key!.name), scopes: key!.scopes };
}

export async function denyConsent(db: Db, principal: Principal, consentId: string): Promise<ConsentRecord> {
  const { consent, keyName } = await requireConsent(db, principal, consentId);
  requirePending(consent, 'consent');
  const t = now();
  await decideOnce(db, {
    table: agentConsents,
    id: consent.id,
    what: 'consent',
    status: 'denied',
    t,
    audit: (resourceId) =>
      recordChange(db, principal, {
        action: 'agent.consent_denied',
        resourceType: 'agent_consent',
        resourceId,
        metadata: { apiKeyId: formatId('key', consent.apiKeyId) },
      }),
  });
  return presentConsent({ ...consent, status: 'denied', decidedAt: t }, keyName);
}

// ---------------------------------------------------------------------------------------------
// Permission escalation (spec 3.4)

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
export async function requestPermission(db: Db, principal: Principal, input: RequestPermissionBody, baseUrl: string): Promise<RequestPermissionAnswer> {
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

/**
 * `GET /agents/request-permission/poll/:requestId`. A persistent grant answers status and mode
 * only (spec 5.5); a time-boxed one adds `expires_at`, and its first granted answer carries the
 * grant's `x-permission-grant` token, stored hashed and claimed by one conditional UPDATE.
 */
export async function pollPermissionRequest(db: Db, principal: Principal, requestId: string): Promise<RequestPoll> {
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

/** A status as the lists show it: a pending decision whose window has passed is `expired`. */
const statusFilter = <T extends typeof agentConsents | typeof permissionRequests>(table: T, status: DecisionsQuery['status'], t: number) => {
  switch (status) {
    case undefined:
      return undefined;
    case 'pending':
      return and(eq(table.status, 'pending'), gt(table.expiresAt, t));
    case 'expired':
      return and(eq(table.status, 'pending'), lte(table.expiresAt, t));
    default:
      return eq(table.status, status);
  }
};

/** `GET /agents/consents`: the person's agent consents in this workspace, newest first. */
export async function listConsents(db: Db, principal: Principal, query: DecisionsQuery) {
  const page = await cursorPage(
    query,
    {
      column: agentConsents.id,
      parseCursor: parseUuidCursor,
      publicId: (row: { consent: AgentConsentRow }) => row.consent.id,
      fetch: (where, orderBy, limit) =>
        db
          .select({ consent: agentConsents, keyName: apiKeys.name })
          .from(agentConsents)
          .innerJoin(apiKeys, eq(apiKeys.id, agentConsents.apiKeyId))
          .where(where)
          .orderBy(orderBy)
          .limit(limit),
    },
    and(decidable(agentConsents, principal), statusFilter(agentConsents, query.status, now())),
  );
  return mapPage(page, (row) => presentConsent(row.consent, row.keyName));
}

/** `GET /agents/permission-requests`: the person's requests in this workspace, newest first. */
export async function listPermissionRequests(db: Db, principal: Principal, query: DecisionsQuery) {
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
  db: Db,
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

export async function denyPermissionRequest(db: Db, principal: Principal, requestId: string): Promise<PermissionRequestRecord> {
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

// ---------------------------------------------------------------------------------------------
// Revoking one scope (spec 5.5)

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
export async function revokeScope(db: Db, gates: CredentialGates, principal: Principal, params: RevokeScopeParams): Promise<ApiKeyRecord> {
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
