import { describe, expect, inject, it } from 'vitest';
import { call, createKey, signUp } from '../helpers/api';
import { connectMcp, envelope2026, failure, ok, post2026 } from '../helpers/mcp';

const REPO = 'octo-org/widgets';
const newToken = () => `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
const github = (path: string, token: string) =>
  fetch(`${inject('fixtureOrigin')}/github${path}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json() as Promise<any>);

/** A workspace whose key holds every connector scope, connected to the fake GitHub through the tool. */
async function setup(scopes = ['connector:list', 'connector:github:read', 'connector:github:exec'], connected = true) {
  const user = await signUp();
  const key = await createKey(user, scopes);
  const client = await connectMcp({ 'x-api-key': key.key });
  const token = newToken();
  if (connected) expect(ok(await client.callTool({ name: 'connect-connector', arguments: { connector: 'github', token } })).status).toBe('connected');
  return { user, client, token };
}

describe('connector tools over MCP', () => {
  it('list-connectors, get-connector-status, connect-connector and disconnect-connector manage the workspace’s connection', async () => {
    const { client, token } = await setup(undefined, false);
    expect(ok(await client.callTool({ name: 'list-connectors', arguments: {} })).connectors[0]).toMatchObject({ type: 'github', status: 'not_connected' });
    const connected = ok(await client.callTool({ name: 'connect-connector', arguments: { connector: 'github', token } }));
    expect(connected).toMatchObject({ status: 'connected', account: `octo-${token.slice(12)}`, tokenPreview: `…${token.slice(-4)}` });
    expect(JSON.stringify(connected)).not.toContain(token);
    expect(ok(await client.callTool({ name: 'get-connector-status', arguments: { connector: 'github' } }))).toMatchObject({
      status: 'connected',
      rateLimit: { limit: 5000, remaining: 4999 },
    });
    expect(ok(await client.callTool({ name: 'disconnect-connector', arguments: { connector: 'github' } })).status).toBe('not_connected');
    expect(ok(await client.callTool({ name: 'list-connectors', arguments: {} })).connectors[0].status).toBe('not_connected');
    expect(
      failure(await client.callTool({ name: 'connect-connector', arguments: { connector: 'github', token: 'ghp_wrong' } }), 'INVALID_INPUT').details,
    ).toMatchObject({ field: 'token', rule: 'rejected' });
  });

  it('list-github-repos follows GitHub’s Link pages to the end', async () => {
    const { client } = await setup();
    const { repositories, truncated } = ok(await client.callTool({ name: 'list-github-repos', arguments: {} }));
    // 231 repositories come in pages of 100, 100 and 31.
    expect(repositories).toHaveLength(231);
    expect(truncated).toBe(false);
    expect(new Set(repositories.map((r: { fullName: string }) => r.fullName)).size).toBe(231);
    expect(repositories[0]).toEqual({
      fullName: REPO,
      private: false,
      defaultBranch: 'main',
      description: 'The widget factory',
      htmlUrl: `https://github.example.test/${REPO}`,
    });
    expect(repositories.at(-1).fullName).toBe('octo-org/repo-230');
  });

  it('list-branches, list-sources and get-source-content read the repository', async () => {
    const { client } = await setup();
    const { branches } = ok(await client.callTool({ name: 'list-branches', arguments: { repo: REPO } }));
    expect(branches.map((b: { name: string }) => b.name)).toEqual(['main', 'develop', 'feature/sprockets']);
    expect(branches[0]).toMatchObject({ protected: true, sha: expect.stringMatching(/^[0-9a-f]{40}$/) });

    const tree = ok(await client.callTool({ name: 'list-sources', arguments: { repo: REPO } }));
    expect(tree).toMatchObject({ repo: REPO, ref: 'main', path: '', truncated: false });
    expect(tree.entries).toContainEqual({ path: 'src/lib', type: 'dir', size: null });
    expect(tree.entries).toContainEqual({ path: 'src/lib/widget.ts', type: 'file', size: 58 });
    const under = ok(await client.callTool({ name: 'list-sources', arguments: { connector: 'github', repo: REPO, ref: 'develop', path: 'src' } }));
    expect(under.entries.map((e: { path: string }) => e.path)).toEqual(['src/index.ts', 'src/lib', 'src/lib/widget.ts']);

    const file = ok(await client.callTool({ name: 'get-source-content', arguments: { repo: REPO, path: 'README.md', ref: 'develop' } }));
    expect(file).toMatchObject({
      repo: REPO,
      path: 'README.md',
      ref: 'develop',
      encoding: 'utf-8',
      content: '# Widgets (develop)\n\nUnreleased changes.\n',
      size: 41,
    });
    const binary = ok(await client.callTool({ name: 'get-source-content', arguments: { repo: REPO, path: 'assets/logo.png' } }));
    expect(binary).toMatchObject({ encoding: 'base64', content: 'iVBORw0KGgoA//4=', size: 11 });
    expect(failure(await client.callTool({ name: 'get-source-content', arguments: { repo: REPO, path: 'src' } }), 'INVALID_INPUT').details).toMatchObject({
      field: 'path',
      rule: 'not_a_file',
    });
  });

  it('answers GitHub’s 404 as NOT_FOUND and its 401 as CONNECTOR_NOT_CONNECTED', async () => {
    const { client, token } = await setup();
    const missing = failure(await client.callTool({ name: 'list-branches', arguments: { repo: 'octo-org/secret' } }), 'NOT_FOUND');
    expect(missing.details).toMatchObject({ connector: 'github', upstreamStatus: 404, upstreamMessage: 'Not Found' });
    failure(await client.callTool({ name: 'get-source-content', arguments: { repo: REPO, path: 'no/such/file.md' } }), 'NOT_FOUND');
    failure(await client.callTool({ name: 'list-sources', arguments: { repo: REPO, ref: 'no-such-branch' } }), 'NOT_FOUND');
    await fetch(`${inject('fixtureOrigin')}/github/__revoke`, { method: 'POST', body: JSON.stringify({ token }) });
    const refused = failure(await client.callTool({ name: 'list-github-repos', arguments: {} }), 'CONNECTOR_NOT_CONNECTED');
    expect(refused.details).toMatchObject({ reason: 'token_rejected', upstreamStatus: 401, upstreamMessage: 'Bad credentials' });
    expect(ok(await client.callTool({ name: 'get-connector-status', arguments: { connector: 'github' } })).status).toBe('token_rejected');
  });

  it('answers GitHub’s exhausted rate limit as RATE_LIMITED with the seconds until its reset', async () => {
    const { client } = await setup(undefined, false);
    // The fixture lets this token sign in (it is valid) but it has no requests left.
    const error = failure(
      await client.callTool({ name: 'connect-connector', arguments: { connector: 'github', token: 'ghp_fixture_ratelimited' } }),
      'RATE_LIMITED',
    );
    expect(error.details.retryAfterSeconds).toBeGreaterThan(3500);
  });

  it('every source tool is CONNECTOR_NOT_CONNECTED without a connection, and INVALID_CONNECTOR for an unknown type', async () => {
    const { client } = await setup(undefined, false);
    for (const [name, args] of [
      ['list-github-repos', {}],
      ['list-branches', { repo: REPO }],
      ['list-sources', { repo: REPO }],
      ['get-source-content', { repo: REPO, path: 'README.md' }],
      ['run-connector-action', { connector: 'github', action: 'create_issue', input: { repo: REPO, title: 'x' } }],
    ] as const) {
      expect(failure(await client.callTool({ name, arguments: args }), 'CONNECTOR_NOT_CONNECTED').details, name).toMatchObject({ connector: 'github' });
    }
    for (const [name, args] of [
      ['get-connector-status', { connector: 'jira' }],
      ['connect-connector', { connector: 'jira', token: 'x' }],
      ['disconnect-connector', { connector: 'jira' }],
      ['list-branches', { connector: 'jira', repo: REPO }],
      ['search-connector-actions', { connector: 'jira' }],
      ['run-connector-action', { connector: 'jira', action: 'create_issue' }],
      ['list-connector-triggers', { connector: 'jira' }],
    ] as const) {
      expect(failure(await client.callTool({ name, arguments: args }), 'INVALID_CONNECTOR').details, name).toEqual({ connector: 'jira', known: ['github'] });
    }
  });

  it('search-connector-actions searches names and descriptions; list-connector-triggers declares push and pull_request', async () => {
    const { client } = await setup(['connector:list'], false);
    const all = ok(await client.callTool({ name: 'search-connector-actions', arguments: {} })).actions;
    expect(all.map((a: { name: string }) => a.name)).toEqual(['create_issue', 'comment_on_issue', 'open_pull_request']);
    const pr = ok(await client.callTool({ name: 'search-connector-actions', arguments: { query: 'Pull Request' } })).actions;
    expect(pr.map((a: { name: string }) => a.name)).toEqual(['comment_on_issue', 'open_pull_request']);
    expect(pr[1]).toMatchObject({
      connector: 'github',
      writes: true,
      scope: 'connector:github:exec',
      inputSchema: { type: 'object', required: ['repo', 'title', 'head', 'base'] },
    });
    expect(
      ok(await client.callTool({ name: 'search-connector-actions', arguments: { query: 'draft github' } })).actions.map((a: { name: string }) => a.name),
    ).toEqual(['open_pull_request']);
    expect(ok(await client.callTool({ name: 'search-connector-actions', arguments: { query: 'calendar' } })).actions).toEqual([]);
    expect(ok(await client.callTool({ name: 'list-connector-triggers', arguments: {} })).triggers).toEqual([
      { connector: 'github', name: 'push', description: expect.any(String), delivery: 'workflow_trigger' },
      { connector: 'github', name: 'pull_request', description: expect.any(String), delivery: 'workflow_trigger' },
    ]);
  });

  it('run-connector-action creates an issue, comments on it and opens a pull request on GitHub, audited', async () => {
    const { user, client, token } = await setup();
    const issue = ok(
      await client.callTool({
        name: 'run-connector-action',
        arguments: { connector: 'github', action: 'create_issue', input: { repo: REPO, title: 'Sprockets rattle', body: 'Loudly.', labels: ['bug'] } },
      }),
    );
    expect(issue).toMatchObject({ connector: 'github', action: 'create_issue', result: { repo: REPO, title: 'Sprockets rattle', number: expect.any(Number) } });
    const number = issue.result.number;
    expect(await github(`/repos/${REPO}/issues/${number}`, token)).toMatchObject({
      title: 'Sprockets rattle',
      body: 'Loudly.',
      labels: [{ name: 'bug' }],
      user: { login: `octo-${token.slice(12)}` },
    });

    const comment = ok(
      await client.callTool({
        name: 'run-connector-action',
        arguments: { connector: 'github', action: 'comment_on_issue', input: { repo: REPO, issue_number: number, body: 'Confirmed.' } },
      }),
    );
    expect(comment.result).toMatchObject({ repo: REPO, issueNumber: number, id: expect.any(Number) });
    expect(await github(`/repos/${REPO}/issues/${number}/comments`, token)).toEqual([
      { id: comment.result.id, body: 'Confirmed.', user: { login: `octo-${token.slice(12)}` } },
    ]);

    const pull = ok(
      await client.callTool({
        name: 'run-connector-action',
        arguments: {
          connector: 'github',
          action: 'open_pull_request',
          input: { repo: REPO, title: 'Quiet sprockets', head: 'feature/sprockets', base: 'main', draft: true },
        },
      }),
    );
    expect(pull.result).toMatchObject({ repo: REPO, state: 'open', draft: true, htmlUrl: expect.stringContaining('/pull/') });

    const audit = await call('/api/v1/audit-logs', { token: user.token });
    expect(
      audit.body.data
        .filter((e: { action: string }) => e.action === 'connector.action')
        .map((e: { metadata: { action: string } }) => e.metadata.action)
        .sort(),
    ).toEqual(['comment_on_issue', 'create_issue', 'open_pull_request']);
  });

  it('run-connector-action checks the input against the action’s JSON Schema, and GitHub’s 422 is INVALID_INPUT', async () => {
    const { client } = await setup();
    const run = (action: string, input: unknown) => client.callTool({ name: 'run-connector-action', arguments: { connector: 'github', action, input } });
    expect(failure(await run('create_issue', { repo: REPO }), 'INVALID_INPUT').details).toMatchObject({ rule: 'schema' });
    expect(failure(await run('create_issue', { repo: 'nope', title: 'x' }), 'INVALID_INPUT').details).toMatchObject({ field: 'input.repo', rule: 'schema' });
    expect(failure(await run('create_issue', { repo: REPO, title: 'x', extra: 1 }), 'INVALID_INPUT').details.rule).toBe('schema');
    expect(failure(await run('delete_repo', {}), 'INVALID_INPUT').details).toMatchObject({ field: 'action', rule: 'unknown' });
    const refused = failure(await run('open_pull_request', { repo: REPO, title: 'x', head: 'no-such-branch', base: 'main' }), 'INVALID_INPUT');
    expect(refused.details).toMatchObject({
      rule: 'github_validation',
      upstreamStatus: 422,
      errors: [{ resource: 'PullRequest', field: 'head', code: 'invalid' }],
    });
    failure(await run('comment_on_issue', { repo: REPO, issue_number: 99999, body: 'x' }), 'NOT_FOUND');
  });

  it('needs connector:list, then connector:github:read for sources and connector:github:exec for actions and connecting', async () => {
    const { user } = await setup(['connector:list', 'connector:github:exec']);
    const noList = await connectMcp({ 'x-api-key': (await createKey(user, ['connector:github:read'])).key });
    expect(failure(await noList.callTool({ name: 'list-connectors', arguments: {} }), 'FORBIDDEN').details).toEqual({ scope: 'connector:list' });

    const lister = await connectMcp({ 'x-api-key': (await createKey(user, ['connector:list'])).key });
    expect(failure(await lister.callTool({ name: 'list-sources', arguments: { repo: REPO } }), 'FORBIDDEN').details).toEqual({
      scope: 'connector:github:read',
    });
    expect(failure(await lister.callTool({ name: 'list-github-repos', arguments: {} }), 'FORBIDDEN').details).toEqual({ scope: 'connector:github:read' });

    const reader = await connectMcp({ 'x-api-key': (await createKey(user, ['connector:list', 'connector:github:read'])).key });
    expect(ok(await reader.callTool({ name: 'list-branches', arguments: { repo: REPO } })).branches).toHaveLength(3);
    const denied = failure(
      await reader.callTool({ name: 'run-connector-action', arguments: { connector: 'github', action: 'create_issue', input: { repo: REPO, title: 'x' } } }),
      'FORBIDDEN',
    );
    expect(denied.details).toEqual({ scope: 'connector:github:exec' });
    expect(failure(await reader.callTool({ name: 'disconnect-connector', arguments: { connector: 'github' } }), 'FORBIDDEN').details).toEqual({
      scope: 'connector:github:exec',
    });
    expect(ok(await reader.callTool({ name: 'get-connector-status', arguments: { connector: 'github' } })).status).toBe('connected');
  });

  it('never sees another workspace’s connection', async () => {
    await setup();
    const { client } = await setup(undefined, false);
    expect(ok(await client.callTool({ name: 'get-connector-status', arguments: { connector: 'github' } })).status).toBe('not_connected');
    failure(await client.callTool({ name: 'list-sources', arguments: { repo: REPO } }), 'CONNECTOR_NOT_CONNECTED');
  });
});

