import { exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, resetClock } from '../../workers/lib/clock';
import { BASE, call, createKey, signUp, type TestUser } from '../helpers/api';

afterEach(() => resetClock());

/** A browser request: the session cookie, redirects not followed. */
const page = (user: TestUser | null, path: string, init: RequestInit & { cookie?: string } = {}) =>
  exports.default.fetch(`${BASE}${path}`, {
    redirect: 'manual',
    ...init,
    headers: { ...(init.headers as Record<string, string>), cookie: [user && `__Host-session=${user.token}`, init.cookie].filter(Boolean).join('; ') },
  });

const csrfOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => /^__Host-csrf=([^;]*)/.exec(c)?.[1])
    .find(Boolean)!;

/** Opens `path`, then posts `form` from it with the page's CSRF token. */
async function submit(user: TestUser, path: string, action: string, form: Record<string, string | string[]>) {
  const opened = await page(user, path);
  expect(opened.status).toBe(200);
  const html = await opened.text();
  const csrf = csrfOf(opened);
  const body = new URLSearchParams({ csrf });
  for (const [k, v] of Object.entries(form)) for (const one of ([] as string[]).concat(v)) body.append(k, one);
  const res = await page(user, action, {
    method: 'POST',
    cookie: `__Host-csrf=${csrf}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: BASE },
    body,
  });
  return { html, res, text: await res.text() };
}

describe('/activate (device flow)', () => {
  it('sends a signed-out browser to sign in and back', async () => {
    const res = await page(null, '/activate?user_code=BCDF-GHJK');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/auth/sign-in?next=${encodeURIComponent('/activate?user_code=BCDF-GHJK')}`);
  });

  it('asks for the code, shows what the device gets, and approves it in the chosen workspace', async () => {
    const user = await signUp('Device Owner');
    const entry = await page(user, '/activate');
    expect(entry.status).toBe(200);
    expect(entry.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await entry.text()).toContain('<label for="code">Code</label>');

    const started = await call('/api/v1/activate', { body: { client_label: 'CLI on laptop' } });
    const { html, res, text } = await submit(user, `/activate?user_code=${started.body.user_code}`, '/activate', {
      user_code: started.body.user_code,
      workspace_id: user.workspaceId,
      decision: 'approve',
    });
    expect(html).toContain('Connect “<bdi>CLI on laptop</bdi>”?');
    expect(html).toContain(started.body.user_code);
    expect(html).toContain('See your name, email and workspaces');
    expect(res.status).toBe(200);
    expect(text).toContain('Device connected');

    const poll = await call('/api/v1/activate/poll', { body: { device_code: started.body.device_code } });
    expect(poll.body).toMatchObject({ status: 'approved', workspace_id: user.workspaceId, api_key: expect.stringMatching(/^sk_live_/) });
  });

  it('denies, and answers an unknown or expired code on the page', async () => {
    const user = await signUp();
    const started = await call('/api/v1/activate', { body: { client_label: 'Unwanted' } });
    const { text } = await submit(user, `/activate?user_code=${started.body.user_code}`, '/activate', { user_code: started.body.user_code, decision: 'deny' });
    expect(text).toContain('Device denied');
    expect((await call('/api/v1/activate/poll', { body: { device_code: started.body.device_code } })).body.status).toBe('denied');

    const unknown = await page(user, '/activate?user_code=BCDF-GHJK');
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('role="alert"');

    const late = await call('/api/v1/activate', { body: { client_label: 'Late' } });
    advanceClock(601_000);
    expect((await page(user, `/activate?user_code=${late.body.user_code}`)).status).toBeGreaterThanOrEqual(400);
  });

  it('refuses a post without the CSRF token', async () => {
    const user = await signUp();
    const started = await call('/api/v1/activate', { body: { client_label: 'Forged' } });
    const res = await page(user, '/activate', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ user_code: started.body.user_code, decision: 'approve' }),
    });
    expect(res.status).toBe(403);
    expect((await call('/api/v1/activate/poll', { body: { device_code: started.body.device_code } })).body.status).toBe('pending');
  });
});

