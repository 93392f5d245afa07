/**
 * Calls to the public /api/v1 with the browser's session cookie: the API accepts the cookie only
 * with the page's CSRF token in `x-csrf-token` (see docs/console.md).
 */
const csrfToken = () => document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? '';

/** The workspace chosen on Home (a session may act in any workspace its person belongs to). */
const chosenWorkspace = () => localStorage.getItem('workspace');

/** What every console call to /api/v1 carries: the CSRF token of the cookie session, and the chosen workspace. */
export function apiHeaders(): Record<string, string> {
  const workspace = chosenWorkspace();
  return { 'x-csrf-token': csrfToken(), ...(workspace ? { 'x-workspace-id': workspace } : {}) };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** How many times a request the API rate-limited is tried again, each after the Retry-After it named. */
const RATE_LIMIT_RETRIES = 3;
const MAX_RETRY_WAIT_S = 60;

/** Requests now waiting out a 429: while any is, the page's wait notice (the shell's `#api-wait`) says so. */
let waiting = 0;

/** Waits `seconds`, telling the person why (a polite status, shown and announced once per wait). */
async function waitOut(seconds: number) {
  const notice = document.getElementById('api-wait');
  waiting++;
  if (notice) {
    notice.textContent = `The service is limiting requests for a moment: trying again in ${seconds} s.`;
    notice.hidden = false;
  }
  try {
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  } finally {
    waiting--;
    if (notice && waiting === 0) {
      notice.hidden = true;
      notice.textContent = '';
    }
  }
}

/** fetch, waiting out a 429's Retry-After (the API's per-user limit) before trying again. */
export async function fetchPolitely(url: string, init: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url, init);
    if (res.status !== 429 || attempt === RATE_LIMIT_RETRIES) return res;
    await waitOut(Math.min(Number(res.headers.get('retry-after')) || 1, MAX_RETRY_WAIT_S));
  }
}

export async function api<T = unknown>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const headers: Record<string, string> = { ...apiHeaders(), accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetchPolitely(`/api/v1${path}`, {
    method: init.method ?? 'GET',
    headers,
    credentials: 'same-origin',
    body: init.body === undefined ? null : JSON.stringify(init.body),
  });
  if (res.status === 401) {
    location.assign(`/auth/sign-in?next=${encodeURIComponent(location.pathname)}`);
    throw new ApiError(401, 'UNAUTHORIZED', 'Signed out');
  }
  const text = await res.text();
  const body = text ? JSON.parse(text) : undefined;
  if (!res.ok) {
    const error = body?.error ?? {};
    throw new ApiError(res.status, error.code ?? 'ERROR', error.message ?? `Request failed (${res.status})`, error.details);
  }
  return body as T;
}

export const post = <T = unknown>(path: string, body?: unknown) => api<T>(path, { method: 'POST', body });
