/**
 * Issue 11, part 3: every flow that handles a credential runs with recognisable values, and none
 * of them (nor its base64 or URL-encoded form) shows up anywhere a user or an operator can see:
 * response bodies and headers, execution events and streams, trace turns, audit and activity
 * entries, thread messages, artifacts, log lines, and (for good measure) any D1 row or R2 object.
 * The one response that issues a credential (a key's creation, a sign-in, a token grant, an
 * invitation) is the only place it may appear, and nowhere else.
 */
import { runInDurableObject } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, inject, it, type MockInstance, vi } from 'vitest';
import { now } from '../../workers/lib/clock';
import { runTools } from '../../workers/runtime/tools';
import { BASE, call, type CallOptions, waitForStatus, type TestUser } from '../helpers/api';
import { connectMcp, ok } from '../helpers/mcp';
import { turnOf } from '../helpers/turns';
import { authorizeCode, REDIRECT, register } from '../helpers/oauth';
import { boundShards, shardBinding, shardDbOf } from '../../workers/lib/db';
import { shardNumberOf } from '../helpers/shards';

const canary = (label: string) => `canary-${label}-${crypto.randomUUID().replace(/-/g, '')}`;

/** Everything a user or an operator saw during the test: where, and the text. */
const seen: { where: string; text: string }[] = [];
const saw = (where: string, text: string) => seen.push({ where, text });

/** Values that must never appear, by name. */
const canaries = new Map<string, string>();
const headerText = (headers: Headers) => [...headers].map(([k, v]) => `${k}: ${v}`).join('\n');

/** `call`, recording the answer. */
async function api(path: string, options: CallOptions = {}) {
  const res = await call(path, options);
  saw(
    `${options.method ?? (options.body === undefined && options.rawBody === undefined ? 'GET' : 'POST')} ${path} → ${res.status}`,
    `${headerText(res.headers)}\n${typeof res.body === 'string' ? res.body : JSON.stringify(res.body)}`,
  );
  return res;
}

/** A read that must answer 200, or what it should have shown was never looked at. */
async function read(path: string, options: CallOptions) {
  const res = await api(path, options);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res;
}

/** A raw request (forms, pages, token endpoint), recording the answer. */
async function raw(path: string, init: RequestInit = {}) {
  const res = await exports.default.fetch(`${BASE}${path}`, { redirect: 'manual', ...init });
  const text = await res.text();
  saw(`${init.method ?? 'GET'} ${path} → ${res.status}`, `${headerText(res.headers)}\n${text}`);
  return { status: res.status, headers: res.headers, text };
}

