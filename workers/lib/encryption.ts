import { AppError } from '../errors';

/**
 * AES-256-GCM for values at rest (secrets, BYOK keys) under ENCRYPTION_KEY (base64, 32 bytes).
 * Each encryption takes a fresh 12-byte IV; the stored form is base64(iv || ciphertext+tag).
 * `context` is bound in as additional data, so a ciphertext copied to another row (another
 * workspace or name) does not decrypt.
 */
const IV_BYTES = 12;
const keys = new Map<string, Promise<CryptoKey>>();

function importKey(encoded: string | undefined): Promise<CryptoKey> {
  let raw: Uint8Array | undefined;
  try {
    raw = encoded ? Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0)) : undefined;
  } catch {
    raw = undefined;
  }
  if (!raw || raw.length !== 32) {
    throw new AppError('SERVICE_UNAVAILABLE', 503, 'ENCRYPTION_KEY is not configured (base64 of 32 random bytes)');
  }
  let key = keys.get(encoded!);
  if (!key) {
    key = crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']);
    keys.set(encoded!, key);
  }
  return key;
}

const encoder = new TextEncoder();

export async function encryptSecret(encodedKey: string | undefined, context: string, plaintext: string): Promise<string> {
  const key = await importKey(encodedKey);
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(context) }, key, encoder.encode(plaintext)),
  );
  const out = new Uint8Array(IV_BYTES + sealed.length);
  out.set(iv);
  out.set(sealed, IV_BYTES);
  return btoa(String.fromCharCode(...out));
}

/** The plaintext, or null if the ciphertext is damaged or belongs to another context. */
export async function decryptSecret(encodedKey: string | undefined, context: string, stored: string): Promise<string | null> {
  const key = await importKey(encodedKey);
  try {
    const bytes = Uint8Array.from(atob(stored), (c) => c.charCodeAt(0));
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: bytes.subarray(0, IV_BYTES), additionalData: encoder.encode(context) },
      key,
      bytes.subarray(IV_BYTES),
    );
    return new TextDecoder().decode(plain);
  } catch {
    return null;
  }
}
