import { describe, expect, it } from 'vitest';
import { call, expectError, signUp, type TestUser } from '../helpers/api';
import { deliverGithub } from '../helpers/triggers';
import { definition, inputOf, install, runsOf } from '../helpers/workflows';

/** Declares push and opened pull requests, and waits for input so a run's input can be read while it is unfinished. */
const reviewer = definition('review', [{ type: 'tool', id: 'wait', toolId: 'human-input', options: { metadata: { prompt: 'Go on?' } } }], {
  inputSchema: { type: 'object', properties: { repository: { type: 'string' }, sha: { type: 'string' } }, required: ['repository', 'sha'] },
  metadata: { name: 'Review', triggers: ['manual', { source: 'github', events: ['push', 'pull_request.opened'] }] },
});

async function setUp(def: unknown = reviewer) {
  const user = await signUp();
  await install(user, 'review', def);
  return user;
}

const triggers = (user: TestUser, path = '', init: { method?: string; body?: unknown } = {}) =>
  call(`/api/v1/workflows/review/triggers${path}`, { token: user.token, ...init });

async function createGithubTrigger(user: TestUser, body: Record<string, unknown> = {}) {
  const res = await triggers(user, '', { body: { source: 'github', ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; url: string; secret: string; events: string[] };
}

const deliver = deliverGithub;

const repository = { full_name: 'octo/hello', name: 'hello', owner: { login: 'octo' } };
const push = {
  ref: 'refs/heads/main',
  before: 'a'.repeat(40),
  after: 'b'.repeat(40),
  created: false,
  deleted: false,
  forced: false,
  compare: 'https://github.com/octo/hello/compare/aaaaaaa...bbbbbbb',
  commits: [{ id: 'b'.repeat(40), message: 'Fix login', author: { name: 'Ana', username: 'ana' }, url: 'https://github.com/octo/hello/commit/bbb' }],
  head_commit: { id: 'b'.repeat(40), message: 'Fix login', author: { name: 'Ana', username: 'ana' }, url: 'https://github.com/octo/hello/commit/bbb' },
  repository,
  sender: { login: 'ana' },
};
const pullRequest = (action: string) => ({
  action,
  number: 7,
  pull_request: {
    number: 7,
    title: 'Add dark mode',
    body: 'Closes #3',
    html_url: 'https://github.com/octo/hello/pull/7',
    state: 'open',
    draft: false,
    merged: false,
    user: { login: 'ana' },
    head: { ref: 'dark-mode', sha: 'c'.repeat(40), repo: { full_name: 'ana/hello' } },
    base: { ref: 'main', sha: 'd'.repeat(40), repo: { full_name: 'octo/hello' } },
  },
  repository,
  sender: { login: 'ana' },
});

const runs = (user: TestUser) => runsOf(user, 'review');

describe('GitHub triggers: deliveries', () => {
  it('a signed push starts one run whose input is built from the event', async () => {
    const user = await setUp();
    const trigger = await createGithubTrigger(user, { name: 'octo/hello webhook' });
    expect(trigger).toMatchObject({ source: 'github', auth: 'github_signature', events: ['push', 'pull_request.opened'], repository: null });
    expect(trigger.url).toBe(`https://service.test/hooks/workflows/${trigger.id}`);

    const res = await deliver(trigger, 'push', push, { delivery: 'delivery-push-1' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ workflowId: 'review', status: 'started' });
    expect(await inputOf(user, res.body.runId)).toEqual({
      event: 'push',
      action: null,
      deliveryId: 'delivery-push-1',
      repository: 'octo/hello',
      sender: 'ana',
      ref: 'refs/heads/main',
      branch: 'main',
      sha: 'b'.repeat(40),
      push: {
        before: 'a'.repeat(40),
        after: 'b'.repeat(40),
        created: false,
        deleted: false,
        forced: false,
        compareUrl: 'https://github.com/octo/hello/compare/aaaaaaa...bbbbbbb',
        commitCount: 1,
        commits: [{ id: 'b'.repeat(40), message: 'Fix login', author: 'ana', url: 'https://github.com/octo/hello/commit/bbb' }],
        headCommit: { id: 'b'.repeat(40), message: 'Fix login', author: 'ana', url: 'https://github.com/octo/hello/commit/bbb' },
      },
    });
    expect((await runs(user)).map((r) => r.runId)).toEqual([res.body.runId]);
    expect((await triggers(user, `/${trigger.id}`)).body.lastDeliveryAt).not.toBeNull();
  });

  it('an opened pull request sent as GitHub’s default form starts a run with the pull request’s number, title and refs', async () => {
    const user = await setUp();
    const trigger = await createGithubTrigger(user);
    const res = await deliver(trigger, 'pull_request', pullRequest('opened'), { form: true, delivery: 'delivery-pr-1' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(await inputOf(user, res.body.runId)).toMatchObject({
      event: 'pull_request',
      action: 'opened',
      repository: 'octo/hello',
      sender: 'ana',
      ref: 'refs/pull/7/head',
      branch: 'dark-mode',
      sha: 'c'.repeat(40),
      pullRequest: {
        number: 7,
        title: 'Add dark mode',
        body: 'Closes #3',
        url: 'https://github.com/octo/hello/pull/7',
        author: 'ana',
        draft: false,
        head: { ref: 'dark-mode', sha: 'c'.repeat(40), repository: 'ana/hello' },
        base: { ref: 'main', sha: 'd'.repeat(40) },
      },
    });
  });

  it('a redelivered X-GitHub-Delivery answers the same run and starts nothing new', async () => {
    const user = await setUp();
    const trigger = await createGithubTrigger(user);
    const first = await deliver(trigger, 'push', push, { delivery: 'same-guid' });
    const again = await deliver(trigger, 'push', push, { delivery: 'same-guid' });
    expect(again.status).toBe(202);
    expect(again.body.runId).toBe(first.body.runId);
    expect(await runs(user)).toHaveLength(1);
  });

  it('a bad or missing signature is 401 and starts nothing; the trigger’s own secret’s is taken', async () => {
    const user = await setUp();
    const trigger = await createGithubTrigger(user);
    const other = await createGithubTrigger(user);
    expectError(await deliver(trigger, 'push', push, { secret: other.secret }), 401, 'UNAUTHORIZED');
    // A Standard Webhooks sender's headers do not open a GitHub trigger.
    expectError(await call(new URL(trigger.url).pathname, { method: 'POST', body: push, headers: { 'x-github-event': 'push' } }), 401, 'UNAUTHORIZED');
    expect(await runs(user)).toEqual([]);
    // The same delivery signed with the trigger's own secret is taken.
    const signed = await deliver(trigger, 'push', push);
    expect(signed.status).toBe(202);
    expect((await runs(user)).map((r) => r.runId)).toEqual([signed.body.runId]);
  });

  it('answers a ping 200, and events, actions or repositories the trigger did not ask for 200 without a run', async () => {
    const user = await setUp();
    const trigger = await createGithubTrigger(user);
    const ping = await deliver(trigger, 'ping', { zen: 'Keep it logically awesome.', hook_id: 1, repository });
    expect(ping.status).toBe(200);
    expect(ping.body).toMatchObject({ status: 'pong', event: 'ping' });
    const closed = await deliver(trigger, 'pull_request', pullRequest('closed'));
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ status: 'ignored', event: 'pull_request.closed' });
    expect(closed.body.message).toMatch(/push, pull_request\.opened/);
    expect((await deliver(trigger, 'issues', { action: 'opened', repository })).body).toMatchObject({ status: 'ignored', event: 'issues.opened' });

    const pinned = await createGithubTrigger(user, { repository: 'octo/other', events: ['push'] });
    const elsewhere = await deliver(pinned, 'push', push);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body).toMatchObject({ status: 'ignored', event: 'push' });
    expect(elsewhere.body.message).toMatch(/octo\/other/);
    expect((await deliver(pinned, 'pull_request', pullRequest('opened'))).body.status).toBe('ignored');
    expect(await runs(user)).toEqual([]);
  });

  it('an event whose input the workflow’s inputSchema refuses is 400 naming the field, and starts nothing', async () => {
    const strict = definition('review', [{ type: 'tool', id: 'wait', toolId: 'human-input' }], {
      inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
      metadata: { triggers: [{ source: 'github', events: ['push'] }] },
    });
    const user = await setUp(strict);
    const trigger = await createGithubTrigger(user);
    const refused = expectError(await deliver(trigger, 'push', push), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ field: 'inputs', rule: 'input_schema' });
    expect(refused.message).toMatch(/title/);
    expect(await runs(user)).toEqual([]);
  });
});

