/**
 * A stand-in for GitHub's REST API (v3) under `/github` on the fixture server, speaking its wire
 * format: `Authorization: Bearer <token>`, JSON answers, pagination by `page`/`per_page` with a
 * `Link` header, 401 `Bad credentials` and 404 `Not Found` bodies with `documentation_url`,
 * 422 `Validation Failed`, and `x-ratelimit-*` headers on every answer.
 *
 * Tokens: `ghp_fixture_<name>` acts as the user `octo-<name>`; `ghp_fixture_ratelimited` has no
 * requests left (403 with `x-ratelimit-remaining: 0`, as GitHub answers); a token revoked
 * through `POST /github/__revoke {token}` (a fixture-only route) answers 401 from then on;
 * anything else is 401. Created issues, comments and pull requests are kept in memory and can
 * be read back with `GET /repos/{owner}/{repo}/issues/{number}` (and `/comments`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const GITHUB_PREFIX = '/github';
export const GITHUB_REPO = 'octo-org/widgets';
/** Repositories every fixture user can see: enough for three pages of 100. */
export const GITHUB_REPO_COUNT = 231;

const DOCS = 'https://docs.github.com/rest';
const TOKEN = /^ghp_fixture_([a-z0-9]+)$/;
const revoked = new Set<string>();

interface Issue {
  number: number;
  title: string;
  body: string | null;
  labels: string[];
  comments: { id: number; body: string; user: string }[];
  pull?: { head: string; base: string; draft: boolean };
  user: string;
}

const files: Record<string, Record<string, string | Buffer>> = {
  main: {
    'README.md': '# Widgets\n\nThe widget factory.\n',
    'src/index.ts': "export { widget } from './lib/widget';\n",
    'src/lib/widget.ts': 'export const widget = (name: string) => `widget ${name}`;\n',
    'docs/guide.md': '# Guide\n\nRun `npm start`.\n',
    'assets/logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe]),
  },
  develop: {
    'README.md': '# Widgets (develop)\n\nUnreleased changes.\n',
    'src/index.ts': "export { widget } from './lib/widget';\n",
    'src/lib/widget.ts': 'export const widget = (name: string) => `widget v2 ${name}`;\n',
  },
  'feature/sprockets': {
    'README.md': '# Widgets\n\nWith sprockets.\n',
  },
};
const issues: Issue[] = [{ number: 1, title: 'Widgets squeak', body: 'They squeak on Mondays.', labels: ['bug'], comments: [], user: 'octo-maintainer' }];
let nextId = 1000;

const sha1ish = (text: string) => {
  let h = 0x811c9dc5;
  for (const ch of text) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0').repeat(5);
};

const repoJson = (base: string, fullName: string, id: number) => {
  const [owner, name] = fullName.split('/') as [string, string];
  return {
    id,
    node_id: `R_${id}`,
    name,
    full_name: fullName,
    private: name !== 'widgets',
    owner: { login: owner, id: 9000, type: 'Organization' },
    html_url: `https://github.example.test/${fullName}`,
    description: name === 'widgets' ? 'The widget factory' : null,
    fork: false,
    url: `${base}/repos/${fullName}`,
    default_branch: 'main',
    visibility: name === 'widgets' ? 'public' : 'private',
    pushed_at: '2026-11-01T10:00:00Z',
    updated_at: '2026-11-01T10:00:00Z',
  };
};

const allRepos = () => [GITHUB_REPO, ...Array.from({ length: GITHUB_REPO_COUNT - 1 }, (_, i) => `octo-org/repo-${String(i + 1).padStart(3, '0')}`)];

const issueJson = (base: string, issue: Issue) => ({
  id: 5000 + issue.number,
  number: issue.number,
  title: issue.title,
  body: issue.body,
  state: 'open',
  user: { login: issue.user },
  labels: issue.labels.map((name, i) => ({ id: i + 1, name })),
  comments: issue.comments.length,
  html_url: `https://github.example.test/${GITHUB_REPO}/${issue.pull ? 'pull' : 'issues'}/${issue.number}`,
  url: `${base}/repos/${GITHUB_REPO}/issues/${issue.number}`,
  ...(issue.pull ? { pull_request: { url: `${base}/repos/${GITHUB_REPO}/pulls/${issue.number}` } } : {}),
});

