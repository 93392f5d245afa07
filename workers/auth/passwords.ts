import { scrypt } from 'node:crypto';
import { fromBase64 } from '../lib/base64';
import { base64url, randomBytes } from '../lib/crypto';

/** WebCrypto has no scrypt: the one Node API the Worker uses, through the nodejs_compat flag. */
const scryptAsync = (password: string, salt: Uint8Array, keylen: number, options: { N: number; r: number; p: number; maxmem: number }) =>
  new Promise<Uint8Array>((resolve, reject) => scrypt(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))));

/**
 * scrypt N=16384, r=16, p=1: memory-hard and within a Worker's CPU budget,
 * where PBKDF2 above 100,000 iterations is refused. The parameters travel inside the stored
 * string so they can be raised later without invalidating existing hashes.
 */
const PARAMS = { N: 16384, r: 16, p: 1 } as const;
const KEY_LENGTH = 32;
const maxmem = (N: number, r: number, p: number) => 128 * N * r * (p + 2);

const fromBase64url = (s: string): Uint8Array => fromBase64(s.replace(/-/g, '+').replace(/_/g, '/'));

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { N, r, p } = PARAMS;
  const key = await scryptAsync(password.normalize('NFKC'), salt, KEY_LENGTH, { N, r, p, maxmem: maxmem(N, r, p) });
  return `scrypt$${N}$${r}$${p}$${base64url(salt)}$${base64url(key)}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expected) return false;
  const [N, R, P] = [Number(n), Number(r), Number(p)];
  const want = fromBase64url(expected);
  const got = await scryptAsync(password.normalize('NFKC'), fromBase64url(salt), want.length, {
    N,
    r: R,
    p: P,
    maxmem: maxmem(N, R, P),
  });
  return crypto.subtle.timingSafeEqual(got, want);
}

let dummyHash: Promise<string> | undefined;

/** Spends the same work as a real check, so unknown emails cannot be told apart by timing. */
export async function burnPasswordCheck(password: string): Promise<false> {
  dummyHash ??= hashPassword('dummy password for timing equality');
  await verifyPassword(password, await dummyHash);
  return false;
}
