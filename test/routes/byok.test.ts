import { env, exports } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { call, createKey, expectError, signUp, type TestUser, waitForStatus } from '../helpers/api';
import { jsonEvents, sseReader } from '../helpers/sse';

const SKILL = { name: 'Notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' };
const ANTHROPIC_KEY = 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz-WXYZ';
const OPENAI_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz-1234';

const byok = (user: TestUser, method = 'GET', body?: unknown) => call('/api/v1/byok', { method, token: user.token, body });

describe('GET/PUT/DELETE /api/v1/byok', () => {
  it('stores a key by prefix (sk-ant- first), shows it only masked, and removes it', async () => {
    const user = await signUp();
    expect((await byok(user)).body).toEqual({ hasKey: false, keyPreview: null, provider: null });

    const anthropic = await byok(user, 'PUT', { key: ANTHROPIC_KEY });
    expect(anthropic.status).toBe(200);
    expect(anthropic.body).toEqual({ hasKey: true, keyPreview: 'sk-ant-…WXYZ', provider: 'anthropic' });
    expect((await byok(user)).body).toEqual(anthropic.body);

    // Replacing it with an OpenAI-compatible key switches the provider.
    expect((await byok(user, 'PUT', { key: OPENAI_KEY })).body).toEqual({ hasKey: true, keyPreview: 'sk-…1234', provider: 'openai' });

    const stored = await env.DB.prepare('SELECT ciphertext, key_preview FROM byok_keys WHERE user_id = ?').bind(user.user.id).first<{ ciphertext: string }>();
    expect(stored!.ciphertext).not.toContain('abcdefghijklmnop');
    expect(atob(stored!.ciphertext)).not.toContain('abcdefghijklmnop');

    const removed = await byok(user, 'DELETE');
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ hasKey: false, keyPreview: null });
    expect((await byok(user)).body).toEqual({ hasKey: false, keyPreview: null, provider: null });
    // Deleting again is harmless.
    expect((await byok(user, 'DELETE')).body).toEqual({ hasKey: false, keyPreview: null });
  });

  it('moves the tier from paygmode to byokmode and back (spec 3.7)', async () => {
    const user = await signUp();
    const tier = async () => (await call('/api/v1/billing/subscription/tier', { token: user.token })).body.tier;
    expect(await tier()).toBe('paygmode');
    await byok(user, 'PUT', { key: OPENAI_KEY });
    expect(await tier()).toBe('byokmode');
    await byok(user, 'DELETE');
    expect(await tier()).toBe('paygmode');
  });

  it('refuses a missing key, a non-string and an unrecognised prefix with 400 on field key, storing nothing', async () => {
    const user = await signUp();
    for (const body of [{}, { key: 42 }, { key: 'pk-abcdefghijklmnopqrstuvwxyz' }, { key: 'sk-short' }, { key: 'sk-has spaces in the middle of it' }]) {
      const error = expectError(await byok(user, 'PUT', body), 400, 'INVALID_INPUT');
      expect(error.details?.field).toBe('key');
    }
    expectError(await call('/api/v1/byok', { method: 'PUT', token: user.token, rawBody: '{not json' }), 400, 'INVALID_INPUT');
    expect((await byok(user)).body.hasKey).toBe(false);
  });

  it('is per user: another user, and another workspace of the same user, see their own', async () => {
    const owner = await signUp();
    const other = await signUp();
    await byok(owner, 'PUT', { key: ANTHROPIC_KEY });
    expect((await byok(other)).body.hasKey).toBe(false);
    const team = await call('/api/v1/workspaces', { token: owner.token, body: { name: 'Team', slug: `team-${crypto.randomUUID().slice(0, 8)}` } });
    const inTeam = await call('/api/v1/byok', { token: owner.token, headers: { 'x-workspace-id': team.body.id } });
    expect(inTeam.body).toMatchObject({ hasKey: true, provider: 'anthropic' });
  });

  it('needs billing:read to look and profile:write to change', async () => {
    const user = await signUp();
    const reader = await createKey(user, ['billing:read']);
    expect((await call('/api/v1/byok', { apiKey: reader.key })).status).toBe(200);
    expectError(await call('/api/v1/byok', { method: 'PUT', apiKey: reader.key, body: { key: OPENAI_KEY } }), 403, 'FORBIDDEN');
    expectError(await call('/api/v1/byok', { method: 'DELETE', apiKey: reader.key }), 403, 'FORBIDDEN');
    const writer = await createKey(user, ['profile:write']);
    expect((await call('/api/v1/byok', { method: 'PUT', apiKey: writer.key, body: { key: OPENAI_KEY } })).status).toBe(200);
    expectError(await call('/api/v1/byok'), 401, 'UNAUTHORIZED');
  });

  it('records setting and removing a key in the audit log, with the preview and never the key', async () => {
    const user = await signUp();
    await byok(user, 'PUT', { key: ANTHROPIC_KEY });
    await byok(user, 'DELETE');
    const audit = await call('/api/v1/audit-logs', { token: user.token });
    const actions = audit.body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['byok.set', 'byok.deleted']));
    expect(JSON.stringify(audit.body)).toContain('sk-ant-…WXYZ');
    expect(JSON.stringify(audit.body)).not.toContain(ANTHROPIC_KEY);
  });
});

