import { AppError } from '../errors';
import { fromBase64, toBase64 } from './base64';

/**
 * AES-256-GCM (WebCrypto) for values at rest (secrets, later BYOK keys) under ENCRYPTION_KEY,
 * base64 of 32 bytes. Every encryption takes a fresh 12-byte IV; the stored form is
 * base64(iv || ciphertext+tag). `context` is bound in as GCM additional data: a ciphertext
 * decrypts only under the context it was sealed with, so one copied to another row (another
 * workspace, another name) does not decrypt.
 *
 * The key is read at use, not at startup: without a usable ENCRYPTION_KEY the service runs and
 * only the calls that need it answer 503 SERVICE_UNAVAILABLE. The imported CryptoKey is cached
 * per isolate.
 */
const IV_BYTES = 12;
const KEY_BYTES = 32;
const keys = new Map<string, Promise<CryptoKey>>();

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function importKey(encoded: string | undefined): Promise<CryptoKey> {
  const cached = encoded === undefined ? undefined : keys.get(encoded);
  if (cached) return cached;
  let raw: Uint8Array | undefined;
  try {
    raw = encoded ? fromBase64(encoded.trim()) : undefined;
  } catch {
    raw = undefined;
  }
  if (!raw || raw.length !== KEY_BYTES) {
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      503,
      encoded ? 'ENCRYPTION_KEY is not base64 of 32 bytes' : 'ENCRYPTION_KEY is not configured (base64 of 32 random bytes)',
    );
  }
  const key = crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']);
  keys.set(encoded!, key);
  return key;
}

/** Seals `plaintext` under ENCRYPTION_KEY, bound to `context`. Throws 503 without a usable key. */
export async function encryptSecret(encryptionKey: string | undefined, context: string, plaintext: string): Promise<string> {
  const key = await importKey(encryptionKey);
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(context) }, key, encoder.encode(plaintext)));
  const out = new Uint8Array(IV_BYTES + sealed.length);
  out.set(iv);
  out.set(sealed, IV_BYTES);
  return toBase64(out);
}

/**
 * The plaintext, or null when the stored form is damaged, was sealed under another key or
 * belongs to another context. Throws 503 without a usable key.
 */
export async function decryptSecret(encryptionKey: string | undefined, context: string, stored: string): Promise<string | null> {
  const key = await importKey(encryptionKey);
  try {
    const bytes = fromBase64(stored);
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: bytes.subarray(0, IV_BYTES), additionalData: encoder.encode(context) },
      key,
      bytes.subarray(IV_BYTES),
    );
    return decoder.decode(plain);
  } catch {
    return null;
  }
}