/** The forms of a value that would still give it away: as is, URL-encoded, and base64 (standard and url-safe) at each alignment. */
function encodings(value: string): string[] {
  const forms = new Set([value, encodeURIComponent(value)]);
  for (let pad = 0; pad < 3; pad++) {
    const b64 = btoa('x'.repeat(pad) + value).slice(4, -4);
    forms.add(b64);
    forms.add(b64.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms];
}

let logs: MockInstance[] = [];
const logLines = () => logs.flatMap((spy) => spy.mock.calls.map((args) => args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ')));

beforeAll(() => {
  logs = (['log', 'info', 'warn', 'error', 'debug'] as const).map((level) => vi.spyOn(console, level).mockImplementation(() => {}));
});
afterAll(() => vi.restoreAllMocks());

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
const httpTool = (secrets: { envVar: string; value: string; origins: string[] }[]) => {
  const turn = turnOf(null, { workspaceId: 'ws', shard: 1, userId: 'u', requestId: 'r', turnKey: 't' });
  return runTools(shardDbOf(env, 1), env, turn, secrets).find((t) => t.spec.name === 'http_request')!;
};

describe('secrets never leak', () => {
  it('runs every credential-handling flow and finds no value anywhere but the response that issued it', async () => {
    const password = canary('password');
    const email = `leak-${crypto.randomUUID().slice(0, 8)}@example.test`;
    canaries.set('password', password);

    // Accounts: sign-up, JSON sign-in (right and wrong), the sign-in page.
    const up = await call('/auth/sign-up/email', { body: { email, password, name: 'Leak Tester' }, headers: { 'cf-connecting-ip': '2001:db8::ee1' } });
    expect(up.status).toBe(201);
    saw('POST /auth/sign-up/email → 201', JSON.stringify(up.body).split(up.body.token).join('<issued>'));
    const session: string = up.body.token;
    canaries.set('session token', session);
    const current = await api('/api/v1/workspaces/current', { token: session });
    const user: TestUser = { ...up.body, email, password, workspaceId: current.body.id, shard: await shardNumberOf(current.body.id) };
    const auth = { token: session };

    const signIn = await call('/auth/sign-in/email', { body: { email, password } });
    expect(signIn.status).toBe(200);
    canaries.set('sign-in session token', signIn.body.token);
    saw('POST /auth/sign-in/email → 200', JSON.stringify(signIn.body).split(signIn.body.token).join('<issued>'));
    expect((await api('/auth/sign-in/email', { body: { email, password: `${password}-wrong` } })).status).toBe(401);
    expect((await api('/auth/sign-up/email', { body: { email, password, name: 'Again' }, headers: { 'cf-connecting-ip': '2001:db8::ee2' } })).status).toBe(409);

    const page = await exports.default.fetch(`${BASE}/auth/sign-in`);
    const csrf = /^__Host-csrf=([^;]*)/.exec(page.headers.getSetCookie().find((c) => c.startsWith('__Host-csrf='))!)![1]!;
    const form = (pw: string) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-csrf=${csrf}`, origin: BASE },
      body: new URLSearchParams({ csrf, email, password: pw, next: '/auth/sign-in' }),
    });
    expect((await raw('/auth/sign-in', form(`${password}-typo`))).status).toBe(401);
    const pageSession = await exports.default.fetch(`${BASE}/auth/sign-in`, { redirect: 'manual', ...form(password) });
    expect(pageSession.status).toBe(303);
    const cookieSession = /^__Host-session=([^;]*)/.exec(pageSession.headers.getSetCookie().find((c) => c.startsWith('__Host-session='))!)![1]!;
    canaries.set('cookie session', cookieSession);
    saw('POST /auth/sign-in (page) → 303', headerText(pageSession.headers).split(cookieSession).join('<issued>'));

    // API keys: shown once at creation. A key that does not exist is not echoed either.
    const created = await call('/api/v1/api-keys', {
      token: session,
      body: { name: 'everything', scopes: ['*'] },
      headers: { 'idempotency-key': 'leak-key-1' },
    });
    expect(created.status).toBe(201);
    const apiKey: string = created.body.key;
    canaries.set('API key', apiKey);
    saw('POST /api/v1/api-keys → 201', JSON.stringify(created.body).split(apiKey).join('<issued>'));
    const other = await call('/api/v1/api-keys', { token: session, body: { name: 'to revoke', scopes: ['profile:read'] } });
    canaries.set('revoked API key', other.body.key);
    await api(`/api/v1/api-keys/${other.body.id}/revoke`, { ...auth, body: {} });
    await api('/api/v1/api-keys', auth);
    // Reads go through the key as well as the session, keeping each under the rate limit.
    const asKey = { apiKey };
    expect((await api('/api/v1/profile', asKey)).status).toBe(200);
    expect((await api('/api/v1/profile', { apiKey: other.body.key })).status).toBe(403);
    const bogusKey = `sk_live_${canary('bogus').slice(0, 43)}`;
    canaries.set('unknown API key', bogusKey);
    expect((await api('/api/v1/profile', { apiKey: bogusKey })).status).toBe(401);
    const bogusSession = canary('bogus-session');
    canaries.set('unknown session token', bogusSession);
    expect((await api('/api/v1/profile', { token: bogusSession })).status).toBe(401);

    // The device flow: the device code is the device's credential, the key is shown once to the poll that collects it.
    const activation = await call('/api/v1/activate', { body: { client_label: 'Leak test device' } });
    expect(activation.status).toBe(200);
    const deviceCode: string = activation.body.device_code;
    canaries.set('device code', deviceCode);
    saw('POST /api/v1/activate → 200', JSON.stringify(activation.body).split(deviceCode).join('<issued>'));
    expect((await api(`/api/v1/activate/lookup?user_code=${activation.body.user_code}`, auth)).status).toBe(200);
    expect((await api('/api/v1/activate/confirm', { ...auth, body: { user_code: activation.body.user_code } })).status).toBe(200);
    const collected = await call('/api/v1/activate/poll', { body: { device_code: deviceCode } });
    expect(collected.body.status).toBe('approved');
    canaries.set('device flow API key', collected.body.api_key);
    saw('POST /api/v1/activate/poll → 200', JSON.stringify(collected.body).split(collected.body.api_key).join('<issued>'));
    expect((await api('/api/v1/activate/poll', { body: { device_code: deviceCode } })).status).toBe(409);
    expect((await api('/api/v1/profile', { apiKey: collected.body.api_key })).status).toBe(200);

    // Invitations: the token is shown once to the inviter.
    const invitee = `invitee-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const invitation = await call(`/api/v1/workspaces/${user.workspaceId}/invitations`, { token: session, body: { email: invitee, role: 'member' } });
    expect(invitation.status).toBe(201);
    canaries.set('invitation token', invitation.body.token);
    saw('POST invitations → 201', JSON.stringify(invitation.body).split(invitation.body.token).join('<issued>'));
    await api(`/api/v1/workspaces/${user.workspaceId}/invitations`, auth);
    const joiner = await call('/auth/sign-up/email', {
      body: { email: invitee, password: canary('joiner'), name: 'Joiner' },
      headers: { 'cf-connecting-ip': '2001:db8::ee3' },
    });
    expect((await api('/api/v1/invitations/accept', { token: joiner.body.token, body: { token: invitation.body.token } })).status).toBe(200);

    // Secrets: created, listed, rotated, renamed, refused; bound to a skill.
    const secretValue = canary('secret');
    const rotatedValue = canary('rotated');
    canaries.set('secret value', secretValue);
    canaries.set('rotated secret value', rotatedValue);
    expect((await api('/api/v1/skills/notes', { ...auth, method: 'PUT', body: SKILL })).status).toBe(200);
    const secret = await api('/api/v1/secrets', {
      ...auth,
      body: { name: 'API_TOKEN_OLD', value: secretValue },
      headers: { 'idempotency-key': 'leak-secret-1' },
    });
    expect(secret.status).toBe(201);
    expect(
      (
        await api('/api/v1/secrets', { ...auth, body: { name: 'API_TOKEN_OLD', value: secretValue }, headers: { 'idempotency-key': 'leak-secret-1' } })
      ).headers.get('idempotency-replayed'),
    ).toBe('true');
    expect((await api('/api/v1/secrets', { ...auth, body: { name: 'API_TOKEN_OLD', value: secretValue } })).status).toBe(409);
    expect((await api('/api/v1/secrets', { ...auth, body: { name: 'not a name', value: secretValue } })).status).toBe(400);
    expect((await api('/api/v1/secrets', { ...auth, body: { name: 'EMPTY', value: secretValue, extra: secretValue } })).status).toBeLessThan(500);
    expect((await api(`/api/v1/secrets/${secret.body.id}`, { ...auth, method: 'PATCH', body: { value: rotatedValue } })).status).toBe(200);
    expect((await api(`/api/v1/secrets/${secret.body.id}`, { ...auth, method: 'PATCH', body: { name: 'API_TOKEN' } })).status).toBe(200);
    expect((await api(`/api/v1/secrets/${secret.body.id}`, { ...auth, method: 'PATCH', body: { name: 'bad name', value: rotatedValue } })).status).toBe(400);
    await api('/api/v1/secrets', auth);
    expect(
      (await api('/api/v1/skills/notes/secrets', { ...auth, body: { secretId: secret.body.id, envVar: 'API_TOKEN', origins: [inject('fixtureOrigin')] } }))
        .status,
    ).toBe(201);
    await api('/api/v1/skills/notes/secrets', auth);

    // The workspace's live execution feed, open for every run that follows.
    const feed = await exports.default.fetch(`${BASE}/api/events`, { headers: { 'x-api-key': apiKey } });
    expect(feed.status).toBe(200);
    const feedReader = feed.body!.getReader();
    const feedText = { text: '' };
    const feedDone = (async () => {
      const decoder = new TextDecoder();
      for (let chunk = await feedReader.read(); !chunk.done; chunk = await feedReader.read()) feedText.text += decoder.decode(chunk.value);
    })().catch(() => undefined);
    for (let i = 0; i < 100 && !feedText.text.startsWith(': connected'); i++) await new Promise((r) => setTimeout(r, 10));

    // A run on the local model with the secret bound (it does not call http_request).
    const executions: { id: string; headers?: Record<string, string> }[] = [];
    const localRun = await api('/api/v1/skills/notes/run', { ...auth, body: { input: 'Summarise the week.' } });
    expect(localRun.status).toBe(200);
    executions.push({ id: localRun.body.executionId });
    await waitForStatus(user, localRun.body.executionId, 'completed');

    // BYOK: a canary key is stored, refused keys are not echoed, then the fixture's key runs.
    const byokCanary = `sk-ant-api03-${canary('byok')}`;
    canaries.set('BYOK key', byokCanary);
    canaries.set('fixture BYOK key', inject('modelKeys').byok);
    expect((await api('/api/v1/byok', { ...auth, method: 'PUT', body: { key: byokCanary } })).status).toBe(200);
    await api('/api/v1/byok', auth);
    await api('/api/v1/billing/subscription/tier', auth);
    const refusedByok = `pk-${canary('refused-byok')}`;
    canaries.set('refused BYOK key', refusedByok);
    expect((await api('/api/v1/byok', { ...auth, method: 'PUT', body: { key: refusedByok } })).status).toBe(400);
    expect((await api('/api/v1/byok', { ...auth, method: 'PUT', body: { key: `sk-has spaces ${canary('spaced-byok')}` } })).status).toBe(400);
    expect((await api('/api/v1/byok', { ...auth, method: 'PUT', body: { key: inject('modelKeys').byok } })).status).toBe(200);

    // A BYOK run whose model sends the bound secret through http_request to the echo fixture.
    const byokRun = await api('/api/v1/skills/notes/run', { ...auth, body: { input: `call ${inject('fixtureOrigin')}/echo with API_TOKEN` } });
    expect(byokRun.status).toBe(200);
    executions.push({ id: byokRun.body.executionId });
    const byokStatus = await waitForStatus(user, byokRun.body.executionId, 'completed');
    // The echo fixture, the origin the secret is bound to, did receive the value; only the masking stands between it and the user.
    expect(byokStatus.outputBlocks[0].text).toContain('"authorization":"Bearer [secret API_TOKEN]"');

    // Connectors: a canary GitHub token, REST and MCP, a refused token, a run with the connector.
    const githubToken = `ghp_fixture_canary${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
    canaries.set('GitHub token', githubToken);
    expect((await api('/api/v1/connectors/github/connect', { ...auth, body: { token: githubToken } })).status).toBe(200);
    await api('/api/v1/connectors/github/status', auth);
    await api('/api/v1/connectors', auth);
    const rejectedToken = `ghp_fixture_canary${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
    canaries.set('rejected GitHub token', rejectedToken);
    await fetch(`${inject('fixtureOrigin')}/github/__revoke`, { method: 'POST', body: JSON.stringify({ token: rejectedToken }) });
    expect((await api('/api/v1/connectors/github/connect', { ...auth, body: { token: rejectedToken } })).status).toBeGreaterThanOrEqual(400);
    const malformedToken = `not a token ${canary('malformed-token')}`;
    canaries.set('malformed GitHub token', malformedToken.slice('not a token '.length));
    expect((await api('/api/v1/connectors/github/connect', { ...auth, body: { token: malformedToken } })).status).toBeGreaterThanOrEqual(400);
    const connectorRun = await api('/api/v1/skills/notes/run', {
      ...auth,
      body: { input: 'What does the README say?', connector: { type: 'github', fields: { repo: 'octo-org/widgets' } } },
    });
    expect(connectorRun.status).toBe(200);
    executions.push({ id: connectorRun.body.executionId });
    await waitForStatus(user, connectorRun.body.executionId, 'completed');

    // MCP, on the API key: tools that touch connectors, runs and memory.
    const mcpGithubToken = `ghp_fixture_canary${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
    canaries.set('GitHub token via MCP', mcpGithubToken);
    const mcp = await connectMcp({ 'x-api-key': apiKey });
    const tool = async (name: string, args: Record<string, unknown>) => {
      const result = await mcp.callTool({ name, arguments: args });
      saw(`MCP ${name}`, JSON.stringify(result));
      return result;
    };
    saw('MCP tools/list', JSON.stringify(await mcp.listTools()));
    ok(await tool('connect-connector', { connector: 'github', token: mcpGithubToken }));
    await tool('connect-connector', { connector: 'github', token: rejectedToken });
    ok(await tool('get-connector-status', { connector: 'github' }));
    ok(await tool('list-github-repos', {}));
    ok(await tool('write-memory', { content: 'Release on Friday.', mode: 'append' }));
    ok(await tool('read-memory', {}));
    ok(await tool('get-credit-balance', {}));
    const mcpRun = ok(await tool('execute-skill', { slug: 'notes', input: `call ${inject('fixtureOrigin')}/echo with API_TOKEN` }));
    executions.push({ id: mcpRun.executionId });
    await waitForStatus(user, mcpRun.executionId, 'completed');
    ok(await tool('get-execution-status', { executionId: mcpRun.executionId }));
    await mcp.close();

    // Threads and traces.
    const thread = await api('/api/v1/threads', { ...auth, body: { skill_slug: 'notes', title: 'Chat' } });
    expect(thread.status).toBe(201);
    const said = await api(`/api/v1/threads/${thread.body.id}/messages`, { ...auth, body: { content: `call ${inject('fixtureOrigin')}/echo with API_TOKEN` } });
    expect(said.status).toBe(201);
    expect(said.body.reply.content).toContain('[secret API_TOKEN]');
    executions.push({ id: said.body.executionId });
    await api(`/api/v1/threads/${thread.body.id}/messages`, auth);
    await api('/api/v1/threads', auth);
    const traceList = await read('/api/v1/traces?limit=200', asKey);
    expect(traceList.body.items.length).toBeGreaterThanOrEqual(5);
    for (const trace of traceList.body.items as { id: string }[]) {
      await read(`/api/v1/traces/${trace.id}`, asKey);
      await read(`/api/v1/traces/${trace.id}/events?limit=500`, asKey);
      await read(`/api/v1/traces/${trace.id}/continue`, { ...asKey, body: {} });
    }

    // OAuth: the access and refresh tokens appear in the token responses only.
    const client = await register();
    expect(client.status).toBe(201);
    const flow = await authorizeCode('profile:read offline_access', { user, clientId: client.body.client_id });
    const tokenForm = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    const tokenResponse = await exports.default.fetch(
      `${BASE}/auth/oauth2/token`,
      tokenForm({ grant_type: 'authorization_code', code: flow.code, client_id: flow.clientId, redirect_uri: REDIRECT, code_verifier: flow.verifier }),
    );
    const tokens = (await tokenResponse.json()) as { access_token: string; refresh_token: string };
    expect(tokenResponse.status).toBe(200);
    canaries.set('OAuth access token', tokens.access_token);
    canaries.set('OAuth refresh token', tokens.refresh_token);
    saw('POST /auth/oauth2/token → 200', JSON.stringify(tokens).split(tokens.access_token).join('<issued>').split(tokens.refresh_token).join('<issued>'));
    expect((await api('/api/v1/profile', { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(200);
    expect((await api('/api/v1/memory', { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(403);
    const refreshed = await exports.default.fetch(
      `${BASE}/auth/oauth2/token`,
      tokenForm({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: flow.clientId }),
    );
    const rotated = (await refreshed.json()) as { access_token: string; refresh_token: string };
    expect(refreshed.status).toBe(200);
    canaries.set('rotated OAuth access token', rotated.access_token);
    canaries.set('rotated OAuth refresh token', rotated.refresh_token);
    saw(
      'POST /auth/oauth2/token (refresh) → 200',
      JSON.stringify(rotated).split(rotated.access_token).join('<issued>').split(rotated.refresh_token).join('<issued>'),
    );
    // The used refresh token again: refused, and the family revoked.
    expect(
      (await raw('/auth/oauth2/token', tokenForm({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: flow.clientId }))).status,
    ).toBe(400);
    expect((await raw('/auth/oauth2/revoke', tokenForm({ token: rotated.access_token, client_id: flow.clientId }))).status).toBe(200);
    expect((await api('/api/v1/profile', { headers: { authorization: `Bearer ${rotated.access_token}` } })).status).toBe(401);

    // Stripe: a signed grant, a wrongly signed one, and an ignored event type (which logs a warning).
    const webhookSecret = env.STRIPE_WEBHOOK_SECRET!;
    canaries.set('Stripe webhook secret', webhookSecret);
    const stripeEvent = (type: string, object: Record<string, unknown>) =>
      JSON.stringify({
        id: `evt_${crypto.randomUUID().replace(/-/g, '')}`,
        object: 'event',
        api_version: '2026-10-28.endive',
        created: Math.floor(now() / 1000),
        livemode: false,
        type,
        data: { object },
      });
    const deliver = async (payload: string, secretUsed = webhookSecret) =>
      api('/api/v1/billing/webhook', {
        method: 'POST',
        rawBody: payload,
        headers: {
          'stripe-signature': await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: secretUsed, timestamp: Math.floor(now() / 1000) }),
        },
      });
    const sessionObject = {
      id: `cs_test_${crypto.randomUUID().replace(/-/g, '')}`,
      object: 'checkout.session',
      mode: 'payment',
      payment_status: 'paid',
      status: 'complete',
      client_reference_id: user.user.id,
      metadata: { userId: user.user.id, packId: 'starter' },
    };
    expect((await deliver(stripeEvent('checkout.session.completed', sessionObject))).status).toBe(200);
    expect((await deliver(stripeEvent('checkout.session.completed', sessionObject), 'whsec_wrong_0123456789')).status).toBe(400);
    const ignored = stripeEvent('customer.created', { id: 'cus_1', object: 'customer' });
    expect((await deliver(ignored)).status).toBe(200);
    await api('/api/v1/billing/transactions', auth);
    await api('/api/v1/billing/balance', auth);

    // What every run recorded: the event log, the signed stream, the status and the artifacts.
    expect(executions).toHaveLength(5);
    await feedReader.cancel();
    await feedDone;
    // The feed carried every run's progress, the masked answer of the http_request run included.
    for (const { id } of executions) expect(feedText.text).toContain(`"executionId":"${id}"`);
    expect(feedText.text).toContain('[secret API_TOKEN]');
    saw('GET /api/events', feedText.text);
    for (const { id } of executions) {
      saw(`events of ${id}`, JSON.stringify(await env.EXECUTION_SESSION.getByName(id).events(0)));
      const streamToken = await read(`/api/v1/executions/${id}/stream-token`, asKey);
      const url = new URL(streamToken.body.sseUrl, BASE);
      expect((await raw(`${url.pathname}${url.search}`)).status).toBe(200);
      await read(`/api/v1/executions/${id}/status`, asKey);
    }
    await read('/api/v1/executions', asKey);
    const artifacts = await read('/api/v1/artifacts?limit=100', asKey);
    for (const artifact of artifacts.body.data as { id: string }[])
      expect((await raw(`/api/v1/artifacts/${artifact.id}/download`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);
    await read('/api/v1/memory', asKey);

    // Audit and activity, through the API and in D1.
    for (let after: string | null = null, pages = 0; pages < 20; pages++) {
      const audit = await read(`/api/v1/audit-logs?limit=100${after ? `&after_id=${after}` : ''}`, asKey);
      if (!audit.body.has_more) break;
      after = audit.body.last_id;
    }
    await read('/api/v1/activity?limit=100', asKey);

    // The whole of D1 (the global database and every shard) and R2, as an operator with database access sees it.
    const databases: [string, D1Database][] = [['global', env.DB], ...boundShards(env).map((n): [string, D1Database] => [`shard-${n}`, shardBinding(env, n)])];
    for (const [label, database] of databases) {
      const tables = await database
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'")
        .all<{ name: string }>();
      for (const { name } of tables.results) saw(`D1 ${label} ${name}`, JSON.stringify((await database.prepare(`SELECT * FROM "${name}"`).all()).results));
    }
    for (let cursor: string | undefined, more = true; more;) {
      const listed = await env.BUCKET.list({ cursor });
      for (const object of listed.objects) saw(`R2 ${object.key}`, await (await env.BUCKET.get(object.key))!.text());
      more = listed.truncated;
      cursor = listed.truncated ? listed.cursor : undefined;
    }

    // The console spy sees the service's own log lines: the Worker's (the ignored event above) and a Durable Object's.
    expect(logLines().some((line) => line.includes('customer.created') && line.includes('"level":"warn"'))).toBe(true);
    await runInDurableObject(env.EXECUTION_SESSION.getByName(executions[0]!.id), () => console.info('marker from inside the object'));
    expect(logLines()).toContain('marker from inside the object');
    for (const line of logLines()) saw('log line', line);

    // Sanity: the recorder would have caught a value (the API key's creation answer did carry it).
    expect(JSON.stringify(created.body)).toContain(apiKey);
    expect(seen.length).toBeGreaterThan(100);

    const leaks: string[] = [];
    for (const [name, value] of canaries) {
      for (const shape of encodings(value)) {
        for (const { where, text } of seen)
          if (text.includes(shape))
            leaks.push(
              `${name} (${shape === value ? 'as is' : `encoded ${shape}`}) in ${where}: …${text.slice(Math.max(0, text.indexOf(shape) - 80), text.indexOf(shape) + shape.length + 40)}…`,
            );
      }
    }
    expect(leaks).toEqual([]);
  });

  it('keeps every character of a secret out of an http_request answer cut off in the middle of it', async () => {
    const value = canary('cut');
    const http = httpTool([{ envVar: 'TOKEN', value, origins: [inject('fixtureOrigin')] }]);
    // The echo answers the body before the headers, so the value comes after the filler.
    const echo = (filler: number) =>
      http.run({ url: `${inject('fixtureOrigin')}/echo`, method: 'POST', headers: { 'x-token': '${TOKEN}' }, body: 'x'.repeat(filler) });
    // Where the echo puts the value (a body of the same order of size, so the echoed content-length has as many digits).
    const probe = 60_000;
    const head = 'HTTP 200\n\n'.length;
    const at = (await echo(probe)).content.indexOf('[secret TOKEN]') - head;
    // Now the answer is cut (at 64 KiB) five characters into the value.
    const cut = await echo(probe + 64 * 1024 - 5 - at);
    expect(cut.content.endsWith('"x-token":"\n[truncated]')).toBe(true);
    expect(cut.content).not.toContain(value.slice(0, 5));
  });

  it('keeps a secret out of what http_request tells the model when the request cannot be sent', async () => {
    // Upper-case letters too: a URL's host is lower-cased, so masking the parsed URL would miss it.
    const value = `Canary-Host-${crypto.randomUUID().slice(0, 8)}`;
    const http = httpTool([{ envVar: 'HOST_PART', value, origins: ['https://host.invalid'] }]);
    expect(await http.run({ url: 'https://host.invalid/', headers: { authorization: '${HOST_PART}' } })).toEqual({
      content: 'https://host.invalid/ could not be reached',
      isError: true,
    });
    expect(await http.run({ url: `https://\${HOST_PART}.invalid/` })).toEqual({
      content: 'HOST_PART cannot go in the url: a secret is sent only in a header',
      isError: true,
    });
  });
});
