import type { OAuthClientRow } from '../../../schema';
import { isLoopbackHost } from '../../lib/addresses';

/**
 * The redirect URIs a client may register (RFC 9700 2.1, 4.1.1: in full, matched exactly), and
 * where each one sends the browser, as the consent page tells the person.
 */

type ApplicationType = OAuthClientRow['applicationType'];

/** http(s) on `localhost`, `*.localhost`, 127.0.0.0/8 or `[::1]`: an app on this machine (RFC 8252 7.3). */
const isLoopback = (url: URL) => (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);

/**
 * Schemes that are no app's own (RFC 8252 7.1, RFC 7595 3.8): the browser runs or shows them
 * itself (script, local content, its own pages), they name a network protocol, or they hand the
 * URL to a system handler that picks the app from the link (Android `intent`, Windows `ms-*`
 * and `search-ms`, mail, telephony). A code sent to one would not reach the app that asked.
 */
const REFUSED_SCHEMES = new Set([
  'about',
  'blob',
  'chrome',
  'chrome-extension',
  'chrome-untrusted',
  'data',
  'devtools',
  'edge',
  'file',
  'filesystem',
  'ftp',
  'ftps',
  'gopher',
  'intent',
  'javascript',
  'jar',
  'mailto',
  'moz-extension',
  'resource',
  'safari-extension',
  'search',
  'search-ms',
  'sftp',
  'sms',
  'smb',
  'ssh',
  'tel',
  'urn',
  'vbscript',
  'view-source',
  'ws',
  'wss',
]);

/**
 * Whether `scheme` (lowercase, without the colon) may name a native app's private-use redirect.
 * RFC 8252 7.1 asks for a reversed domain name (`com.example.app`), but stock MCP clients use
 * short ones (`cursor`, `vscode`), so a scheme without a period is accepted; one letter is not
 * (a Windows drive letter, `c:/…`).
 */
const isPrivateUseScheme = (scheme: string) => scheme.length > 1 && !REFUSED_SCHEMES.has(scheme) && !scheme.startsWith('ms-');

const schemeOf = (url: URL) => url.protocol.slice(0, -1);

/**
 * https; http only on a loopback address (RFC 8252 7.3, OAuth 2.1 2.3.1); or a native app's
 * private-use scheme (RFC 8252 7.1). No fragment (RFC 6749 3.1.2), no credentials. Loopback
 * and private-use redirects are for native applications only (OpenID Connect Dynamic
 * Registration 2, `application_type`).
 */
export function redirectUriProblem(value: string, applicationType: ApplicationType): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (value.includes('#')) return 'has a fragment';
  if (url.username || url.password) return 'carries credentials';
  if (url.protocol === 'https:' || url.protocol === 'http:') {
    if (applicationType === 'web' && isLoopback(url)) return 'is a loopback address, which only a native application may use';
    if (url.protocol === 'https:' || isLoopback(url)) return null;
    return 'must use https (http only on a loopback address)';
  }
  if (!isPrivateUseScheme(schemeOf(url))) return "uses a scheme that is not an app's own (private-use) scheme";
  if (applicationType === 'web') return 'uses a private-use scheme, which only a native application may use';
  return null;
}

/**
 * OpenID Connect Dynamic Registration 2 defaults to `web`; a client that names a loopback or
 * private-use redirect without saying is a native one. Stock MCP clients register such sets
 * without `application_type` (VS Code's hosted redirect pages beside its loopback ones), and a
 * refusal would lock them out; a client that declares `web` keeps the web rules.
 */
export function applicationTypeOf(declared: ApplicationType | undefined, redirectUris: string[]): ApplicationType {
  if (declared) return declared;
  const someNative = redirectUris.some((uri) => {
    if (!URL.canParse(uri)) return false;
    const url = new URL(uri);
    return isLoopback(url) || (url.protocol !== 'https:' && url.protocol !== 'http:');
  });
  return someNative ? 'native' : 'web';
}

/** The first problem of a client's redirect URIs, the URI named by `label`, or null. */
export function redirectUrisProblem(uris: string[], applicationType: ApplicationType, label: (uri: string, index: number) => string): string | null {
  for (const [index, uri] of uris.entries()) {
    const problem = redirectUriProblem(uri, applicationType);
    if (problem) return `${label(uri, index)} ${problem}`;
  }
  return null;
}

/**
 * OAuth 2.1 2.3.1 / RFC 8252 7.3: exact match, except that a loopback IP redirect may use any
 * port (native apps bind an ephemeral one). A private-use URI matches exactly.
 */
export function redirectMatches(registered: string, presented: string): boolean {
  if (registered === presented) return true;
  try {
    const a = new URL(registered);
    const b = new URL(presented);
    if (a.protocol !== 'http:' || !isLoopback(a) || a.hostname === 'localhost') return false;
    a.port = '';
    b.port = '';
    return a.href === b.href;
  } catch {
    return false;
  }
}

/**
 * Where a (validated) redirect URI sends the browser: a site, named by its host, which no
 * client can fake; or the app that handles a private-use scheme, which any app on the device
 * may claim. `formAction` is the CSP source that lets the consent form's redirect go to the
 * site; an app is sent its URL by a page of ours instead (the consent form posts to us only).
 */
export type RedirectTarget = { kind: 'site'; host: string; formAction: string } | { kind: 'app'; scheme: string };

export function redirectTargetOf(redirectUri: string): RedirectTarget {
  const url = new URL(redirectUri);
  if (url.protocol === 'https:' || url.protocol === 'http:') return { kind: 'site', host: url.host, formAction: url.origin };
  return { kind: 'app', scheme: schemeOf(url) };
}
