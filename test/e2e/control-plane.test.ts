import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sseMessages } from '../helpers/sse';
import { type RunningService } from './helpers';
import { startPrepared } from './prepared';

/** The control plane over real sockets: a WebSocket client and a streaming fetch against npm start. */
describe('the control plane against npm start', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startPrepared();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('delivers one run on the WebSocket and on /api/events, as it happens', async () => {
    const headers = { 'x-api-key': service.apiKey, 'content-type': 'application/json' };
    const api = (path: string, init: RequestInit = {}) => fetch(`${service.base}${path}`, { ...init, headers });
    await api('/api/v1/skills/e2e-channel', {
      method: 'PUT',
      body: JSON.stringify({ name: 'E2E Channel', description: 'Summarises.', category: 'productivity', prompt: '# E2E Channel\nSummarise.' }),
    });

    const { url, expiresInMs } = (await (await api('/api/v1/events/subscribe-url')).json()) as { url: string; expiresInMs: number };
    expect(expiresInMs).toBe(300000);
    expect(url.startsWith('ws://127.0.0.1:')).toBe(true);
    const ws = new WebSocket(url);
    const messages: any[] = [];
    ws.addEventListener('message', (e) => {
      messages.push(String(e.data).startsWith('{') ? JSON.parse(String(e.data)) : e.data);
    });
    await new Promise((resolve, reject) => {
      ws.addEventListener('open', resolve);
      ws.addEventListener('error', reject);
    });
    ws.send('ping');

    const sse = await fetch(`${service.base}/api/events?apiKey=${service.apiKey}&sources=api`);
    expect(sse.status).toBe(200);
    const reader = sse.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    expect(text).toContain(': connected');

    const started = (await (await api('/api/v1/skills/e2e-channel/run', { method: 'POST', body: JSON.stringify({ input: 'Ship it. Tell Ana.' }) })).json()) as {
      executionId: string;
    };
    while (!text.includes('"change":"completed"')) text += decoder.decode((await reader.read()).value);
    await reader.cancel();
    const states = sseMessages(text)
      .filter((m) => m.event === 'execution-state')
      .map((m) => JSON.parse(m.data));
    expect(states[0]).toMatchObject({ change: 'started', executionId: started.executionId });
    expect(states.at(-1)).toMatchObject({ change: 'completed', status: 'completed', stopReason: 'end_turn' });

    for (let i = 0; i < 200 && !messages.some((m) => m.type === 'execution-completed'); i++) await new Promise((r) => setTimeout(r, 25));
    expect(messages).toContain('pong');
    const run = messages.filter((m) => m.executionId === started.executionId).map((m) => m.type);
    expect(run[0]).toBe('execution-started');
    expect(run.at(-1)).toBe('execution-completed');
    expect(messages.some((m) => m.type === 'cache-invalidate' && m.resource === 'skills')).toBe(true);
    ws.close();

    // A tampered token is refused before the upgrade: the client never opens, and a plain GET says 401.
    const tampered = `${url.slice(0, -3)}xyz`;
    const bad = new WebSocket(tampered);
    const outcome = await new Promise<string>((resolve) => {
      bad.addEventListener('open', () => resolve('open'));
      bad.addEventListener('error', () => resolve('refused'));
    });
    expect(outcome).toBe('refused');
    expect((await fetch(tampered.replace(/^ws/, 'http'))).status).toBe(401);
  });
});
