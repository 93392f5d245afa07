import { createServer, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium';
import { freePort, type RunningService } from './helpers';
import { startPrepared } from './prepared';

/**
 * A page on another origin (a tiny node http server on its own port) uses the service the way a
 * browser app would: fetch with x-api-key (preflighted), the signed stream and /api/events with
 * EventSource, and the control-plane WebSocket, in headless Chromium against `npm start`.
 */

describe('the service from a page on another origin', () => {
  let service: RunningService;
  let browser: Browser;
  let page: Server;
  let pageOrigin: string;

  beforeAll(async () => {
    const port = await freePort();
    pageOrigin = `http://127.0.0.1:${port}`;
    page = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Another origin</title><h1>Another origin</h1>'),
    ).listen(port, '127.0.0.1');
    [service, browser] = await Promise.all([startPrepared(), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    page?.close();
  });

  it('calls /api/v1 with x-api-key, reads the exposed headers, and opens the signed stream, /api/events and the control URL', async () => {
    const tab = await browser.newPage();
    const blocked: string[] = [];
    tab.on('console', (message) => {
      if (/CORS|Access-Control/i.test(message.text())) blocked.push(message.text());
    });
    await tab.goto(pageOrigin);
    const result = await tab.evaluate(
      async ({ base, apiKey }) => {
        const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
        const put = await fetch(`${base}/api/v1/skills/cors-notes`, {
          method: 'PUT',
          headers,
          body: JSON.stringify({ name: 'CORS Notes', description: 'Summarises.', category: 'productivity', prompt: '# CORS Notes\nSummarise.' }),
        });
        const read = {
          status: put.status,
          rateLimit: put.headers.get('x-ratelimit-remaining'),
          requestId: put.headers.get('x-request-id'),
        };
        const refused = await fetch(`${base}/api/v1/profile`, { headers: { authorization: 'Bearer nope' } });
        const challenge = { status: refused.status, wwwAuthenticate: refused.headers.get('www-authenticate') };

        const events = new EventSource(`${base}/api/events?apiKey=${apiKey}`);
        const states: string[] = [];
        events.addEventListener('execution-state', (event) =>
          states.push((JSON.parse((event as unknown as { data: string }).data) as { status: string }).status),
        );
        const channelOpen = new Promise<boolean>((resolve) => {
          events.onopen = () => resolve(true);
          events.onerror = () => resolve(false);
        });
        const opened = await channelOpen;

        const run = (await (
          await fetch(`${base}/api/v1/skills/cors-notes/run`, { method: 'POST', headers, body: JSON.stringify({ input: 'Ship it. Tell Ana.' }) })
        ).json()) as { executionId: string };
        const { sseUrl } = (await (await fetch(`${base}/api/v1/executions/${run.executionId}/stream-token`, { headers })).json()) as { sseUrl: string };
        const types = await new Promise<string[]>((resolve) => {
          const seen: string[] = [];
          const stream = new EventSource(sseUrl);
          stream.onmessage = (event: { data: string }) => {
            const type = (JSON.parse(event.data) as { type: string }).type;
            seen.push(type);
            if (type === 'session.status_idle') {
              stream.close();
              resolve(seen);
            }
          };
          stream.onerror = () => {
            stream.close();
            resolve([...seen, 'error']);
          };
        });
        for (let i = 0; i < 50 && !states.includes('completed'); i++) await new Promise((r) => setTimeout(r, 100));
        events.close();

        const { url } = (await (await fetch(`${base}/api/v1/events/subscribe-url`, { headers })).json()) as { url: string };
        const socketOpen = await new Promise<boolean>((resolve) => {
          const socket = new WebSocket(url);
          socket.addEventListener('open', () => (socket.close(), resolve(true)));
          socket.addEventListener('error', () => resolve(false));
        });
        return { read, challenge, opened, types, states, socketOpen, origin: (globalThis as unknown as { location: { origin: string } }).location.origin };
      },
      { base: service.base, apiKey: service.apiKey },
    );
    expect(result.origin).toBe(pageOrigin);
    expect(result.read.status).toBe(200);
    expect(Number(result.read.rateLimit)).toBeGreaterThanOrEqual(0);
    expect(result.read.requestId).toMatch(/\S+/);
    expect(result.challenge).toEqual({ status: 401, wwwAuthenticate: 'Bearer error="invalid_token"' });
    expect(result.opened).toBe(true);
    expect(result.types).toContain('agent.message');
    expect(result.types.slice(-2)).toEqual(['execution.result', 'session.status_idle']);
    expect(result.states).toEqual(expect.arrayContaining(['working', 'completed']));
    expect(result.socketOpen).toBe(true);
    expect(blocked).toEqual([]);
    await tab.close();
  });
});
