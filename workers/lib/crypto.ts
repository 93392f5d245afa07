const encoder = new TextEncoder();

/** Each byte value's two hex digits: every credential is hashed on every request, so a lookup instead of a conversion and an array per byte. */
const HEX_DIGITS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

const toHex = (bytes: ArrayBuffer | Uint8Array): string => {
  let hex = '';
  for (const byte of new Uint8Array(bytes)) hex += HEX_DIGITS[byte];
  return hex;
};

export const sha256Hex = async (input: string): Promise<string> => toHex(await crypto.subtle.digest('SHA-256', encoder.encode(input)));

export const randomBytes = (length: number): Uint8Array => crypto.getRandomValues(new Uint8Array(length));

export const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

/** An opaque bearer secret: `bytes` random bytes, base64url. */
export const randomToken = (bytes = 32): string => base64url(randomBytes(bytes));

/** Constant-time comparison for secrets of equal encoding. */
export const timingSafeEqual = (a: string, b: string): boolean => {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  return crypto.subtle.timingSafeEqual(x, y);
};

export const sha256HexBytes = async (bytes: Uint8Array): Promise<string> => toHex(await crypto.subtle.digest('SHA-256', bytes));

/** HMAC-SHA-256 hex: a fingerprint that cannot be brute-forced back without the key. */
export async function hmacSha256Hex(secret: string, input: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(await crypto.subtle.sign('HMAC', key, encoder.encode(input)));
}
