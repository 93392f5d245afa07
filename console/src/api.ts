import type { paths } from './api-types.generated';

/**
 * Calls to the public /api/v1 with the browser's session cookie: the API accepts the cookie only
 * with the page's CSRF token in `x-csrf-token` (see docs/console.md). Paths, parameters, bodies and
 * answers are typed from the service's OpenAPI document (api-types.generated.ts).
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

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Prefixed = keyof paths & `/api/v1/${string}`;
/** An operation of the document, by its path under /api/v1 and its method. */
type Operation<P, M extends Method> = P extends string ? NonNullable<paths[`/api/v1${P}` & Prefixed][M]> : never;
/** The paths under /api/v1 (as the document writes them, `{id}` and all) that take `M`. */
export type ApiPath<M extends Method = 'get'> = {
  [K in Prefixed]: [NonNullable<paths[K][M]>] extends [never] ? never : K extends `/api/v1${infer P}` ? P : never;
}[Prefixed];

type Json<R> = R extends { content: { 'application/json': infer T } } ? T : undefined;
/** What a successful call answers. */
export type Answer<P extends ApiPath<M>, M extends Method = 'get'> =
  Operation<P, M> extends { responses: infer R } ? Json<R[(200 | 201 | 202 | 204) & keyof R]> : never;

type Defined<T> = [NonNullable<T>] extends [never] ? never : NonNullable<T>;
/** A call's path parameters, query and JSON body, each only where the operation has it. */
export type Call<P extends ApiPath<M>, M extends Method = 'get'> =
  Operation<P, M> extends infer O
    ? O extends { parameters: { path?: infer A; query?: infer Q } }
      ? ([Defined<A>] extends [never] ? { path?: never } : { path: Defined<A> }) &
          ([Defined<Q>] extends [never] ? { query?: never } : { query?: Defined<Q> }) &
          (O extends { requestBody: { content: { 'application/json': infer B } } }
            ? { body: B }
            : O extends { requestBody?: { content: { 'application/json': infer B } } }
              ? { body?: B }
              : { body?: never })
      : never
    : never;

/** `/executions/{id}/status` with `{id}` filled in, and the query's defined values after it. */
function url(path: string, call: { path?: object; query?: object }): string {
  const params = (call.path ?? {}) as Record<string, string | number>;
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params[name])));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined && value !== '') query.set(name, String(value));
  const search = query.toString();
  return `/api/v1${filled}${search ? `?${search}` : ''}`;
}

async function request(method: Method, path: string, call: { path?: object; query?: object; body?: unknown }): Promise<unknown> {
  const headers: Record<string, string> = { ...apiHeaders(), accept: 'application/json' };
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetchPolitely(url(path, call), {
    method: method.toUpperCase(),
    headers,
    credentials: 'same-origin',
    body: call.body === undefined ? null : JSON.stringify(call.body),
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
  return body;
}

/** The items of an answer given as a bare array or an offset page (the console's forms), not the cursor form it does not ask for. */
export const itemsOf = <T>(answer: T[] | { items: T[] } | { data: unknown }): T[] => (Array.isArray(answer) ? answer : 'items' in answer ? answer.items : []);

/** Parameters are required where the operation has path parameters or a required body. */
type Args<P extends ApiPath<M>, M extends Method> = Call<P, M> extends { path: object } | { body: unknown } ? [Call<P, M>] : [Call<P, M>?];

const caller =
  <M extends Method>(method: M) =>
  <P extends ApiPath<M>>(path: P, ...[call]: Args<P, M>) =>
    request(method, path, call ?? {}) as Promise<Answer<P, M>>;

/** Calls to /api/v1 by method, e.g. `api('/executions/{id}/status', { path: { id } })`. */
export const api = caller('get');
export const post = caller('post');
export const put = caller('put');
export const patch = caller('patch');
export const del = caller('delete');
