import { exports } from 'cloudflare:workers';
import { createHash } from 'node:crypto';
import { shardNumberOf } from './shards';

export const BASE = 'https://service.test';

export interface CallOptions {
  method?: string;
  body?: unknown;
  /** Sent verbatim, for malformed-body tests. */
  rawBody?: string;
  headers?: Record<string, string>;
  apiKey?: string;
  token?: string;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/**
 * The client address of a test file's requests that name none: unauthenticated requests are
 * counted per address, and the files a pool worker runs one after another each start a fresh count.
 */
let fileAddress = '198.51.100.1';

/** A fresh address for the requests of the test file about to run (test/setup). */
export const useFreshAddress = (): void => {
  const octet = () => Math.floor(Math.random() * 254) + 1;
  fileAddress = `10.${octet()}.${octet()}.${octet()}`;
};

/** Calls the Worker's own fetch handler, as a client would over HTTP. */
export async function call<T = any>(path: string, options: CallOptions = {}): Promise<ApiResponse<T>> {
  const headers = new Headers(options.headers);
  if (!headers.has('cf-connecting-ip')) headers.set('cf-connecting-ip', fileAddress);
  if (options.apiKey) headers.set('x-api-key', options.apiKey);
  if (options.token) headers.set('x-auth-token', options.token);
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers.set('content-type', 'application/json');
  }
  if (options.rawBody !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  const response = await exports.default.fetch(`${BASE}${path}`, {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** Unique across the files a pool worker runs one after another, which each load this module afresh. */
const unique = () => crypto.randomUUID().replaceAll('-', '').slice(0, 16);

export interface TestUser {
  token: string;
  user: { id: string; email: string; name: string };
  email: string;
  password: string;
  workspaceId: string;
  /** The shard holding the workspace's rows. */
  shard: number;
}

/**
 * A fresh account with its personal workspace and a session. Each sign-up comes from its own
 * random documentation-range /64 (2001:db8:<n>:<n>::/64; limits count an IPv6 address by its
 * /64), so files with many accounts stay under the per-address sign-up limit.
 */
export async function signUp(name = 'Test User'): Promise<TestUser> {
  const email = `user-${unique()}@example.test`;
  const password = `pw-${unique()}-long`;
  const [a, b] = crypto.getRandomValues(new Uint16Array(2));
  const ip = `2001:db8:${a!.toString(16)}:${b!.toString(16)}::1`;
  const res = await call('/auth/sign-up/email', { body: { email, password, name }, headers: { 'cf-connecting-ip': ip } });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  const current = await call('/api/v1/workspaces/current', { token: res.body.token });
  return { ...res.body, email, password, workspaceId: current.body.id, shard: await shardNumberOf(current.body.id) };
}

/** An API key of `user` in their current workspace. */
export async function createKey(user: TestUser, scopes?: string[], extra: Record<string, unknown> = {}) {
  const res = await call('/api/v1/api-keys', { token: user.token, body: { name: `key ${unique()}`, scopes, ...extra } });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; key: string; scopes: string[]; status: string };
}

/** The route that answers its own failures in spec 7.3's flat shape `{error: '<CODE>', message, ...}`. */
export const FLAT_ERRORS: ReadonlySet<string> = new Set(['POST /api/v1/skills/:slug/run']);

/** Asserts the spec's error envelope and returns it. */
export function expectError(res: ApiResponse, status: number, code: string) {
  if (res.status !== status || res.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body.error as { code: string; message: string; details?: Record<string, any> };
}

/** The id `user`'s session is stored under: its token's SHA-256, as the service hashes it. */
export const sessionIdOf = (user: TestUser) => createHash('sha256').update(user.token).digest('hex');

/**
 * The principal of `user`'s session, for calling service functions directly. It names the real
 * session: a run started with it acts for that session, which is read again as the run acts.
 */
export const sessionPrincipal = (user: TestUser): import('../../workers/auth/principal').Principal => ({
  userId: user.user.id,
  workspaceId: user.workspaceId,
  shard: user.shard,
  role: 'owner',
  credential: { type: 'session', sessionId: sessionIdOf(user) },
  scopes: ['*'],
  origin: { requestId: 'test', ip: null, userAgent: null },
});

/** Polls an execution's status until it is `wanted` (runs finish in the background). */
export async function waitForStatus(user: TestUser, id: string, wanted: string, headers: Record<string, string> = {}) {
  for (let i = 0; i < 200; i++) {
    const res = await call(`/api/v1/executions/${id}/status`, { token: user.token, headers });
    if (res.body.status === wanted) return res.body;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`execution ${id} never reached ${wanted}`);
}
