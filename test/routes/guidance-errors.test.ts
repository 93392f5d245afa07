import { describe, expect, it } from 'vitest';
import { call, createKey, expectError, signUp } from '../helpers/api';
import { catalogEntry, seedCatalog } from '../helpers/skills';

/** Errors a new user meets in the first hour say what to do next, and keep their documented codes. */

describe('running a skill that is not installed', () => {
  it('answers 404 NOT_FOUND (flat shape) saying the marketplace skill is not installed and how to install it', async () => {
    await seedCatalog([catalogEntry('guide-notes')]);
    const user = await signUp();
    const res = await call('/api/v1/skills/guide-notes/run', { token: user.token, body: { input: 'Notes.' } });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      error: 'NOT_FOUND',
      reason: 'not_installed',
      install: { method: 'POST', path: '/api/v1/skills/guide-notes/install' },
      details: { serviceCode: 'NOT_FOUND', slug: 'guide-notes' },
    });
    expect(res.body.message).toContain('not installed');
    expect(res.body.message).toContain('POST /api/v1/skills/guide-notes/install');

    // The same on the three-step flow, in the envelope; and the advice works.
    const created = expectError(
      await call('/api/v1/executions', { token: user.token, body: { skill_slug: 'guide-notes', input: 'Notes.' } }),
      404,
      'NOT_FOUND',
    );
    expect(created.details).toMatchObject({ reason: 'not_installed', install: { method: 'POST', path: '/api/v1/skills/guide-notes/install' } });
    expect((await call(created.details!.install.path, { token: user.token, method: 'POST' })).status).toBe(200);
    expect((await call('/api/v1/skills/guide-notes/run', { token: user.token, body: { input: 'Notes.' } })).status).toBe(200);
  });

  it('says plainly that a slug neither installed nor in the marketplace is not found', async () => {
    const user = await signUp();
    const res = await call('/api/v1/skills/no-such-skill-here/run', { token: user.token, body: { input: 'Notes.' } });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('NOT_FOUND');
    expect(res.body.message).toContain('marketplace has no such skill');
    expect(res.body.install).toBeUndefined();
  });
});

describe('an API key sent as a bearer token', () => {
  it('answers 401 UNAUTHORIZED saying API keys go in x-api-key', async () => {
    const user = await signUp();
    const { key } = await createKey(user, ['profile:read']);
    const res = await call('/api/v1/profile', { headers: { authorization: `Bearer ${key}` } });
    const error = expectError(res, 401, 'UNAUTHORIZED');
    expect(error.message).toContain('x-api-key');
    expect(error.details).toEqual({ header: 'x-api-key' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    // The same key in the right header works.
    expect((await call('/api/v1/profile', { apiKey: key })).status).toBe(200);
    // Any other unknown bearer token keeps the access-token message.
    expect(expectError(await call('/api/v1/profile', { headers: { authorization: 'Bearer not-a-token' } }), 401, 'UNAUTHORIZED').message).toContain(
      'access token',
    );
  });
});
