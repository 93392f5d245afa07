import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sseEvents } from '../helpers/sse';
import { type RunningService } from './helpers';
import { startPrepared } from './prepared';

/**
 * The suite's own `npm start` on fresh state (test/e2e/global-setup.ts): what it printed, and the
 * service on exactly the state it prepared.
 */
describe('npm start', () => {
  const printed = inject('npmStart');
  let service: RunningService;
  beforeAll(async () => {
    service = await startPrepared();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('is ready within a minute and serves GET /api/v1/profile for the printed key', async () => {
    expect(printed.readyAfterMs).toBeLessThan(60_000);
    const res = await fetch(`${service.base}/api/v1/profile`, { headers: { 'x-api-key': printed.apiKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    expect(await res.json()).toMatchObject({ email: 'dev@localhost.test', scopes: ['*'], workspace: { role: 'owner' } });
  });

  it('serves the whole built-in catalog in the marketplace', async () => {
    const bundles = readdirSync('catalog/skills', { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    const res = await fetch(`${service.base}/api/v1/marketplace/skills`);
    expect(res.status).toBe(200);
    const slugs = ((await res.json()) as { slug: string }[]).map((s) => s.slug);
    expect(slugs).toEqual([...bundles].sort());
    expect(slugs.length).toBeGreaterThanOrEqual(60);
  });

  it('runs the three-step flow over real HTTP, streaming events as they happen', async () => {
    const headers = { 'x-api-key': printed.apiKey, 'content-type': 'application/json' };
    const api = (path: string, init: RequestInit = {}) => fetch(`${service.base}${path}`, { ...init, headers });
    await api('/api/v1/skills/e2e-notes', {
      method: 'PUT',
      body: JSON.stringify({ name: 'E2E Notes', description: 'Summarises.', category: 'productivity', prompt: '# E2E Notes\nSummarise.' }),
    });
    const created = (await (
      await api('/api/v1/executions', { method: 'POST', body: JSON.stringify({ skill_slug: 'e2e-notes', input: 'Ship it. Tell Ana.' }) })
    ).json()) as { id: string };
    const { sseUrl } = (await (await api(`/api/v1/executions/${created.id}/stream-token`)).json()) as { sseUrl: string };
    const stream = await fetch(sseUrl.replace(new URL(sseUrl).origin, service.base));
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');

    const posted = await api(`/api/v1/executions/${created.id}/events`, {
      method: 'POST',
      body: JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text: 'Ship it. Tell Ana.' }] }] }),
    });
    expect(posted.status).toBe(200);

    const types = sseEvents<{ type: string }>(await stream.text()).map((e) => e.type);
    expect(types[0]).toBe('user.message');
    expect(types).toContain('agent.message');
    expect(types.slice(-2)).toEqual(['execution.result', 'session.status_idle']);

    const tampered = new URL(sseUrl);
    tampered.searchParams.set('token', `${tampered.searchParams.get('token')}x`);
    const refused = await fetch(`${service.base}${tampered.pathname}${tampered.search}`);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
  });

  it('prints a sign-in that works', async () => {
    const match = /Sign in:\s+(\S+) \/ (\S+)/.exec(printed.output);
    expect(match).not.toBeNull();
    const res = await fetch(`${service.base}/auth/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: match![1], password: match![2] }),
    });
    expect(res.status).toBe(200);
  });
});
