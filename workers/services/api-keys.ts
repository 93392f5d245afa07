import { and, eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { API_KEY_STATUSES, apiKeys, type ApiKeyRow } from '../../schema';
import { credentialHash, newApiKey } from '../auth/credentials';
import type { Principal } from '../auth/principal';
import { DEFAULT_KEY_SCOPES, hasScope, isKnownScope, WILDCARD } from '../auth/scopes';
import { credentialsChanged, type CredentialGates } from '../auth/credential-changes';
import type { GlobalDb } from '../env';
import { forbidden, notFound } from '../errors';
import { now, toIso } from '../lib/clock';
import { formatId, parseId } from '../lib/ids';
import { byIntegerId, type CursorQuery, cursorPage, mapPage } from '../lib/pagination';
import { recordChange } from './audit';

const ScopeName = z
  .string()
  .max(100)
  .refine((s) => s === WILDCARD || isKnownScope(s), { message: 'unknown scope' });

export const CreateApiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(ScopeName).min(1).max(64).optional(),
  /** The app's agents screen: the key starts unactivated until its scopes are approved. */
  pendingActivation: z.boolean().optional(),
});
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

export const ApiKeyRecord = z.object({
  id: z.string(),
  name: z.string(),
  keyPreview: z.string(),
  scopes: z.array(z.string()),
  status: z.enum(API_KEY_STATUSES),
  workspaceId: z.string(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecord>;

/** The create response is the only place the full key ever appears. */
export const CreatedApiKey = ApiKeyRecord.extend({ key: z.string() });
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

export const presentApiKey = (row: ApiKeyRow): ApiKeyRecord => ({
  id: formatId('key', row.id),
  name: row.name,
  keyPreview: row.keyPreview,
  scopes: row.scopes,
  status: row.status,
  workspaceId: row.workspaceId,
  createdAt: toIso(row.createdAt),
  revokedAt: row.revokedAt === null ? null : toIso(row.revokedAt),
});

/** A person's keys in the credential's workspace: the only keys a caller can see or touch. */
const ownKeys = (principal: Principal) => and(eq(apiKeys.workspaceId, principal.workspaceId), eq(apiKeys.userId, principal.userId));

export async function listApiKeys(db: GlobalDb, principal: Principal, query: CursorQuery) {
  const page = await cursorPage(
    query,
    byIntegerId(apiKeys.id, (where, orderBy, limit) => db.select().from(apiKeys).where(where).orderBy(orderBy).limit(limit), 'key'),
    ownKeys(principal),
  );
  return mapPage(page, presentApiKey);
}

/** A key can hand out only what it holds; a person (session) can grant any known scope. */
function grantableScopes(principal: Principal, requested: string[] | undefined): string[] {
  const scopes = [...new Set(requested ?? DEFAULT_KEY_SCOPES)];
  const missing = scopes.find((s) => !hasScope(principal.scopes, s) || (s === WILDCARD && !principal.scopes.includes(WILDCARD)));
  if (missing) throw forbidden(`A key cannot grant the scope "${missing}", which it does not hold`, { scope: missing });
  return scopes;
}

export async function createApiKey(db: GlobalDb, principal: Principal, input: CreateApiKeyBody): Promise<CreatedApiKey> {
  const scopes = grantableScopes(principal, input.scopes);
  const { key, preview } = newApiKey();
  const keyHash = await credentialHash(key);
  const [[row]] = await db.batch([
    db
      .insert(apiKeys)
      .values({
        userId: principal.userId,
        workspaceId: principal.workspaceId,
        name: input.name,
        keyHash,
        keyPreview: preview,
        scopes,
        status: input.pendingActivation ? 'unactivated' : 'active',
        createdAt: now(),
      })
      .returning(),
    ...recordChange(db, principal, {
      action: 'api_key.created',
      resourceType: 'api_key',
      resourceId: sql`(SELECT 'key_' || ${apiKeys.id} FROM ${apiKeys} WHERE ${apiKeys.keyHash} = ${keyHash})`,
      metadata: { name: input.name, scopes },
      activity: `API key "${input.name}" was created`,
    }),
  ]);
  return { ...presentApiKey(row!), key };
}

export async function revokeApiKey(db: GlobalDb, gates: CredentialGates, principal: Principal, rawId: string): Promise<ApiKeyRecord> {
  const id = parseId('key', rawId);
  const [row] =
    id === null
      ? []
      : await db
          .select()
          .from(apiKeys)
          .where(and(ownKeys(principal), eq(apiKeys.id, id)))
          .limit(1);
  if (!row) throw notFound('API key');
  if (row.status === 'revoked') return presentApiKey(row);
  const [[updated]] = await db.batch([
    db.update(apiKeys).set({ status: 'revoked', revokedAt: now() }).where(eq(apiKeys.id, row.id)).returning(),
    ...recordChange(db, principal, {
      action: 'api_key.revoked',
      resourceType: 'api_key',
      resourceId: formatId('key', row.id),
      activity: `API key "${row.name}" was revoked`,
    }),
  ]);
  await credentialsChanged(gates, row.userId);
  return presentApiKey(updated!);
}