describe('/approve (agent consents and permission requests)', () => {
  it('shows a consent with the reason and scopes, and approves a narrowed set', async () => {
    const user = await signUp();
    const key = await createKey(user, undefined, { pendingActivation: true });
    const connect = await call('/api/v1/agents/connect', {
      apiKey: key.key,
      body: { requestedScopes: ['profile:read', 'memory:read', 'tool:execute'], agentDisplayName: 'Helper Bot', reason: 'To read <your> notes' },
    });
    expect(connect.status).toBe(202);
    const { html, res, text } = await submit(user, `/approve?code=${connect.body.link_code}`, '/approve', {
      code: connect.body.link_code,
      decision: 'approve',
      scopes: ['profile:read', 'memory:read'],
    });
    expect(html).toContain('<bdi>Helper Bot</bdi> asks for access');
    expect(html).toContain('To read &lt;your&gt; notes');
    expect(html).toMatch(
      /Run skills, which can send this workspace’s bound secrets to the sites each secret is bound to \(this spends your credits\)<span class="badge">sensitive<\/span>/,
    );
    expect(res.status).toBe(200);
    expect(text).toContain('Agent approved');

    const poll = await call(`/api/v1/agents/connect/poll/${connect.body.consent_id}`, { apiKey: key.key });
    expect(poll.body.status).toBe('granted');
    // The key's own defaults plus the approved subset; the unticked sensitive scope is not granted.
    expect(poll.body.scopes.sort()).toEqual(['agent:list', 'memory:read', 'profile:read']);
    const again = await page(user, `/approve?code=${connect.body.link_code}`);
    expect(again.status).toBe(409);
  });

  it('grants a permission request for the chosen mode, or denies it', async () => {
    const user = await signUp();
    const key = await createKey(user, ['profile:read']);
    const asked = await call('/api/v1/agents/request-permission', {
      apiKey: key.key,
      body: { scope: 'memory:read', reason: 'Need context', mode: 'persistent' },
    });
    expect(asked.status).toBe(202);
    const { html, text } = await submit(user, `/approve?code=${asked.body.link_code}`, '/approve', {
      code: asked.body.link_code,
      decision: 'approve',
      mode: 'session',
    });
    expect(html).toContain('Need context');
    expect(html).toMatch(/id="mode-persistent" name="mode" value="persistent" checked/);
    expect(text).toContain('Permission granted');
    const poll = await call(`/api/v1/agents/request-permission/poll/${asked.body.request_id}`, { apiKey: key.key });
    expect(poll.body).toMatchObject({ status: 'granted', mode: 'session' });

    const second = await call('/api/v1/agents/request-permission', { apiKey: key.key, body: { scope: 'billing:read', reason: 'Balance', mode: 'one_time' } });
    const denied = await submit(user, `/approve?code=${second.body.link_code}`, '/approve', { code: second.body.link_code, decision: 'deny' });
    expect(denied.text).toContain('Permission denied');
    expect((await call(`/api/v1/agents/request-permission/poll/${second.body.request_id}`, { apiKey: key.key })).body.status).toBe('denied');
  });

  it("finds nothing for another person's code, and refuses a forged post", async () => {
    const owner = await signUp();
    const stranger = await signUp();
    const key = await createKey(owner, undefined, { pendingActivation: true });
    const connect = await call('/api/v1/agents/connect', { apiKey: key.key, body: { agentDisplayName: 'Bot', reason: 'Hi' } });
    expect((await page(stranger, `/approve?code=${connect.body.link_code}`)).status).toBe(404);
    const forged = await page(owner, '/approve', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ code: connect.body.link_code, decision: 'approve', scopes: 'profile:read' }),
    });
    expect(forged.status).toBe(403);
    expect((await call(`/api/v1/agents/connect/poll/${connect.body.consent_id}`, { apiKey: key.key })).body.status).toBe('pending');
  });
});
