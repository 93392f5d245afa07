import { OAuthError } from '../../services/oauth';

/**
 * Which client calls the token or revocation endpoint. RFC 6749 2.3.1 lets a client send its id
 * and secret in an HTTP Basic `Authorization` header, each form-urlencoded first; a client may
 * also name itself with `client_id` in the body. Every client here is public (none is issued a
 * secret), so the header is accepted with an empty secret only: `client_id:`, what a public
 * client using `client_secret_basic` sends. Other schemes are not client credentials here.
 */

/** RFC 6749 5.2: a failed client authentication; with the header tried, 401 and a Basic challenge (oauthEndpoint adds it). */
const invalidClient = (description: string) => new OAuthError('invalid_client', description, 401);

/** RFC 6749 Appendix B: `+` is a space, then percent-decoding (UTF-8). */
function formDecoded(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw invalidClient('The Basic credentials are not form-urlencoded (RFC 6749 2.3.1)');
  }
}

/** The client id of a Basic `Authorization` header, or undefined when the header is absent or of another scheme. */
export function basicClientId(authorization: string | undefined): string | undefined {
  const match = /^Basic\s+(\S*)\s*$/i.exec(authorization ?? '');
  if (!match) return undefined;
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(atob(match[1]!), (c) => c.charCodeAt(0)));
  } catch {
    throw invalidClient('The Basic credentials are not base64 of UTF-8 text');
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient('The Basic credentials must be client_id:client_secret');
  const clientId = formDecoded(decoded.slice(0, colon));
  if (!clientId) throw invalidClient('The Basic credentials name no client');
  if (formDecoded(decoded.slice(colon + 1)) !== '') {
    throw invalidClient('This server issues no client secrets: a public client sends its client_id with an empty secret');
  }
  return clientId;
}

/**
 * The calling client's id, from the Basic header or the body; both may name it only if they name
 * the same one (RFC 6749 2.3: one client per request).
 */
export function clientIdOf(authorization: string | undefined, bodyClientId: string | undefined): string | undefined {
  const fromHeader = basicClientId(authorization);
  if (fromHeader === undefined) return bodyClientId;
  if (bodyClientId !== undefined && bodyClientId !== fromHeader) {
    throw new OAuthError('invalid_request', 'The Authorization header and client_id name different clients');
  }
  return fromHeader;
}
