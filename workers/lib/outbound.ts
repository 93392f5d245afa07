import { invalidInput } from '../errors';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const TIMEOUT_MS = 15_000;

/**
 * Fetches a caller-supplied URL: https only (plain http just for loopback, i.e. local
 * development), a timeout, no credentials, and at most `maxBytes` read. Failures are the
 * caller's input errors on `field`.
 */
export async function fetchLimited(url: string, field: string, maxBytes: number, accept?: string): Promise<Uint8Array> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidInput(field, 'url', `${field} is not a URL`);
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && LOOPBACK.has(parsed.hostname))) {
    throw invalidInput(field, 'https', `${field} must be an https URL`);
  }
  let response: Response;
  try {
    response = await fetch(parsed, {
      headers: accept ? { accept } : {},
      redirect: 'follow',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch {
    throw invalidInput(field, 'unreachable', `${parsed.origin} could not be reached`);
  }
  if (response.status === 404) throw invalidInput(field, 'not_found', `${parsed.href} answered 404`);
  if (!response.ok || !response.body) throw invalidInput(field, 'http_status', `${parsed.origin} answered ${response.status}`);
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    throw invalidInput(field, 'too_large', `The download exceeds ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.length;
    if (size > maxBytes) throw invalidInput(field, 'too_large', `The download exceeds ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

export const fetchJson = async (url: string, field: string, maxBytes: number): Promise<unknown> => {
  const bytes = await fetchLimited(url, field, maxBytes, 'application/json');
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw invalidInput(field, 'json', `${new URL(url).origin} did not answer JSON`);
  }
};