async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** Handles `/github/...`; answers false for any other path. */
export async function serveGithub(req: IncomingMessage, res: ServerResponse, origin: string): Promise<boolean> {
  const url = new URL(req.url ?? '/', origin);
  if (!url.pathname.startsWith(`${GITHUB_PREFIX}/`)) return false;
  const base = `${origin}${GITHUB_PREFIX}`;
  const path = url.pathname.slice(GITHUB_PREFIX.length);
  const method = req.method ?? 'GET';
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'x-github-media-type': 'github.v3; format=json' };
  const send = (status: number, body: unknown, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...headers, ...extra }).end(JSON.stringify(body));
    return true;
  };
  const notFound = () => send(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
  const invalid = (resource: string, field: string, code = 'missing_field') =>
    send(422, { message: 'Validation Failed', errors: [{ resource, code, field }], documentation_url: DOCS, status: '422' });

  if (path === '/__revoke' && method === 'POST') {
    const body = await readJson(req);
    revoked.add(String(body?.token));
    return send(204, null);
  }

  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
  const login = TOKEN.exec(token)?.[1];
  const reset = String(Math.floor(Date.now() / 1000) + 3600);
  Object.assign(headers, {
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': '4999',
    'x-ratelimit-used': '1',
    'x-ratelimit-reset': reset,
    'x-ratelimit-resource': 'core',
  });
  if (!login || revoked.has(token)) {
    Object.assign(headers, { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59' });
    return send(401, { message: 'Bad credentials', documentation_url: DOCS, status: '401' });
  }
  if (login === 'ratelimited') {
    Object.assign(headers, { 'x-ratelimit-remaining': '0', 'x-ratelimit-used': '5000' });
    return send(403, { message: 'API rate limit exceeded for user ID 4242.', documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api` });
  }
  if (req.headers.accept && !/application\/(vnd\.github(\.v3)?(\+json)?|json)|\*\/\*/.test(req.headers.accept)) {
    return send(415, { message: 'Unsupported media type', documentation_url: DOCS });
  }

  /** One page of `items`, with GitHub's Link header (absolute URLs, next/last/first/prev). */
  const page = (items: unknown[]) => {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30)));
    const current = Math.max(1, Number(url.searchParams.get('page') ?? 1));
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const link = (n: number, rel: string) => {
      const next = new URL(url);
      next.searchParams.set('page', String(n));
      next.searchParams.set('per_page', String(perPage));
      return `<${base}${next.pathname.slice(GITHUB_PREFIX.length)}${next.search}>; rel="${rel}"`;
    };
    const links = [
      ...(current > 1 ? [link(current - 1, 'prev'), link(1, 'first')] : []),
      ...(current < last ? [link(current + 1, 'next'), link(last, 'last')] : []),
    ];
    return send(200, items.slice((current - 1) * perPage, current * perPage), links.length ? { link: links.join(', ') } : {});
  };

  if (path === '/user' && method === 'GET') {
    return send(200, { login: `octo-${login}`, id: 4242, type: 'User', name: `Octo ${login}` }, { 'x-oauth-scopes': 'repo, read:org' });
  }
  if (path === '/user/repos' && method === 'GET') return page(allRepos().map((name, i) => repoJson(base, name, 100 + i)));

  const repoMatch = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
  if (!repoMatch) return notFound();
  const fullName = `${repoMatch[1]}/${repoMatch[2]}`;
  if (!allRepos().includes(fullName)) return notFound();
  const rest = repoMatch[3] ?? '';
  const isWidgets = fullName === GITHUB_REPO;

  if (rest === '' && method === 'GET') return send(200, repoJson(base, fullName, 100 + allRepos().indexOf(fullName)));
  if (rest === '/branches' && method === 'GET') {
    const names = isWidgets ? Object.keys(files) : ['main'];
    return page(
      names.map((name) => ({
        name,
        commit: { sha: sha1ish(`${fullName}@${name}`), url: `${base}/repos/${fullName}/commits/${sha1ish(name)}` },
        protected: name === 'main',
      })),
    );
  }
  const tree = /^\/git\/trees\/(.+)$/.exec(rest);
  if (tree && method === 'GET') {
    const ref = decodeURIComponent(tree[1]!);
    const branch = isWidgets ? files[ref] : ref === 'main' ? { 'README.md': `# ${fullName}\n` } : undefined;
    if (!branch) return notFound();
    const dirs = new Set<string>();
    for (const file of Object.keys(branch)) {
      const parts = file.split('/');
      for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
    }
    const recursive = url.searchParams.has('recursive');
    const entries = [
      ...[...dirs].map((p) => ({
        path: p,
        mode: '040000',
        type: 'tree',
        sha: sha1ish(`${ref}:${p}/`),
        url: `${base}/repos/${fullName}/git/trees/${sha1ish(p)}`,
      })),
      ...Object.entries(branch).map(([p, data]) => ({
        path: p,
        mode: '100644',
        type: 'blob',
        sha: sha1ish(`${ref}:${p}`),
        size: Buffer.from(data).length,
        url: `${base}/repos/${fullName}/git/blobs/${sha1ish(p)}`,
      })),
    ]
      .filter((e) => recursive || !e.path.includes('/'))
      .sort((a, b) => (a.path < b.path ? -1 : 1));
    return send(200, { sha: sha1ish(`${fullName}@${ref}`), url: `${base}/repos/${fullName}/git/trees/${ref}`, tree: entries, truncated: false });
  }
  const contents = /^\/contents\/(.+)$/.exec(rest);
  if (contents && method === 'GET') {
    const ref = url.searchParams.get('ref') ?? 'main';
    const branch = isWidgets ? files[ref] : undefined;
    const target = decodeURIComponent(contents[1]!);
    const data = branch?.[target];
    if (data === undefined) {
      const children = Object.keys(branch ?? {}).filter((p) => p.startsWith(`${target}/`));
      if (!children.length) return notFound();
      return send(
        200,
        children.map((p) => ({ type: 'file', name: p.split('/').pop(), path: p, sha: sha1ish(`${ref}:${p}`), size: Buffer.from(branch![p]!).length })),
      );
    }
    const bytes = Buffer.from(data);
    const encoded = bytes.toString('base64').replace(/(.{60})/g, '$1\n');
    return send(200, {
      type: 'file',
      encoding: 'base64',
      size: bytes.length,
      name: target.split('/').pop(),
      path: target,
      content: `${encoded}\n`,
      sha: sha1ish(`${ref}:${target}`),
      url: `${base}/repos/${fullName}/contents/${target}?ref=${ref}`,
      html_url: `https://github.example.test/${fullName}/blob/${ref}/${target}`,
      download_url: null,
    });
  }
  if (!isWidgets) return notFound();

  const issue = /^\/issues\/(\d+)(\/comments)?$/.exec(rest);
  if (rest === '/issues' && method === 'POST') {
    const body = await readJson(req);
    if (!body || typeof body.title !== 'string' || !body.title) return invalid('Issue', 'title');
    const created: Issue = {
      number: issues.length + 1,
      title: body.title,
      body: typeof body.body === 'string' ? body.body : null,
      labels: Array.isArray(body.labels) ? body.labels.map(String) : [],
      comments: [],
      user: `octo-${login}`,
    };
    issues.push(created);
    return send(201, issueJson(base, created), { location: `${base}/repos/${fullName}/issues/${created.number}` });
  }
  if (issue) {
    const found = issues[Number(issue[1]) - 1];
    if (!found) return notFound();
    if (!issue[2] && method === 'GET') return send(200, issueJson(base, found));
    if (issue[2] && method === 'GET') return page(found.comments.map((c) => ({ id: c.id, body: c.body, user: { login: c.user } })));
    if (issue[2] && method === 'POST') {
      const body = await readJson(req);
      if (!body || typeof body.body !== 'string' || !body.body) return invalid('IssueComment', 'body');
      const comment = { id: nextId++, body: body.body, user: `octo-${login}` };
      found.comments.push(comment);
      return send(201, {
        id: comment.id,
        body: comment.body,
        user: { login: comment.user },
        html_url: `https://github.example.test/${fullName}/issues/${found.number}#issuecomment-${comment.id}`,
        created_at: '2026-11-23T12:00:00Z',
      });
    }
  }
  if (rest === '/pulls' && method === 'POST') {
    const body = await readJson(req);
    if (!body || typeof body.title !== 'string' || !body.title) return invalid('PullRequest', 'title');
    const head = String(body.head ?? '');
    const base_ = String(body.base ?? '');
    if (!files[head]) return invalid('PullRequest', 'head', 'invalid');
    if (!files[base_]) return invalid('PullRequest', 'base', 'invalid');
    const created: Issue = {
      number: issues.length + 1,
      title: body.title,
      body: typeof body.body === 'string' ? body.body : null,
      labels: [],
      comments: [],
      user: `octo-${login}`,
      pull: { head, base: base_, draft: body.draft === true },
    };
    issues.push(created);
    return send(201, {
      id: 7000 + created.number,
      number: created.number,
      state: 'open',
      title: created.title,
      body: created.body,
      draft: created.pull!.draft,
      head: { ref: head, label: `octo-org:${head}` },
      base: { ref: base_, label: `octo-org:${base_}` },
      html_url: `https://github.example.test/${fullName}/pull/${created.number}`,
      user: { login: created.user },
    });
  }
  return notFound();
}
