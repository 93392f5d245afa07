import { and, eq, isNull, type SQL, sql } from 'drizzle-orm';
import { z } from 'zod';
import { agentConsents, apiKeys, type AgentConsentRow } from '../../schema';
import { apiKeyIdOf, type Principal } from '../auth/principal';
import { GRANT_TOKEN_HEADER } from '../auth/grants';
import { DEFAULT_KEY_SCOPES, isSensitiveScope, WILDCARD } from '../auth/scopes';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { GlobalDb } from '../env';
import { invalidInput, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { formatId, isUuid, parseUuidCursor, uuidv7 } from '../lib/ids';
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
import { recordChange } from './audit';
import { decideOnce, decisionOf, requirePending, withFreshCode } from './pending-decisions';

/**
 * Agent consents (spec 3.3): an agent connects with its key and asks for a set of scopes; the
 * key's owner approves (all or some of them) or denies in the app, and the agent polls.
 */

/** Spec 8: agents poll a consent every 3 s. */
const CONNECT_POLL_INTERVAL_SECONDS = 3;

export const ConnectBody = z.object({
  requestedScopes: z.array(RequestableScope).max(64).optional(),
  agentDisplayName: z.string().trim().min(1).max(100).optional(),
  reason: z
    .string()
    .refine((s) => [...s].length <= MAX_REASON_LENGTH, { message: `reason must be at most ${MAX_REASON_LENGTH} characters` })
    .optional(),
});
export type ConnectBody = z.infer<typeof ConnectBody>;

export const ApproveConsentBody = z.object({ scopes: z.array(RequestableScope).min(1).max(64).optional() });
export type ApproveConsentBody = z.infer<typeof ApproveConsentBody>;

const scopeList = (scopes: readonly string[]) => scopes.map((scope) => ({ scope, sensitive: isSensitiveScope(scope) }));

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
export async function connect(db: GlobalDb, principal: Principal, input: ConnectBody, baseUrl: string): Promise<ConnectActive | ConnectPending> {
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
async function ownConsentForKey(db: GlobalDb, principal: Principal, consentId: string): Promise<AgentConsentRow> {
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
export async function pollConsent(db: GlobalDb, principal: Principal, consentId: string): Promise<ConnectPoll> {
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

async function decidableConsent(db: GlobalDb, principal: Principal, where: SQL) {
  const [found] = await db
    .select({ consent: agentConsents, keyName: apiKeys.name })
    .from(agentConsents)
    .innerJoin(apiKeys, eq(apiKeys.id, agentConsents.apiKeyId))
    .where(and(decidable(agentConsents, principal), where))
    .limit(1);
  return found;
}

/** The consent a link code stands for (by its hash), when the signed-in person may decide it. */
export async function consentByLinkCode(db: GlobalDb, principal: Principal, codeHash: string): Promise<ConsentRecord | undefined> {
  const found = await decidableConsent(db, principal, eq(agentConsents.linkCodeHash, codeHash));
  return found && presentConsent(found.consent, found.keyName);
}

export async function getConsent(db: GlobalDb, principal: Principal, consentId: string): Promise<ConsentRecord> {
  const { consent, keyName } = await requireConsent(db, principal, consentId);
  return presentConsent(consent, keyName);
}

async function requireConsent(db: GlobalDb, principal: Principal, consentId: string) {
  const found = isUuid(consentId) ? await decidableConsent(db, principal, eq(agentConsents.id, consentId)) : undefined;
  if (!found) throw notFound('Consent');
  return found;
}

/**
 * Approves a consent, optionally narrowing it to `scopes` (a subset of the request). The
 * scopes are merged into the key, except on a `*` key, whose scopes become exactly the approved
 * set (the point of always asking for `*` keys); an unactivated key becomes active.
 */
export async function approveConsent(
  db: GlobalDb,
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

export async function denyConsent(db: GlobalDb, principal: Principal, consentId: string): Promise<ConsentRecord> {
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

/** `GET /agents/consents`: the person's agent consents in this workspace, newest first. */
export async function listConsents(db: GlobalDb, principal: Principal, query: DecisionsQuery) {
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
