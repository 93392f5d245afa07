import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium';
import { freePort, type RunningService } from './helpers';
import { startPrepared } from './prepared';
import { screenshot } from './screenshot';

/**
 * The run view as an MCP App, in headless Chromium against `npm start`: a host page built with
 * the ext-apps SDK's host side (./mcp-app-host.ts, on an origin of its own, connected to /mcp
 * with an API key) loads the ui:// view its tools point to in a sandboxed frame under the view's
 * CSP. The view draws a skill run while it streams and a workflow run's steps, and resumes a
 * human-input step by a tool call through the host.
 */
describe('the run view in an MCP Apps host', () => {
  let service: RunningService;
  let browser: Browser;
  let harness: Server;
  let page: Page;
  const problems: string[] = [];

  const api = (path: string, method: string, body: unknown) =>
    fetch(`${service.base}/api/v1${path}`, {
      method,
      headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const view = (): FrameLocator => page.frameLocator('iframe[title="Run view"]');
  const calls = () => page.evaluate<string[]>('host.calls');

  beforeAll(async () => {
    // Words 40 ms apart: a run streams for a few seconds, long enough to see it grow.
    // LOCAL_DEVELOPMENT: the host page's loopback origin may call /mcp.
    const [started, chromium, host, port] = await Promise.all([
      startPrepared(120_000, { args: ['--var', 'LOCAL_MODEL_DELAY_MS:40', '--var', 'LOCAL_DEVELOPMENT:true'] }),
      launchChromium(),
      build({ entryPoints: [join(import.meta.dirname, 'mcp-app-host.ts')], bundle: true, format: 'esm', target: 'es2022', write: false }),
      freePort(),
    ]);
    [service, browser] = [started, chromium];
    const script = host.outputFiles[0]!.text;
    harness = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>MCP Apps host</title>
<style>body{font-family:system-ui,sans-serif;margin:1rem;background:#f3f4f6}iframe{width:100%;border:1px solid #d1d5db;border-radius:8px;background:#fff}</style></head>
<body><h1>A chat host</h1><div id="view"></div><script type="module">${script.replaceAll('</script', '<\\/script')}</script></body></html>`,
      ),
    );
    await new Promise<void>((resolve) => harness.listen(port, '127.0.0.1', resolve));

    expect(
      (await api('/skills/app-notes', 'PUT', { name: 'Meeting notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\nSummarise.' }))
        .status,
    ).toBeLessThan(300);
    const approve = {
      type: 'tool',
      id: 'approve',
      toolId: 'human-input',
      options: {
        metadata: {
          prompt: 'Ship the release?',
          resumeSchema: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean', title: 'Ship it' } } },
        },
      },
    };
    const workflow = {
      id: 'ship',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      graph: [approve, { type: 'mapping', id: 'after', mapConfig: JSON.stringify({ answer: { step: 'approve', path: 'ok' } }) }],
    };
    expect((await api('/workflows/ship/install', 'POST', workflow)).status).toBe(201);

    // Tall enough for the whole view: a full-page screenshot draws the view's cross-process frame out of place.
    page = await (await browser.newContext({ acceptDownloads: true, viewport: { width: 1100, height: 1500 } })).newPage();
    // Any error the host or the view logs fails the test: a CSP refusal, a failed call, an exception.
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.evaluate(`host.connect(${JSON.stringify(service.base)}, ${JSON.stringify(service.apiKey)})`);
  });
  afterAll(async () => {
    await browser?.close();
    harness?.close();
    await service?.stop();
  });

  it('draws a skill run as it streams, its tool call and its files, which the host saves', async () => {
    const input = 'Ana ships the release on Friday. Ben writes the notes. Cleo reviews the budget on Monday.';
    await page.evaluate(`host.show('execute-skill', ${JSON.stringify({ slug: 'app-notes', input })})`);
    const output = view().getByRole('region', { name: 'Output' });
    const status = view().getByRole('status').first();

    // Live: the answer appears while the run still works, read through the host's tool calls.
    await output.getByRole('heading', { name: 'Key points' }).waitFor();
    expect(await status.textContent()).toBe('working');
    expect(await output.textContent()).not.toContain('Covered');
    await screenshot(page, 'mcp-app/skill-run-streaming');

    await output.getByText(/Covered \d+ points? of the request/).waitFor({ timeout: 30_000 });
    await view().getByRole('status').getByText('completed').waitFor();
    expect(await output.getByRole('listitem').filter({ hasText: 'Ben writes the notes.' }).count()).toBe(1);
    expect(await output.getByText('Tool: notes.md').count()).toBe(1);
    expect((await calls()).filter((name) => name === 'get-execution-status').length).toBeGreaterThan(1);

    const files = view().getByRole('list', { name: 'Artifacts' });
    await files.getByText('output.md').waitFor();
    await view().getByRole('button', { name: 'Preview notes.md' }).click();
    await view()
      .getByRole('region', { name: 'Preview of notes.md' })
      .getByRole('heading', { name: /^Notes: / })
      .waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), view().getByRole('button', { name: 'Download notes.md' }).click()]);
    expect(download.suggestedFilename()).toBe('notes.md');
    expect(readFileSync((await download.path())!, 'utf8')).toMatch(/^# Notes: [\s\S]*Ben writes the notes/);
    expect(await calls()).toEqual(expect.arrayContaining(['list-artifacts', 'download-artifact']));
    await screenshot(page, 'mcp-app/skill-run');
  });

  it('draws a workflow run’s steps and resumes its human-input step through the host', async () => {
    const started = await page.evaluate<{ runId: string }>(`host.show('start-workflow', { workflowId: 'ship' })`);
    const graph = view().getByRole('list', { name: 'Step graph' });
    await view().getByRole('heading', { name: 'Input needed: approve' }).waitFor();
    await graph.getByRole('listitem', { name: 'approve: suspended' }).waitFor();
    await graph.getByRole('listitem', { name: 'after: pending' }).waitFor();
    await view().getByText('Ship the release?').waitFor();
    await screenshot(page, 'mcp-app/workflow-suspended');

    await view().getByLabel('Ship it').check();
    await view().getByRole('button', { name: 'Resume' }).click();
    await view().getByRole('status').getByText('success').waitFor();
    await graph.getByRole('listitem', { name: 'after: success' }).waitFor();
    expect(JSON.parse((await view().getByLabel('Result').textContent())!)).toEqual({ answer: true });
    expect(await calls()).toContain('resume-workflow-run');
    await screenshot(page, 'mcp-app/workflow-resumed');

    const run = (await (await fetch(`${service.base}/api/v1/workflows/runs/${started.runId}`, { headers: { 'x-api-key': service.apiKey } })).json()) as {
      run: { status: string };
      steps: Record<string, { output: unknown }>;
    };
    expect(run.run.status).toBe('success');
    expect(run.steps.approve?.output).toEqual({ ok: true });
    expect(problems).toEqual([]);
  });
});