describe('runs on the user’s own key', () => {
  it('use it with its provider and cost 0 Ds, still recording a usage transaction with the token counts', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    // vitest.config.ts points OPENAI_BASE_URL at the fixture, which answers only this key.
    expect((await byok(user, 'PUT', { key: inject('modelKeys').byok })).body.provider).toBe('openai');

    const run = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Summarise the week.' } });
    expect(run.status).toBe(200);
    const status = await waitForStatus(user, run.body.executionId, 'completed');
    expect(status.cost).toBe(0);

    const events = await env.EXECUTION_SESSION.getByName(run.body.executionId).events(0);
    expect(events.find((e) => e.type === 'agent.info')?.payload).toMatchObject({ provider: 'openai', byok: true });
    expect(
      events
        .filter((e) => e.type === 'agent.message')
        .map((e) => (e.payload.content as { text: string }[])[0]!.text)
        .join(''),
    ).toBe('Done on your own key.');
    expect(events.find((e) => e.type === 'execution.result')?.payload).toMatchObject({ cost: 0, tokenUsage: { input_tokens: 1200, output_tokens: 300 } });

    const { transactions } = (await call('/api/v1/billing/transactions', { token: user.token })).body;
    expect(transactions[0]).toMatchObject({ type: 'usage', amount: 0, executionId: run.body.executionId });
    expect(transactions[0].description).toContain('1200 input and 300 output tokens');
    expect((await call('/api/v1/billing/balance', { token: user.token })).body).toMatchObject({ balance: 100, totalSpent: 0 });
  });

  it("streams the model's words while its answer is still open, those that come in quick succession too", async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    await byok(user, 'PUT', { key: inject('modelKeys').byok });
    // The fixture sends three deltas within a few milliseconds, then keeps the answer open until it is released: the model is still talking.
    const run = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Summarise the week. [hold the stream:byok]' } });
    expect(run.status).toBe(200);
    const { sseUrl } = (await call(`/api/v1/executions/${run.body.executionId}/stream-token`, { token: user.token })).body;
    const stream = await exports.default.fetch(sseUrl);
    const sse = sseReader(stream.body!);
    type Frame = { type: string; payload: { content?: { text: string }[] } };
    const words = (frames: Frame[]) =>
      frames
        .filter((f) => f.type === 'agent.message')
        .map((f) => f.payload.content![0]!.text)
        .join('');
    const frames = jsonEvents<Frame>(await sse.until((messages) => words(jsonEvents(messages)) === 'Done on your own key.'));
    expect(frames.filter((f) => f.type === 'agent.message')).toHaveLength(3);
    expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => frames[0]!.id! + i));
    expect(frames.map((f) => f.type)).not.toContain('session.status_idle');
    expect((await call(`/api/v1/executions/${run.body.executionId}/status`, { token: user.token })).body.status).toBe('working');
    await fetch(`${inject('fixtureOrigin')}/model/release?name=byok`, { method: 'POST' });
    await sse.cancel();
    await waitForStatus(user, run.body.executionId, 'completed');
    const stored = await env.EXECUTION_SESSION.getByName(run.body.executionId).events(0);
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(stored.filter((e) => e.type === 'agent.message')).toHaveLength(3);
  });

  it('need no credits: a user with 0 Ds can run on their own key, and gets 402 again once it is removed', async () => {
    const user = await signUp();
    await call('/api/v1/skills/notes', { method: 'PUT', token: user.token, body: SKILL });
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO credit_transactions (user_id, amount, type, description, business_key, created_at) VALUES (?, -10000, 'usage', 'spent', ?, ?)",
      ).bind(user.user.id, `spent:${user.user.id}`, Date.now()),
      env.DB.prepare('UPDATE credit_accounts SET balance = 0 WHERE user_id = ?').bind(user.user.id),
    ]);
    await byok(user, 'PUT', { key: inject('modelKeys').byok });
    const run = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Go.' } });
    expect(run.status).toBe(200);
    await waitForStatus(user, run.body.executionId, 'completed');

    await byok(user, 'DELETE');
    const refused = await call('/api/v1/skills/notes/run', { token: user.token, body: { input: 'Go.' } });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ error: 'INSUFFICIENT_CREDITS', balance: 0 });
  });
});
