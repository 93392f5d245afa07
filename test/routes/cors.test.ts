import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { BASE, call, createKey, signUp, waitForStatus } from '../helpers/api';

/** Pages on other origins: the REST API by headers, the URL-credential streams by EventSource. */

const ORIGIN = 'https://elsewhere.example';

const preflight = (path: string, method: string, headers: string) =>
  exports.default.fetch(`${BASE}${path}`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

describe('/api/v1 from another origin', () => {
  it('answers a preflight 204 for any origin, without credentials, allowing the API headers', async () => {
    const res = await preflight('/api/v1/skills/some-skill/run', 'POST', 'content-type,x-api-key,idempotency-key');
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    const allowed = res.headers.get('access-control-allow-headers')!.split(',');
    expect(allowed).toEqual(expect.arrayContaining(['content-type', 'x-api-key', 'idempotency-key', 'authorization', 'x-auth-token', 'x-d1-bookmark']));
    expect(res.headers.get('access-control-allow-methods')!.split(',')).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']));
    // A preflight is not a request: it spends no rate limit and needs no credential.
    expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
  });

  it('exposes the headers clients read, on answers and on refusals alike', async () => {
    const user = await signUp();
    const { key } = await createKey(user, ['profile:read']);
    const ok = await call('/api/v1/profile', { apiKey: key, headers: { origin: ORIGIN } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    expect(ok.headers.get('access-control-expose-headers')!.split(',')).toEqual(
      expect.arrayContaining([
        'x-ratelimit-limit',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
        'retry-after',
        'x-request-id',
        'idempotency-replayed',
        'www-authenticate',
        'x-d1-bookmark',
      ]),
    );
    const refused = await call('/api/v1/profile', { headers: { origin: ORIGIN, authorization: 'Bearer nope' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    const badVersion = await call('/api/v1/profile', { apiKey: key, headers: { origin: ORIGIN, 'service-version': 'soon' } });
    expect(badVersion.status).toBe(400);
    expect(badVersion.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('is not opened for the MCP endpoint', async () => {
    const res = await exports.default.fetch(`${BASE}/mcp`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('URL-credential streams from another origin', () => {
  it('the signed execution stream and /api/events answer any origin', async () => {
    const user = await signUp();
    await call('/api/v1/skills/cors-notes', {
      method: 'PUT',
      token: user.token,
      body: { name: 'Notes', description: 'Notes.', category: 'productivity', prompt: '# Notes' },
    });
    const started = await call('/api/v1/skills/cors-notes/run', { token: user.token, body: { input: 'Hi.' } });
    await waitForStatus(user, started.body.executionId, 'completed');
    const { sseUrl } = (await call(`/api/v1/executions/${started.body.executionId}/stream-token`, { token: user.token })).body;
    const url = new URL(sseUrl);
    const stream = await exports.default.fetch(`${BASE}${url.pathname}${url.search}`, { headers: { origin: ORIGIN } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('access-control-allow-origin')).toBe('*');
    expect(stream.headers.get('access-control-allow-credentials')).toBeNull();
    expect(await stream.text()).toContain('session.status_idle');
    const refused = await exports.default.fetch(`${BASE}${url.pathname}?token=tampered`, { headers: { origin: ORIGIN } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');

    const { key } = await createKey(user, ['channel:read']);
    const events = await exports.default.fetch(`${BASE}/api/events?apiKey=${key}`, { headers: { origin: ORIGIN } });
    expect(events.status).toBe(200);
    expect(events.headers.get('access-control-allow-origin')).toBe('*');
    // Read up to the greeting before leaving, so the channel is not cut off mid-write.
    const reader = events.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(': connected');
    await reader.cancel();
  });
});
