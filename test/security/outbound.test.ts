import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { gzipSync, zipSync } from 'fflate';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import worker from '../../workers/index';
import { metadataUrlProblem } from '../../workers/auth/oauth/client-metadata';
import { AppError } from '../../workers/errors';
import { readArchive } from '../../workers/lib/archive';
import { BundleError } from '../../workers/lib/bundle';
import { shardDbOf } from '../../workers/lib/db';
import { fetchLimited, MAX_REDIRECTS, outboundUrl } from '../../workers/lib/outbound';
import { runTools } from '../../workers/runtime/tools';
import { BASE, call, expectError, signUp, type ApiResponse, type TestUser } from '../helpers/api';
import { authorizeQuery, cookieHeader, pkce, raw } from '../helpers/oauth';
import { turnOf } from '../helpers/turns';
import { OUTBOUND_MARKER } from '../setup/outbound-fixtures';

/**
 * URLs that users, clients and models supply reach only public https hosts unless the service
 * runs in local development; every redirect hop is judged again; a failed download says the
 * same whatever the host did and never quotes what it served; an archive stops expanding at
 * the cap whatever its headers declare. The suite runs with LOCAL_DEVELOPMENT=true (its
 * fixture server is on http://127.0.0.1), so a deployment is the same worker called with the
 * setting removed.
 */

const deployed = { ...env, LOCAL_DEVELOPMENT: undefined };
const local = { LOCAL_DEVELOPMENT: 'true' };

