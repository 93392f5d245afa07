/** A return address longer than this is refused (the authorize requests it carries stay far below). */
const MAX_PATH_LENGTH = 4000;

/**
 * Whitespace, control and invisible format characters: the URL parser drops tabs and newlines
 * (`/\t/evil.example` is `//evil.example`, another host), and a newline in a Location header
 * is an error, so a return address carrying any of them is refused outright.
 */
const UNSAFE_CHARACTER = /[\s\p{Cc}\p{Cf}]/u;

/**
 * `value` as a path on `origin` (path, query and fragment, as the URL parser writes them), or
 * null when it is not one: it must start with a single `/` (not `//` or `/\`, which browsers
 * read as another host), contain no whitespace or control character, and parse, against
 * `origin`, to a URL of that same origin.
 */
export function sameOriginPath(value: unknown, origin: string): string | null {
  if (typeof value !== 'string' || value.length > MAX_PATH_LENGTH) return null;
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return null;
  if (UNSAFE_CHARACTER.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value, origin);
  } catch {
    return null;
  }
  return url.origin === origin ? `${url.pathname}${url.search}${url.hash}` : null;
}
