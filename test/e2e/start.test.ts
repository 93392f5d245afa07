import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from './helpers';

describe('npm start', () => {
  let service: RunningService & { readyAfterMs: number };
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('is ready within a minute and serves GET /api/v1/profile for the printed key', async () => {
    expect(service.readyAfterMs).toBeLessThan(60_000);
    const res = await fetch(`${service.base}/api/v1/profile`, { headers: { 'x-api-key': service.apiKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    expect(await res.json()).toMatchObject({ email: 'dev@localhost.test', scopes: ['*'], workspace: { role: 'owner' } });
  });

  it('serves the whole built-in catalog in the marketplace', async () => {
    const bundles = readdirSync('catalog/skills', { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    const res = await fetch(`${service.base}/api/v1/marketplace/skills`);
    expect(res.status).toBe(200);
    const slugs = ((await res.json()) as { slug: string }[]).map((s) => s.slug);
    expect(slugs).toEqual([...bundles].sort());
    expect(slugs.length).toBeGreaterThanOrEqual(60);
  });

  it('prints a sign-in that works', async () => {
    const match = /Sign in:\s+(\S+) \/ (\S+)/.exec(service.output());
    expect(match).not.toBeNull();
    const res = await fetch(`${service.base}/auth/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: match![1], password: match![2] }),
    });
    expect(res.status).toBe(200);
  });
});
