/**
 * A run's bound secrets go only where they are bound. Whoever writes a run's input (here an OAuth
 * client holding only `tool:execute`, the scripted model making exactly the request the input
 * names) can make the run call any site; a secret is filled in only in a request header, only
 * for a request to an origin its binding names. Anything else is refused as a tool error that
 * names no value, before a byte leaves: the fixture server's inbox is where an attacker would
 * read what arrived, unmasked.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { cookieHeader, pkce, raw, register, authorizeQuery, tokensFor } from '../helpers/oauth';

const FIXTURE = inject('fixtureOrigin');
const PORT = new URL(FIXTURE).port;
const SKILL = { name: 'Caller', description: 'Calls an API.', category: 'development', prompt: '# Caller\nCall the API.' };

interface Received {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}
/** Everything the fixture's `/inbox/<name>` received, as the receiving site saw it. */
const inbox = async (name: string) => (await (await fetch(`${FIXTURE}/inbox/${name}/__read`)).json()) as Received[];
const newInbox = () => `secret-origins-${crypto.randomUUID()}`;

/** A workspace with a BYOK model (the scripted fixture), a skill and three secrets bound to it in the three ways. */
async function workspace(user: TestUser) {
  const auth = { token: user.token };
  expect((await call('/api/v1/byok', { ...auth, method: 'PUT', body: { key: inject('modelKeys').byok } })).status).toBe(200);
  expect((await call('/api/v1/skills/caller', { ...auth, method: 'PUT', body: SKILL })).status).toBe(200);
  const values: Record<string, string> = {};
  const bind = async (envVar: string, origins?: string[]) => {
    const value = `canary-${envVar.toLowerCase()}-${crypto.randomUUID().replace(/-/g, '')}`;
    values[envVar] = value;
    const secret = await call('/api/v1/secrets', { ...auth, body: { name: envVar, value } });
    expect(secret.status).toBe(201);
    const bound = await call('/api/v1/skills/caller/secrets', { ...auth, body: { secretId: secret.body.id, envVar, ...(origins ? { origins } : {}) } });
    expect(bound.status).toBe(201);
  };
  await bind('API_TOKEN', [FIXTURE]);
  await bind('ELSEWHERE_TOKEN', ['https://api.example.com']);
  // Bound as the interface spec shows a binding: `{secretId, envVar}`, no origins.
  await bind('LOOSE_TOKEN');
  return values;
}

