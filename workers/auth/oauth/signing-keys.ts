import { and, desc, isNotNull, isNull, lt } from 'drizzle-orm';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { oauthSigningKeys } from '../../../schema';
import type { GlobalDb } from '../../env';
import { now } from '../../lib/clock';
import { decryptSecret, encryptSecret } from '../../lib/encryption';
import { ID_TOKEN_TTL_S } from './metadata';

/**
 * RS256 keys that sign id_tokens. The private JWK is sealed under ENCRYPTION_KEY, bound to its
 * `kid`. The newest unretired key signs; rotation retires it, and a retired key stays published
 * at /auth/jwks for a day so id_tokens it signed (valid one hour) still verify.
 */
export const SIGNING_KEY_MAX_AGE_MS = 90 * 24 * 3600_000;
export const RETIRED_KEY_PUBLISHED_MS = 24 * 3600_000;

const context = (kid: string) => `oauth-signing-key:${kid}`;

/** Makes a new signing key and retires the previous ones, atomically. */
export async function rotateSigningKey(db: GlobalDb, encryptionKey: string | undefined): Promise<string> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = await exportJWK(privateKey);
  const sealed = await encryptSecret(encryptionKey, context(kid), JSON.stringify(privateJwk));
  const t = now();
  await db.batch([
    db.update(oauthSigningKeys).set({ retiredAt: t }).where(isNull(oauthSigningKeys.retiredAt)),
    db.insert(oauthSigningKeys).values({
      kid,
      publicJwk: { ...publicJwk, kid, alg: 'RS256', use: 'sig' },
      privateJwkCiphertext: sealed,
      createdAt: t,
    }),
  ]);
  return kid;
}

async function activeKey(db: GlobalDb, encryptionKey: string | undefined) {
  const [row] = await db.select().from(oauthSigningKeys).where(isNull(oauthSigningKeys.retiredAt)).orderBy(desc(oauthSigningKeys.createdAt)).limit(1);
  if (row) return row;
  await rotateSigningKey(db, encryptionKey);
  return activeKey(db, encryptionKey);
}

/** The published key set (RFC 7517): the signing key and recently retired ones. */
export async function jwks(db: GlobalDb, encryptionKey: string | undefined): Promise<{ keys: JWK[] }> {
  await activeKey(db, encryptionKey);
  const rows = await db.select().from(oauthSigningKeys).orderBy(desc(oauthSigningKeys.createdAt));
  const t = now();
  return { keys: rows.filter((r) => r.retiredAt === null || t - r.retiredAt < RETIRED_KEY_PUBLISHED_MS).map((r) => r.publicJwk as JWK) };
}

export async function signIdToken(
  db: GlobalDb,
  encryptionKey: string | undefined,
  claims: Record<string, unknown> & { iss: string; sub: string; aud: string },
): Promise<string> {
  const row = await activeKey(db, encryptionKey);
  const privateJwk = await decryptSecret(encryptionKey, context(row.kid), row.privateJwkCiphertext);
  if (privateJwk === null) throw new Error(`Signing key ${row.kid} does not decrypt under ENCRYPTION_KEY`);
  const key = await importJWK(JSON.parse(privateJwk) as JWK, 'RS256');
  const iat = Math.floor(now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: row.kid, typ: 'JWT' })
    .setIssuedAt(iat)
    .setExpirationTime(iat + ID_TOKEN_TTL_S)
    .sign(key);
}

/** Housekeeping: rotate a key older than 90 days; drop retired keys no longer published. */
export async function maintainSigningKeys(db: GlobalDb, encryptionKey: string | undefined): Promise<void> {
  const t = now();
  const [active] = await db.select().from(oauthSigningKeys).where(isNull(oauthSigningKeys.retiredAt)).orderBy(desc(oauthSigningKeys.createdAt)).limit(1);
  if (active && t - active.createdAt > SIGNING_KEY_MAX_AGE_MS) await rotateSigningKey(db, encryptionKey);
  await db.delete(oauthSigningKeys).where(and(isNotNull(oauthSigningKeys.retiredAt), lt(oauthSigningKeys.retiredAt, t - RETIRED_KEY_PUBLISHED_MS)));
}
