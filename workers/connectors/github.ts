import { z } from 'zod';
import { AppError, invalidInput } from '../errors';
import { now } from '../lib/clock';
import { OUTBOUND_TIMEOUT_MS } from '../lib/outbound';

/**
 * GitHub's REST API (v3) with a workspace's token: repositories, branches, the source tree,
 * file contents, and the write actions. Every GitHub failure becomes one of the service's codes
 * here, so REST routes, MCP tools and run tools report it alike:
 * 401 → 409 CONNECTOR_NOT_CONNECTED (the stored token was refused: reconnect),
 * rate limit (403/429 with `x-ratelimit-remaining: 0` or `retry-after`) → 429 RATE_LIMITED,
 * 404 → 404 NOT_FOUND, 422 → 400 INVALID_INPUT, other 403 → 403 FORBIDDEN,
 * anything else (5xx, unreachable) → 503 SERVICE_UNAVAILABLE; `details.upstreamStatus` says what GitHub answered.
 */
export const GITHUB_API_VERSION = '2022-11-28';
/** Pages of 100 followed through `Link: rel="next"`: at most 1,000 repositories or branches per call. */
const PER_PAGE = 100;
const MAX_PAGES = 10;
/** A tree listing is cut (and says so) past this many entries. */
const MAX_TREE_ENTRIES = 5_000;
/** The Contents API inlines files up to 1 MB; larger ones come back without content. */
const MAX_FILE_BYTES = 1024 * 1024;

export const REPO_PATTERN = '^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$';
export const GithubRepo = z.string().regex(new RegExp(REPO_PATTERN), 'owner/repo');
/** A branch, tag or commit: no spaces, no `..`, no leading slash (git's own ref rules, loosely). */
export const GitRef = z
  .string()
  .min(1)
  .max(255)
  .regex(/^(?!\/)(?!.*\.\.)[^\s~^:?*[\\]+$/, 'a branch, tag or commit');
export const RepoPath = z
  .string()
  .max(1000)
  .regex(/^(?!\/)(?!.*(^|\/)\.\.?(\/|$))[^\0]*$/, 'a path inside the repository');

export interface TreeEntry {
  path: string;
  type: 'file' | 'dir';
  size: number | null;
}

export interface RateLimit {
  limit: number;
  remaining: number;
  resetAt: string;
}

const rateLimitOf = (headers: Headers): RateLimit | null => {
  const limit = headers.get('x-ratelimit-limit');
  const remaining = headers.get('x-ratelimit-remaining');
  const reset = headers.get('x-ratelimit-reset');
  if (limit === null || remaining === null || reset === null) return null;
  return { limit: Number(limit), remaining: Number(remaining), resetAt: new Date(Number(reset) * 1000).toISOString() };
};

/** `Link: <url>; rel="next", <url>; rel="last"` → the next page's URL. */
const nextLink = (link: string | null): string | null => {
  for (const part of (link ?? '').split(',')) {
    const match = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (match) return match[1]!;
  }
  return null;
};

const encodePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');
const repoPath = (repo: string) => `/repos/${encodePath(repo)}`;

export class GithubApi {
  /** The last rate-limit headers GitHub sent. */
  rateLimit: RateLimit | null = null;

  constructor(
    private readonly base: URL,
    private readonly token: string,
  ) {}

  private url(path: string): URL {
    return new URL(`${this.base.href.replace(/\/$/, '')}${path}`);
  }

  /** One request; non-2xx answers throw the mapped AppError. */
  async request(method: string, target: string | URL, body?: unknown, what = 'The resource'): Promise<{ json: any; headers: Headers }> {
    const url = typeof target === 'string' ? this.url(target) : target;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          accept: 'application/vnd.github+json',
          authorization: `Bearer ${this.token}`,
          'x-github-api-version': GITHUB_API_VERSION,
          'user-agent': 'workspace-skills-service',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS),
      });
    } catch {
      throw new AppError('SERVICE_UNAVAILABLE', 503, `GitHub (${this.base.origin}) could not be reached`, { connector: 'github' });
    }
    this.rateLimit = rateLimitOf(response.headers) ?? this.rateLimit;
    const text = await response.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (response.ok) return { json, headers: response.headers };
    throw githubError(response, json, what);
  }

  /** Every page of a list, following `Link: rel="next"` on GitHub's own origin only (the token never travels elsewhere). */
  async paginate(path: string, what: string): Promise<{ items: any[]; truncated: boolean }> {
    let url: URL | null = this.url(path);
    url.searchParams.set('per_page', String(PER_PAGE));
    const items: any[] = [];
    for (let page = 0; url && page < MAX_PAGES; page++) {
      const { json, headers } = await this.request('GET', url, undefined, what);
      if (!Array.isArray(json)) throw new AppError('SERVICE_UNAVAILABLE', 503, 'GitHub answered a list with something else', { connector: 'github' });
      items.push(...json);
      const next = nextLink(headers.get('link'));
      url = next && new URL(next).origin === this.base.origin ? new URL(next) : null;
    }
    return { items, truncated: url !== null };
  }

  async user(): Promise<{ login: string }> {
    const { json } = await this.request('GET', '/user', undefined, 'The token’s user');
    return { login: String(json?.login ?? '') };
  }

  async repositories() {
    const { items, truncated } = await this.paginate('/user/repos?sort=full_name&direction=asc', 'The repository list');
    return {
      repositories: items.map((r) => ({
        fullName: String(r.full_name),
        private: Boolean(r.private),
        defaultBranch: String(r.default_branch ?? 'main'),
        description: r.description ?? null,
        htmlUrl: String(r.html_url ?? ''),
      })),
      truncated,
    };
  }

  async defaultBranch(repo: string): Promise<string> {
    const { json } = await this.request('GET', repoPath(repo), undefined, `The repository ${repo}`);
    return String(json?.default_branch ?? 'main');
  }

  async branches(repo: string) {
    const { items, truncated } = await this.paginate(`${repoPath(repo)}/branches`, `The repository ${repo}`);
    return { repo, branches: items.map((b) => ({ name: String(b.name), sha: String(b.commit?.sha ?? ''), protected: Boolean(b.protected) })), truncated };
  }

  /** The files and folders of `ref` (default branch if omitted), under `path` if given. */
  async tree(repo: string, ref?: string, path?: string) {
    const at = ref ?? (await this.defaultBranch(repo));
    const { json } = await this.request('GET', `${repoPath(repo)}/git/trees/${encodeURIComponent(at)}?recursive=1`, undefined, `The ref ${at} of ${repo}`);
    const prefix = path ? `${path.replace(/\/$/, '')}/` : '';
    const all: TreeEntry[] = (Array.isArray(json?.tree) ? json.tree : [])
      .filter((e: any) => String(e.path).startsWith(prefix))
      .map((e: any) => ({
        path: String(e.path),
        type: e.type === 'tree' ? ('dir' as const) : ('file' as const),
        size: typeof e.size === 'number' ? e.size : null,
      }));
    return { repo, ref: at, path: path ?? '', entries: all.slice(0, MAX_TREE_ENTRIES), truncated: Boolean(json?.truncated) || all.length > MAX_TREE_ENTRIES };
  }

  /** One file: UTF-8 text as is, anything else as base64. */
  async content(repo: string, path: string, ref?: string) {
    const query = ref ? `?ref=${encodeURIComponent(ref)}` : '';
    const { json } = await this.request('GET', `${repoPath(repo)}/contents/${encodePath(path)}${query}`, undefined, `The file ${path} of ${repo}`);
    if (Array.isArray(json) || json?.type !== 'file')
      throw invalidInput('path', 'not_a_file', `${path} is a ${Array.isArray(json) ? 'folder' : String(json?.type)}, not a file`);
    if (json.encoding !== 'base64' || (json.size > 0 && !json.content)) {
      throw invalidInput('path', 'too_large', `${path} is larger than ${MAX_FILE_BYTES} bytes, which GitHub does not serve inline`);
    }
    const bytes = Uint8Array.from(atob(String(json.content).replace(/\s/g, '')), (c) => c.charCodeAt(0));
    let text: string | null = null;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
    } catch {
      text = null;
    }
    return {
      repo,
      path: String(json.path),
      ref: ref ?? null,
      sha: String(json.sha),
      size: bytes.length,
      encoding: text === null ? ('base64' as const) : ('utf-8' as const),
      content: text ?? String(json.content).replace(/\s/g, ''),
    };
  }

  async createIssue(repo: string, input: { title: string; body?: string; labels?: string[] }) {
    const { json } = await this.request('POST', `${repoPath(repo)}/issues`, input, `The repository ${repo}`);
    return { repo, number: Number(json.number), htmlUrl: String(json.html_url), title: String(json.title) };
  }

  async comment(repo: string, issueNumber: number, body: string) {
    const { json } = await this.request('POST', `${repoPath(repo)}/issues/${issueNumber}/comments`, { body }, `Issue #${issueNumber} of ${repo}`);
    return { repo, issueNumber, id: Number(json.id), htmlUrl: String(json.html_url) };
  }

  async openPullRequest(repo: string, input: { title: string; head: string; base: string; body?: string; draft?: boolean }) {
    const { json } = await this.request('POST', `${repoPath(repo)}/pulls`, input, `The repository ${repo}`);
    return { repo, number: Number(json.number), htmlUrl: String(json.html_url), state: String(json.state), draft: Boolean(json.draft) };
  }
}