/** The run an input asking for `request` makes, started with `headers`; answers what the user sees of it. */
async function runAsking(user: TestUser, headers: Record<string, string>, request: Record<string, unknown>, connector?: object) {
  const res = await call('/api/v1/skills/caller/run', {
    headers,
    body: { input: `http_request ${JSON.stringify(request)}`, ...(connector ? { connector } : {}) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const status = await waitForStatus(user, res.body.executionId, 'completed');
  const events = await call(`/api/v1/executions/${res.body.executionId}`, { token: user.token });
  return { answer: String(status.outputBlocks[0]?.text ?? ''), seen: JSON.stringify([status, events.body]) };
}

describe('a run sends a secret only in a header, only to an origin it is bound to', () => {
  let user: TestUser;
  let asClient: Record<string, string>;
  let values: Record<string, string>;
  beforeAll(async () => {
    const attack = await tokensFor('tool:execute');
    user = attack.user;
    asClient = { authorization: `Bearer ${attack.tokens.access_token}` };
    values = await workspace(user);
  });
  const noValueIn = (text: string) => {
    for (const value of Object.values(values)) expect(text).not.toContain(value);
  };

  it('fills a bound secret into a header of a request to its origin: the site receives it, the user sees it masked', async () => {
    const name = newInbox();
    const { answer, seen } = await runAsking(user, asClient, { url: `${FIXTURE}/inbox/${name}`, headers: { authorization: 'Bearer ${API_TOKEN}' } });
    expect(answer).toBe('The service answered: HTTP 200\n\nreceived');
    const [request, ...more] = await inbox(name);
    expect(more).toEqual([]);
    expect(request!.headers.authorization).toBe(`Bearer ${values.API_TOKEN}`);
    noValueIn(seen);
  });

  it.each([
    [
      'in the URL',
      (name: string) => ({ url: `${FIXTURE}/inbox/${name}?key=\${API_TOKEN}` }),
      'API_TOKEN cannot go in the url: a secret is sent only in a header',
    ],
    [
      'in the body',
      (name: string) => ({ url: `${FIXTURE}/inbox/${name}`, method: 'POST', body: 'token=${API_TOKEN}' }),
      'API_TOKEN cannot go in the body: a secret is sent only in a header',
    ],
    [
      'in a header to an origin it is not bound to',
      (name: string) => ({ url: `${FIXTURE}/inbox/${name}`, headers: { authorization: 'Bearer ${ELSEWHERE_TOKEN}' } }),
      `ELSEWHERE_TOKEN may be sent only to https://api.example.com, not to ${FIXTURE}`,
    ],
    [
      'in a header to a URL naming its origin as user info',
      (name: string) => ({ url: `http://api.example.com@127.0.0.1:${PORT}/inbox/${name}`, headers: { authorization: 'Bearer ${ELSEWHERE_TOKEN}' } }),
      `ELSEWHERE_TOKEN may be sent only to https://api.example.com, not to ${FIXTURE}`,
    ],
    [
      'in a header to another name of its host',
      (name: string) => ({ url: `http://localhost:${PORT}/inbox/${name}`, headers: { authorization: 'Bearer ${API_TOKEN}' } }),
      `API_TOKEN may be sent only to ${FIXTURE}, not to http://localhost:${PORT}`,
    ],
    [
      'bound without origins, in a header',
      (name: string) => ({ url: `${FIXTURE}/inbox/${name}`, headers: { authorization: 'Bearer ${LOOSE_TOKEN}' } }),
      'LOOSE_TOKEN is bound to no site, so it is never sent',
    ],
  ])('refuses a secret %s: nothing is sent, and the tool error names no value', async (_case, request, refusal) => {
    const name = newInbox();
    const { answer, seen } = await runAsking(user, asClient, request(name));
    expect(answer).toBe(`The service answered: Error: ${refusal}`);
    expect(await inbox(name)).toEqual([]);
    noValueIn(seen);
  });

  it('never hands a run the GitHub connector’s token: it is no secret a request can name', async () => {
    const github = `ghp_fixture_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
    expect((await call('/api/v1/connectors/github/connect', { token: user.token, body: { token: github } })).status).toBe(200);
    const key = await createKey(user, ['tool:execute', 'connector:github:read']);
    const name = newInbox();
    const { answer, seen } = await runAsking(
      user,
      { 'x-api-key': key.key },
      { url: `${FIXTURE}/inbox/${name}`, headers: { authorization: 'Bearer ${GITHUB_TOKEN}' } },
      { type: 'github', fields: { repo: 'octo-org/widgets' } },
    );
    expect(answer).toBe('The service answered: Error: No secret GITHUB_TOKEN is bound to this skill');
    expect(await inbox(name)).toEqual([]);
    expect(seen).not.toContain(github);
  });
});

describe('binding a secret to origins', () => {
  const bindTo = async (origins: unknown) => {
    const user = await signUp();
    await call('/api/v1/skills/caller', { method: 'PUT', token: user.token, body: SKILL });
    const secret = await call('/api/v1/secrets', { token: user.token, body: { name: 'API_TOKEN', value: 'a value' } });
    const bound = await call('/api/v1/skills/caller/secrets', { token: user.token, body: { secretId: secret.body.id, envVar: 'API_TOKEN', origins } });
    return { user, bound };
  };

  it('stores the origins as the URL parser spells them, once each, and lists them', async () => {
    const { user, bound } = await bindTo(['https://API.Example.com:443/', 'https://api.example.com', 'http://localhost:8787', 'https://[2001:db8::1]:8443']);
    expect(bound.status).toBe(201);
    expect(bound.body.origins).toEqual(['https://api.example.com', 'http://localhost:8787', 'https://[2001:db8::1]:8443']);
    expect((await call('/api/v1/skills/caller/secrets', { token: user.token })).body).toEqual([bound.body]);
  });

  it.each([
    ['http://api.example.com', 'origins.0'],
    ['https://api.example.com/v1', 'origins.0'],
    ['https://api.example.com/?key=1', 'origins.0'],
    ['https://api.example.com#top', 'origins.0'],
    ['https://user:pw@api.example.com', 'origins.0'],
    ['api.example.com', 'origins.0'],
    ['ftp://files.example.com', 'origins.0'],
    ['*', 'origins.0'],
  ])('refuses %s with 400 INVALID_INPUT naming %s', async (origin, field) => {
    const { bound } = await bindTo([origin]);
    expect(expectError(bound, 400, 'INVALID_INPUT').details?.field).toBe(field);
  });

  it('refuses more than ten origins, and origins that are not a list', async () => {
    const eleven = Array.from({ length: 11 }, (_, i) => `https://api${i}.example.com`);
    expect(expectError((await bindTo(eleven)).bound, 400, 'INVALID_INPUT').details?.field).toBe('origins');
    expect(expectError((await bindTo('https://api.example.com')).bound, 400, 'INVALID_INPUT').details?.field).toBe('origins');
  });
});

describe('the consent page', () => {
  it('says what tool:execute lets a client do with bound secrets', async () => {
    const user = await signUp();
    const clientId = (await register()).body.client_id;
    const page = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read tool:execute')}`, {
      headers: { cookie: cookieHeader(user) },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Run skills, which can send this workspace’s bound secrets to the sites each secret is bound to');
  });
});