describe('execute-skill with a connector', () => {
  const SKILL = { name: 'Reviewer', description: 'Reviews code.', category: 'development', prompt: '# Reviewer\nReview.' };

  it('is CONNECTOR_NOT_CONNECTED without a connection, and starts a run reading the repository with one', async () => {
    const { user, client, token } = await setup(['connector:list', 'connector:github:read', 'connector:github:exec', 'tool:execute'], false);
    await call('/api/v1/skills/reviewer', { method: 'PUT', token: user.token, body: SKILL });
    const connector = { type: 'github', fields: { repo: REPO } };
    failure(await client.callTool({ name: 'execute-skill', arguments: { slug: 'reviewer', input: 'Review', connector } }), 'CONNECTOR_NOT_CONNECTED');
    ok(await client.callTool({ name: 'connect-connector', arguments: { connector: 'github', token } }));
    const started = ok(await client.callTool({ name: 'execute-skill', arguments: { slug: 'reviewer', input: 'Review', connector } }));
    expect(started.status).toBe('started');
    failure(
      await client.callTool({ name: 'execute-skill', arguments: { slug: 'reviewer', input: 'Review', connector: { type: 'svn', fields: {} } } }),
      'INVALID_CONNECTOR',
    );
  });
});

describe('connector sign-in as an input request (2026-07-28)', () => {
  const ASKS_URLS = envelope2026({ elicitation: { url: {} } });
  type Body = { result?: Record<string, any>; error?: unknown };
  const listRepos = async (key: string, meta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ((await (await post2026(key, 'tools/call', { name: 'list-github-repos', arguments: {}, ...extra }, meta)).json()) as Body).result!;

  it('sends a client that opens URLs to the settings to connect, and the retry once connected runs the tool', async () => {
    const user = await signUp();
    const key = (await createKey(user, ['*'])).key;
    const asked = await listRepos(key, ASKS_URLS);
    expect(asked).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        'connect-github': {
          method: 'elicitation/create',
          params: { mode: 'url', url: 'https://service.test/settings#connectors', message: expect.stringContaining('github') },
        },
      },
    });
    const connect = await call('/api/v1/connectors/github/connect', { method: 'POST', token: user.token, body: { token: newToken() } });
    expect(connect.status).toBe(200);
    const answered = await listRepos(key, ASKS_URLS, { inputResponses: { 'connect-github': { action: 'accept' } } });
    expect(answered.isError).toBeFalsy();
    expect(answered.structuredContent).toBeDefined();
  });

  it('answers the refusal as before to a client that cannot open URLs, and to a retry that still finds it not connected', async () => {
    const user = await signUp();
    const key = (await createKey(user, ['*'])).key;
    for (const [meta, extra] of [
      [envelope2026({ elicitation: { form: {} } }), {}],
      [ASKS_URLS, { inputResponses: { 'connect-github': { action: 'accept' } } }],
      [ASKS_URLS, { inputResponses: { 'connect-github': { action: 'decline' } } }],
    ] as const) {
      const answer = await listRepos(key, meta, extra);
      expect(answer.isError).toBe(true);
      expect(JSON.parse(answer.content[0].text).error.code).toBe('CONNECTOR_NOT_CONNECTED');
    }
  });
});
