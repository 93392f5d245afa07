import { z } from 'zod';
import { displayText } from '../../lib/display-text';
import { outboundProblem, readCapped } from '../../lib/outbound';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
 * `client_id` is an https URL is described by the JSON document at that URL. Fetching a URL a
 * stranger chose is a server-side request forgery risk, so the fetch is narrow: the address
 * rules of every outbound URL (lib/outbound.ts), no redirect, a small body and a short time.
 */

/** The draft recommends documents stay under 5 KB. */
export const METADATA_MAX_BYTES = 5 * 1024;
export const METADATA_TIMEOUT_MS = 5_000;
/** A cached document is fetched again after its HTTP lifetime, kept within these bounds. */
export const METADATA_MIN_TTL_S = 60;
export const METADATA_MAX_TTL_S = 24 * 3600;
/** Without caching headers: one hour. */
export const METADATA_DEFAULT_TTL_S = 3600;

export interface MetadataFetchOptions {
  /** Tests and a developer's machine only: documents on loopback and private hosts, over http too (workers/lib/local-development.ts). */
  localDevelopment: boolean;
}

/** A refused document: told to the person on the authorization page, never to a redirect URI. */
export class ClientMetadataError extends Error {}

/** Whether `client_id` names a metadata document rather than a registered client. */
export const isMetadataClientId = (clientId: string) => /^https?:\/\//i.test(clientId);

/** Why `clientId` may not be fetched, or null. */
export function metadataUrlProblem(clientId: string, options: MetadataFetchOptions): string | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'The client id is not a URL.';
  }
  if (url.href !== clientId) return 'The client id URL is not in its normal form.';
  if (url.username || url.password || url.hash) return 'The client id URL may not carry credentials or a fragment.';
  if (url.pathname === '/') return 'The client id URL must have a path.';
  const problem = outboundProblem(url, options.localDevelopment);
  if (problem === 'https') return 'The client id URL must use https.';
  if (problem === 'private_address') return 'The client id URL points at a private or loopback address.';
  return null;
}

/**
 * A public client's metadata, as registration (RFC 7591) and a metadata document both state it.
 * The name is stored with its hidden and reordering characters made visible: it is shown on
 * consent pages.
 */
export const ClientFields = z.object({
  client_name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .transform((name) => displayText(name))
    .optional(),
  redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
  grant_types: z
    .array(z.enum(['authorization_code', 'refresh_token']))
    .min(1)
    .optional(),
  response_types: z.array(z.literal('code')).min(1).optional(),
  application_type: z.enum(['web', 'native']).optional(),
});

/** The document's fields this server uses; anything else is ignored (the draft allows more). */
const ClientMetadata = ClientFields.extend({
  client_id: z.string(),
  token_endpoint_auth_method: z.literal('none').optional(),
  // The draft forbids shared secrets in a public document.
  client_secret: z.undefined({ error: 'A metadata document may not contain a client_secret' }).optional(),
});
export type ClientMetadata = z.infer<typeof ClientMetadata>;

/** The document's lifetime from its caching headers, within the bounds. */
export function metadataTtlSeconds(headers: Headers): number {
  const cacheControl = headers.get('cache-control') ?? '';
  let ttl = METADATA_DEFAULT_TTL_S;
  if (/\b(no-store|no-cache)\b/i.test(cacheControl)) ttl = 0;
  else {
    const maxAge = /\bmax-age=(\d+)/i.exec(cacheControl);
    if (maxAge) ttl = Number(maxAge[1]);
    else if (headers.get('expires')) ttl = Math.round((Date.parse(headers.get('expires')!) - Date.now()) / 1000) || 0;
  }
  return Math.min(METADATA_MAX_TTL_S, Math.max(METADATA_MIN_TTL_S, Number.isFinite(ttl) ? ttl : 0));
}

const unfetched = () => new ClientMetadataError('The client metadata document could not be fetched.');

/** Reads at most `limit` bytes of a body; a longer one is refused. */
async function boundedText(response: Response, limit: number): Promise<string> {
  const bytes = await readCapped(response, limit).catch(() => {
    throw unfetched();
  });
  if (bytes === null) throw new ClientMetadataError('The client metadata document is too large.');
  return new TextDecoder().decode(bytes);
}

/**
 * Fetches and validates the document at `clientId`: its `client_id` must equal the URL, its
 * redirect URIs are checked by the caller against the request. Answers it with its lifetime.
 */
export async function fetchClientMetadata(clientId: string, options: MetadataFetchOptions): Promise<{ metadata: ClientMetadata; ttlSeconds: number }> {
  const problem = metadataUrlProblem(clientId, options);
  if (problem) throw new ClientMetadataError(problem);
  let response: Response;
  try {
    // No redirect is followed: a redirect could lead to another host (or a private one).
    response = await fetch(clientId, { redirect: 'manual', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(METADATA_TIMEOUT_MS) });
  } catch {
    throw unfetched();
  }
  // Any other status reads as unreachable: a stranger learns nothing about what answers where.
  if (response.status !== 200) {
    await response.body?.cancel();
    throw unfetched();
  }
  const text = await boundedText(response, METADATA_MAX_BYTES);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ClientMetadataError('The client metadata document is not JSON.');
  }
  const parsed = ClientMetadata.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ClientMetadataError(`The client metadata document is not valid: ${issue.path.join('.') || 'document'}: ${issue.message}`);
  }
  if (parsed.data.client_id !== clientId) throw new ClientMetadataError('The client metadata document names another client_id than its own URL.');
  return { metadata: parsed.data, ttlSeconds: metadataTtlSeconds(response.headers) };
}