function githubError(response: Response, json: any, what: string): AppError {
  const status = response.status;
  const message = typeof json?.message === 'string' ? json.message : `HTTP ${status}`;
  const details = { connector: 'github', upstreamStatus: status, upstreamMessage: message };
  if (status === 401) {
    return new AppError('CONNECTOR_NOT_CONNECTED', 409, `GitHub refused the workspace’s token (${message}): connect again with a valid token`, {
      ...details,
      reason: 'token_rejected',
    });
  }
  const retryAfter = response.headers.get('retry-after');
  if ((status === 403 || status === 429) && (response.headers.get('x-ratelimit-remaining') === '0' || retryAfter !== null)) {
    const reset = Number(response.headers.get('x-ratelimit-reset') ?? 0);
    const retryAfterSeconds = retryAfter !== null ? Number(retryAfter) : Math.max(1, reset - Math.floor(now() / 1000));
    return new AppError('RATE_LIMITED', 429, `GitHub’s rate limit for this token is used up (${message})`, { ...details, retryAfterSeconds });
  }
  if (status === 404) return new AppError('NOT_FOUND', 404, `${what} was not found on GitHub (or the token cannot see it)`, details);
  if (status === 422) return invalidInput('input', 'github_validation', `GitHub refused the input: ${message}`, { ...details, errors: json?.errors ?? [] });
  if (status === 403) return new AppError('FORBIDDEN', 403, `GitHub refused: ${message}`, details);
  return new AppError('SERVICE_UNAVAILABLE', 503, `GitHub answered ${status}`, details);
}