/** Calls the worker as a deployment runs it. */
async function deployedCall(path: string, user: TestUser, body: unknown): Promise<ApiResponse> {
  const ctx = createExecutionContext();
  const request = new Request(`${BASE}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': user.token },
    body: JSON.stringify(body),
  });
  const res = await worker.fetch(request, deployed, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, headers: res.headers, body: await res.json() };
}

const refusal = (thunk: () => unknown) => {
  try {
    thunk();
  } catch (error) {
    if (error instanceof AppError) return error.details?.rule;
    throw error;
  }
  return null;
};

/** Loopback, private and special-purpose hosts, in the notations that used to slip past. */
const PRIVATE_URLS = [
  'https://169.254.169.254/latest/meta-data/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:a9fe:a9fe]/',
  'https://[::127.0.0.1]/',
  'https://[2002:7f00:1::]/',
  'https://[2002:a9fe:a9fe::1]/',
  'https://[64:ff9b::a9fe:a9fe]/',
  'https://[64:ff9b::10.0.0.1]/',
  'https://[64:ff9b:1::a00:1]/',
  'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
  'https://[2001:db8::1]/',
  'https://localhost./',
  'https://LOCALHOST/',
  'https://app.localhost/',
  'https://metadata.google.internal./computeMetadata/v1/',
  'https://metadata.google.internal/computeMetadata/v1/',
  'https://metadata/computeMetadata/v1/',
  'https://printer.local./',
  'https://router.home.arpa/',
  'https://0x7f.1/',
  'https://2130706433/',
  'https://0177.0.0.1/',
  'https://127.0.0.1./',
  'https://0.0.0.0/',
  'https://[::]/',
  'https://[::1]/',
  'https://10.0.0.1/',
  'https://172.16.5.4/',
  'https://192.168.1.1/',
  'https://100.64.0.1/',
  'https://100.100.100.200/',
  'https://192.0.0.192/',
  'https://198.18.0.1/',
  'https://224.0.0.1/',
  'https://255.255.255.255/',
  'https://[fc00::1]/',
  'https://[fd00:ec2::254]/',
  'https://[fe80::1]/',
  'https://[ff02::1]/',
  'http://127.0.0.1:8080/',
];

const PUBLIC_URLS = [
  'https://example.com/a',
  'https://api.github.com./repos',
  'https://8.8.8.8/',
  'https://[2606:4700:4700::1111]/',
  'https://[2002:808:808::]/',
  'https://[64:ff9b::808:808]/',
];

describe('the outbound address rules', () => {
  it.each(PRIVATE_URLS)('refuse %s outside local development, for downloads, tools and client metadata alike', (url) => {
    expect(refusal(() => outboundUrl(url, 'url', deployed))).toBe('private_address');
    const document = new URL('/client.json', url).href;
    expect(metadataUrlProblem(document, { localDevelopment: false })).toBe('The client id URL points at a private or loopback address.');
  });

  it('let public https hosts through, and plain http to them never', () => {
    for (const url of PUBLIC_URLS)
      expect(
        refusal(() => outboundUrl(url, 'url', deployed)),
        url,
      ).toBeNull();
    expect(refusal(() => outboundUrl('http://example.com/', 'url', deployed))).toBe('https');
    expect(refusal(() => outboundUrl('http://example.com/', 'url', local))).toBe('https');
    expect(refusal(() => outboundUrl('file:///etc/passwd', 'url', local))).toBe('https');
  });

  it('open loopback and private hosts, over http too, only in local development', () => {
    for (const url of ['http://127.0.0.1:8080/', 'http://10.0.0.1/', 'https://[::1]/', 'http://localhost./']) {
      expect(
        refusal(() => outboundUrl(url, 'url', local)),
        url,
      ).toBeNull();
    }
    expect(metadataUrlProblem('http://10.0.0.1/client.json', { localDevelopment: true })).toBeNull();
  });
});

describe('a deployment (LOCAL_DEVELOPMENT unset)', () => {
  const archiveUrl = () => `${inject('fixtureOrigin')}/fixtures/skills/archive/${inject('fixtureCommit')}.tar.gz`;

  it('refuses to install a skill from an archive on a loopback address', async () => {
    const user = await signUp();
    const res = await deployedCall('/api/v1/install', user, { source: { type: 'url', url: archiveUrl() }, path: 'skills/archived-skill' });
    const error = expectError(res, 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'source.url', rule: 'private_address' });
    // The same request in local development installs: only the setting differs.
    const allowed = await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url: archiveUrl() }, path: 'skills/archived-skill' } });
    expect(allowed.status).toBe(200);
  });

  it('refuses to install from a registry on a loopback address', async () => {
    const user = await signUp();
    const res = await deployedCall('/api/v1/skills/remote-skill/install', user, { registry: inject('fixtureOrigin') });
    expect(expectError(res, 400, 'INVALID_INPUT').details).toMatchObject({ field: 'registry', rule: 'private_address' });
  });

  it('refuses a run’s http_request to a loopback address, before anything is sent', async () => {
    const turn = turnOf(null);
    const http = runTools(shardDbOf(env, turn.actor.shard), deployed, turn).find((t) => t.spec.name === 'http_request')!;
    expect(await http.run({ url: `${inject('fixtureOrigin')}/echo` })).toEqual({ content: 'url points to a loopback or private address', isError: true });
    expect(await http.run({ url: 'https://[64:ff9b::a9fe:a9fe]/latest/meta-data/' })).toEqual({
      content: 'url points to a loopback or private address',
      isError: true,
    });
  });

  it('refuses a client metadata document named by a trailing-dot local name', async () => {
    const user = await signUp();
    const ctx = createExecutionContext();
    const query = authorizeQuery('https://metadata.google.internal./client.json', (await pkce()).challenge, 'profile:read');
    const res = await worker.fetch(new Request(`${BASE}/auth/oauth2/authorize?${query}`, { headers: { cookie: cookieHeader(user) } }), deployed, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('points at a private or loopback address');
  });
});

describe('redirects', () => {
  afterEach(() => vi.unstubAllGlobals());

  /** A stand-in for the network: each URL's answer, and the URLs asked for in order. */
  function network(answers: Record<string, Response | (() => Response)>) {
    const asked: { url: string; redirect: RequestInit['redirect'] }[] = [];
    vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input instanceof Request ? input.url : input);
      asked.push({ url, redirect: init?.redirect });
      const answer = answers[url];
      if (!answer) throw new TypeError('unreachable');
      return typeof answer === 'function' ? answer() : answer;
    });
    return asked;
  }
  const moved = (location: string) => new Response(null, { status: 302, headers: { location } });

  it('are followed one hop at a time, each hop judged like the first URL', async () => {
    const asked = network({
      'https://downloads.example.test/skill.tar.gz': moved('https://cdn.example.test/skill.tar.gz'),
      'https://cdn.example.test/skill.tar.gz': new Response('archive bytes'),
    });
    const bytes = await fetchLimited('https://downloads.example.test/skill.tar.gz', 'source.url', 1024, deployed);
    expect(new TextDecoder().decode(bytes)).toBe('archive bytes');
    expect(asked).toEqual([
      { url: 'https://downloads.example.test/skill.tar.gz', redirect: 'manual' },
      { url: 'https://cdn.example.test/skill.tar.gz', redirect: 'manual' },
    ]);
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'private_address'],
    ['https://[::ffff:127.0.0.1]/admin', 'private_address'],
    ['https://metadata.google.internal./computeMetadata/v1/', 'private_address'],
    ['http://downloads.example.test/skill.tar.gz', 'https'],
  ])('to %s are refused without being fetched', async (location, rule) => {
    const asked = network({ 'https://downloads.example.test/skill.tar.gz': moved(location) });
    const refused = await fetchLimited('https://downloads.example.test/skill.tar.gz', 'source.url', 1024, deployed).catch((error: AppError) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).details).toMatchObject({ field: 'source.url', rule });
    expect(asked.map((a) => a.url)).toEqual(['https://downloads.example.test/skill.tar.gz']);
  });

  it(`stop after ${MAX_REDIRECTS} hops`, async () => {
    network(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`https://hop${i}.example.test/`, moved(`https://hop${i + 1}.example.test/`)])));
    const refused = await fetchLimited('https://hop0.example.test/', 'source.url', 1024, deployed).catch((error: AppError) => error);
    expect((refused as AppError).details).toMatchObject({ rule: 'unreachable' });
  });

  it('from the fixture server to a plain-http public host are refused by an install', async () => {
    const user = await signUp();
    const url = `${inject('fixtureOrigin')}/outbound/redirect?to=${encodeURIComponent('http://downloads.example.test/skill.tar.gz')}`;
    const error = expectError(await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url } } }), 400, 'INVALID_INPUT');
    expect(error).toMatchObject({ message: 'source.url redirects to a URL that is not https', details: { field: 'source.url', rule: 'https' } });
  });
});

