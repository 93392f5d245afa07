/** Base64 of bytes, chunked so a large file does not overflow the argument list of String.fromCharCode. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The bytes of a base64 string; throws on malformed input (atob's DOMException). */
export const fromBase64 = (encoded: string): Uint8Array => Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