describe('GitHub triggers: creating and declaring', () => {
  it('takes only events the workflow declares, and a workflow that declares none takes no GitHub trigger', async () => {
    const user = await setUp();
    expect((await createGithubTrigger(user, { events: ['pull_request.opened'] })).events).toEqual(['pull_request.opened']);
    const undeclared = expectError(await triggers(user, '', { body: { source: 'github', events: ['push', 'pull_request'] } }), 400, 'INVALID_INPUT');
    expect(undeclared.details).toMatchObject({ field: 'events.1', rule: 'not_declared' });
    expect(expectError(await triggers(user, '', { body: { source: 'github', auth: 'bearer' } }), 400, 'INVALID_INPUT').details?.field).toBe('auth');
    expect(expectError(await triggers(user, '', { body: { events: ['push'] } }), 400, 'INVALID_INPUT').details?.field).toBe('events');

    const plain = await setUp(definition('review', [{ type: 'tool', id: 'wait', toolId: 'human-input' }], { metadata: { triggers: ['manual'] } }));
    expect(expectError(await triggers(plain, '', { body: { source: 'github' } }), 400, 'INVALID_INPUT').details).toMatchObject({
      field: 'source',
      rule: 'not_declared',
    });
  });

  it('a declared repository is the trigger’s, and no other may be asked for', async () => {
    const pinned = definition('review', [{ type: 'tool', id: 'wait', toolId: 'human-input' }], {
      metadata: { triggers: [{ source: 'github', events: ['push'], repository: 'octo/hello' }] },
    });
    const user = await setUp(pinned);
    expect(await createGithubTrigger(user)).toMatchObject({ repository: 'octo/hello', events: ['push'] });
    const other = expectError(await triggers(user, '', { body: { source: 'github', repository: 'octo/other' } }), 400, 'INVALID_INPUT');
    expect(other.details).toMatchObject({ field: 'repository', rule: 'not_declared' });
  });

  it('install checks a GitHub declaration and leaves other trigger metadata alone', async () => {
    const user = await signUp();
    const graph = [{ type: 'tool', id: 'wait', toolId: 'human-input' }];
    const installing = (triggers: unknown[]) =>
      call('/api/v1/workflows/declared/install', { token: user.token, body: definition('declared', graph, { metadata: { triggers } }) });
    for (const [triggers, field, rule] of [
      [[{ source: 'github', events: ['push', 'issues'] }], 'metadata.triggers.0.events.1', 'github_trigger'],
      [['manual', { source: 'github', events: [] }], 'metadata.triggers.1.events', 'github_trigger'],
      [[{ source: 'github', events: ['push'], repository: 'not a repo' }], 'metadata.triggers.0.repository', 'github_trigger'],
      [[{ source: 'github', events: ['push'], branch: 'main' }], 'metadata.triggers.0', 'github_trigger'],
      [
        [
          { source: 'github', events: ['push'] },
          { source: 'github', events: ['pull_request'] },
        ],
        'metadata.triggers.1',
        'duplicate',
      ],
    ] as const) {
      const refused = expectError(await installing([...triggers]), 400, 'INVALID_INPUT');
      expect(refused.details, JSON.stringify(triggers)).toMatchObject({ field, rule });
    }
    const kept = [{ source: 'slack', channel: '#ops' }, 'manual', { source: 'github', events: ['pull_request.opened'], repository: 'octo/hello' }];
    expect((await installing(kept)).status).toBe(201);
    expect((await call('/api/v1/workflows/definitions', { token: user.token })).body.workflows[0].triggers).toEqual(kept);
  });

  it('another workspace’s GitHub trigger is 404 on every management route', async () => {
    const owner = await setUp();
    const other = await setUp();
    const trigger = await createGithubTrigger(owner);
    for (const [method, path] of [
      ['GET', `/${trigger.id}`],
      ['POST', `/${trigger.id}/rotate-secret`],
      ['DELETE', `/${trigger.id}`],
    ] as const) {
      expectError(await triggers(other, path, { method }), 404, 'NOT_FOUND');
    }
    expect((await triggers(other)).body.triggers).toEqual([]);
    expect((await deliver(trigger, 'push', push)).status).toBe(202);
  });
});