describe('a failed download', () => {
  it('reads the same whether the host is unreachable or answers 404 or 500, and quotes nothing it served', async () => {
    const user = await signUp();
    const origin = inject('fixtureOrigin');
    const answers = [];
    for (const url of [`${origin}/fixtures/none.tar.gz`, `${origin}/outbound/status-500`, 'http://127.0.0.1:1/skill.tar.gz']) {
      const error = expectError(await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url } } }), 400, 'INVALID_INPUT');
      answers.push({ ...error, message: error.message.replace(new URL(url).origin, '<origin>') });
    }
    expect(answers[0]).toEqual({ code: 'INVALID_INPUT', message: '<origin> could not be fetched', details: { field: 'source.url', rule: 'unreachable' } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    expect(JSON.stringify(answers)).not.toContain(OUTBOUND_MARKER);
  });

  it('of something that is not a skill archive names the rule it broke, never the bytes', async () => {
    const user = await signUp();
    const url = `${inject('fixtureOrigin')}/outbound/leaky.tar`;
    const res = await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url } } });
    const error = expectError(res, 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'bundle', rule: 'unsafe_path' });
    expect(JSON.stringify(res.body)).not.toContain(OUTBOUND_MARKER);
  });

  it('of a client metadata document reads the same for a 404 and an unreachable host, and quotes no redirect URI it holds', async () => {
    const page = async (clientId: string) => {
      const user = await signUp();
      const res = await raw(`/auth/oauth2/authorize?${authorizeQuery(clientId, (await pkce()).challenge, 'profile:read')}`, {
        headers: { cookie: cookieHeader(user) },
      });
      expect(res.status).toBe(400);
      return res.text();
    };
    const origin = inject('fixtureOrigin');
    for (const clientId of [`${origin}/oauth-client/missing`, 'http://127.0.0.1:1/oauth-client/good']) {
      const html = await page(clientId);
      expect(html).toContain('The client metadata document could not be fetched.');
      expect(html).not.toContain('answered');
    }
    const refused = await page(`${origin}/oauth-client/http-redirect`);
    expect(refused).toContain('redirect_uris[0] must use https');
    expect(refused).not.toContain('http://client.example/callback');
  });
});

describe('archives that understate their size', () => {
  it.each(['lying.tar.gz', 'lying.zip'])('%s stops expanding at the cap: a clear 400, nothing installed', async (name) => {
    const user = await signUp();
    const url = `${inject('fixtureOrigin')}/outbound/${name}`;
    const res = await call('/api/v1/install', { token: user.token, body: { source: { type: 'url', url } } });
    expect(expectError(res, 400, 'INVALID_INPUT').details).toMatchObject({ field: 'bundle', rule: 'archive_too_large' });
    expect((await call('/api/v1/skills/lying-archive', { token: user.token })).status).toBe(404);
  });
});

describe('archives that are corrupt', () => {
  const ruleOf = (bytes: Uint8Array) => {
    try {
      readArchive(bytes);
    } catch (error) {
      return error instanceof BundleError ? error.rule : `not a BundleError: ${String(error)}`;
    }
    return null;
  };

  it('are refused as archives (a 400), never thrown as internal errors', () => {
    const gz = gzipSync(new TextEncoder().encode('x'.repeat(4096)));
    gz.fill(0xff, 10, gz.length - 8);
    expect(ruleOf(gz)).toBe('archive');
    const zip = zipSync({ 'SKILL.md': new TextEncoder().encode('y'.repeat(4096)) });
    expect(ruleOf(zip.subarray(0, zip.length - 40))).toBe('archive');
  });
});
