import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, freezeClock, resetClock } from '../../workers/lib/clock';
import { call, expectError, signUp } from '../helpers/api';

afterEach(() => resetClock());

const newEmail = () => `auth-${crypto.randomUUID()}@example.test`;

describe('POST /auth/sign-up/email', () => {
  it('creates the user, a personal workspace owned by them, and a working session', async () => {
    const email = newEmail();
    const res = await call('/auth/sign-up/email', { body: { email, password: 'correct horse', name: 'Grace' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ token: expect.any(String), user: { id: expect.any(String), email, name: 'Grace' } });

    const current = await call('/api/v1/workspaces/current', { token: res.body.token });
    expect(current.status).toBe(200);
    expect(current.body).toMatchObject({ role: 'owner', personal: true, name: "Grace's workspace" });
  });

  it('stores neither the password nor the session token in clear', async () => {
    const email = newEmail();
    const res = await call('/auth/sign-up/email', { body: { email, password: 'a-very-recognisable-pw', name: 'Eve' } });
    const user = await env.DB.prepare('SELECT * FROM users WHERE email = ?').bind(email).first();
    const sessions = await env.DB.prepare('SELECT * FROM sessions WHERE user_id = ?').bind(res.body.user.id).all();
    expect(JSON.stringify(user)).not.toContain('a-very-recognisable-pw');
    expect(String(user?.password_hash)).toMatch(/^scrypt\$16384\$16\$1\$/);
    expect(JSON.stringify(sessions.results)).not.toContain(res.body.token);
  });

  it('lower-cases the email, so the same address cannot sign up twice', async () => {
    const email = newEmail();
    await call('/auth/sign-up/email', { body: { email, password: 'password-1', name: 'One' } });
    const again = await call('/auth/sign-up/email', { body: { email: email.toUpperCase(), password: 'password-2', name: 'Two' } });
    expectError(again, 409, 'ALREADY_EXISTS');
  });

  it.each([
    [{ password: 'long enough', name: 'x' }, 'email'],
    [{ email: 'not-an-email', password: 'long enough', name: 'x' }, 'email'],
    [{ email: 'a@b.test', password: 'short', name: 'x' }, 'password'],
    [{ email: 'a@b.test', password: 'long enough', name: '   ' }, 'name'],
  ])('rejects %j with 400 naming %s', async (body, field) => {
    const error = expectError(await call('/auth/sign-up/email', { body }), 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe(field);
  });
});

describe('POST /auth/sign-in/email', () => {
  it('starts a new session for the right password', async () => {
    const user = await signUp();
    const res = await call('/auth/sign-in/email', { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(200);
    expect(res.body.user).toEqual(user.user);
    expect(res.body.token).not.toBe(user.token);
    expect((await call('/api/v1/profile', { token: res.body.token })).status).toBe(200);
  });

  it('answers a wrong password and an unknown email identically', async () => {
    const user = await signUp();
    const wrong = expectError(await call('/auth/sign-in/email', { body: { email: user.email, password: 'wrong password' } }), 401, 'UNAUTHORIZED');
    const unknown = expectError(await call('/auth/sign-in/email', { body: { email: newEmail(), password: 'wrong password' } }), 401, 'UNAUTHORIZED');
    expect(wrong.message).toBe(unknown.message);
  });

  it('slows repeated failures with a wait (429 RATE_LIMITED, Retry-After), never a lockout of the right password from elsewhere', async () => {
    const user = await signUp();
    freezeClock();
    const from = { 'cf-connecting-ip': '192.0.2.77' };
    for (let i = 0; i < 6; i++) {
      expectError(await call('/auth/sign-in/email', { body: { email: user.email, password: `guess-${i}` }, headers: from }), 401, 'UNAUTHORIZED');
    }
    const blocked = await call('/auth/sign-in/email', { body: { email: user.email, password: user.password }, headers: from });
    expect(expectError(blocked, 429, 'RATE_LIMITED').details?.retryAfterSeconds).toBe(1);
    expect(blocked.headers.get('retry-after')).toBe('1');
    expect(
      (await call('/auth/sign-in/email', { body: { email: user.email, password: user.password }, headers: { 'cf-connecting-ip': '192.0.2.78' } })).status,
    ).toBe(200);

    advanceClock(1000);
    expect((await call('/auth/sign-in/email', { body: { email: user.email, password: user.password }, headers: from })).status).toBe(200);
  });
});

describe('POST /auth/sign-out', () => {
  it('ends the session at once', async () => {
    const user = await signUp();
    const res = await call('/auth/sign-out', { method: 'POST', token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expectError(await call('/api/v1/profile', { token: user.token }), 401, 'UNAUTHORIZED');
  });

  it('needs a session token', async () => {
    expectError(await call('/auth/sign-out', { method: 'POST' }), 401, 'UNAUTHORIZED');
  });
});

describe('session lifetime', () => {
  it('expires after 30 days without use', async () => {
    const user = await signUp();
    advanceClock(30 * 24 * 3600_000 + 1000);
    expectError(await call('/api/v1/profile', { token: user.token }), 401, 'UNAUTHORIZED');
  });

  it('slides: a session used within its lifetime stays valid past the original expiry', async () => {
    const user = await signUp();
    advanceClock(20 * 24 * 3600_000);
    expect((await call('/api/v1/profile', { token: user.token })).status).toBe(200);
    advanceClock(20 * 24 * 3600_000);
    expect((await call('/api/v1/profile', { token: user.token })).status).toBe(200);
  });
});
