import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium';
import { type RunningService } from './helpers';
import { startPrepared } from './prepared';
import { screenshot } from './screenshot';

/**
 * What a newcomer opens first, against `npm start`: the home page and the API reference in a
 * browser with no internet, the OpenAPI document under a standard linter and as the source of a
 * typed client, and the example workflows run to the results docs/workflows.md gives.
 */

describe('the home page, the API reference and the examples', () => {
  let service: RunningService;
  let browser: Browser;
  beforeAll(async () => {
    [service, browser] = await Promise.all([startPrepared(), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  const api = async (path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const send = () =>
      fetch(`${service.base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    // After a long pause (the browser and child-process tests) the pooled keep-alive connection
    // may be one wrangler dev already closed: that request never reached the service, so send it again.
    const res = await send().catch((error: Error) => ((error.cause as { code?: string })?.code === 'UND_ERR_SOCKET' ? send() : Promise.reject(error)));
    return { status: res.status, body: await res.json() };
  };

  /** A page with every request that leaves the service refused, as on a machine without internet. */
  const offlinePage = async () => {
    const context = await browser.newContext();
    const elsewhere: string[] = [];
    await context.route('**/*', (route) => {
      if (route.request().url().startsWith(service.base)) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort('internetdisconnected');
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('pageerror', (error) => problems.push(String(error)));
    return { page, context, elsewhere, problems };
  };

  it('GET / says what the service is and links the quickstart, the reference, the document, sign-in and the MCP endpoint', async () => {
    const { page, context, elsewhere, problems } = await offlinePage();
    await page.goto(`${service.base}/`);
    await expect(page.getByRole('heading', { level: 1, name: 'Workspace AI Skills Service' }).isVisible()).resolves.toBe(true);
    const nav = page.getByRole('navigation', { name: 'Start here' });
    for (const [name, href] of [
      ['Quickstart', '#quickstart'],
      ['API reference', '/docs'],
      ['OpenAPI document', '/api/v1/openapi.json'],
      ['Workflow definition schema', '/schemas/workflow-definition.json'],
      ['Sign in', '/auth/sign-in?next=/'],
      ['Sign up', '/auth/sign-up?next=/'],
    ]) {
      expect(await nav.getByRole('link', { name, exact: true }).getAttribute('href')).toBe(href);
    }
    expect(await page.getByLabel('MCP endpoint URL').textContent()).toBe(`${service.base}/mcp`);
    await screenshot(page, 'home', { fullPage: true });

    await nav.getByRole('link', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Sign in' }).isVisible()).resolves.toBe(true);
    expect([elsewhere, problems]).toEqual([[], []]);
    await context.close();
  });

  it('/docs renders every operation offline, from the service alone, under its CSP', async () => {
    const { page, context, elsewhere, problems } = await offlinePage();
    // A deep link opens one operation: its parameters, its request body and the way to try it.
    const response = await page.goto(`${service.base}/docs#/Skills/postApiV1SkillsBySlugRun`);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self'");
    const run = page.locator('#operations-Skills-postApiV1SkillsBySlugRun');
    await run.getByRole('button', { name: 'Try it out' }).waitFor({ timeout: 30_000 });
    expect(await run.getByRole('heading', { name: 'Parameters' }).isVisible()).toBe(true);
    expect(await run.getByText('Request body').isVisible()).toBe(true);
    expect(await page.getByRole('heading', { name: /Workspace AI Skills Service/ }).count()).toBe(1);
    await screenshot(page, 'docs');

    // The list renders what is in view, so scroll through it and collect every operation shown.
    const openapi = (await (await fetch(`${service.base}/api/v1/openapi.json`)).json()) as { paths: Record<string, object> };
    const documented = Object.entries(openapi.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    const shown = new Set<string>();
    await page.evaluate('window.scrollTo(0, 0)');
    for (let atEnd = false; !atEnd;) {
      const visible = await page
        .locator('.opblock-summary')
        .evaluateAll((summaries) =>
          summaries.map(
            (s) => `${s.querySelector('.opblock-summary-method')?.textContent} ${s.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
          ),
        );
      for (const op of visible) shown.add(op);
      atEnd = await page.evaluate<boolean>('window.scrollBy(0, innerHeight / 2), scrollY + innerHeight >= document.body.scrollHeight - 1');
      await page.waitForTimeout(50);
    }
    expect([...shown].sort()).toEqual(documented.sort());
    expect([elsewhere, problems]).toEqual([[], []]);
    await context.close();
  });

  it("passes the OpenAPI linter's recommended rules, apart from the interface's fixed paths", async () => {
    const source = await (await fetch(`${service.base}/api/v1/openapi.json`)).text();
    const problems = await lintFromString({
      source,
      absoluteRef: `${service.base}/api/v1/openapi.json`,
      config: await createConfig({ extends: ['recommended'] }),
    });
    const found = problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}`);
    // Beyond that, the interface fixes these paths: the literal `runs` segment sits beside a
    // workflow's `{slug}` and `{id}`, and the WebSocket upgrade answers 101, not 2XX.
    const accepted = [
      // The project declares no licence, so the document states none.
      'info-license #/info',
      'no-ambiguous-paths #/paths/~1api~1v1~1workflows~1{slug}~1install',
      'no-ambiguous-paths #/paths/~1api~1v1~1workflows~1{slug}~1uninstall',
      'no-ambiguous-paths #/paths/~1api~1v1~1workflows~1{id}~1launch',
      'no-ambiguous-paths #/paths/~1api~1v1~1workflows~1{id}~1stream',
      'no-ambiguous-paths #/paths/~1api~1v1~1workflows~1{slug}~1schedules',
      'no-ambiguous-paths #/paths/~1api~1v1~1workflows~1{slug}~1triggers',
      'operation-2xx-response #/paths/~1control~1ws/get/responses',
    ];
    expect(found.filter((p) => !accepted.includes(p))).toEqual([]);
  });

  it('generates a typed client from the served document and runs a skill with it (docs/typed-client.md)', async () => {
    // Outside the repository (wrangler dev watches it), resolving packages through a link to its node_modules.
    const dir = mkdtempSync(join(tmpdir(), 'typed-client-'));
    symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
    try {
      const ast = await openapiTS(new URL(`${service.base}/api/v1/openapi.json`));
      // As api.ts, not the guide's api.d.ts: the program imports './api' either way, and so the
      // generated types are type-checked as the program's own source while the libraries'
      // declarations are skipped (skipLibCheck), most of the compiler's time.
      writeFileSync(join(dir, 'api.ts'), astToString(ast));
      const guide = readFileSync('docs/typed-client.md', 'utf8');
      const program = /```ts\n([\s\S]*?)```/.exec(guide.split('## A program')[1]!)![1]!;
      writeFileSync(join(dir, 'run-skill.ts'), program);
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: 'ES2023',
            module: 'ESNext',
            moduleResolution: 'Bundler',
            types: ['node'],
            skipLibCheck: true,
          },
        }),
      );
      const checked = spawnSync(process.execPath, [join(process.cwd(), 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
      expect(checked.stdout + checked.stderr).toBe('');
      expect(checked.status).toBe(0);

      const ran = spawnSync(process.execPath, [join(process.cwd(), 'node_modules/tsx/dist/cli.mjs'), join(dir, 'run-skill.ts')], {
        encoding: 'utf8',
        env: { ...process.env, BASE: service.base, KEY: service.apiKey },
        timeout: 60_000,
      });
      expect(ran.stderr).toBe('');
      expect(ran.stdout).toMatch(/^completed: [\s\S]*Ana ships on Friday/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('installs every example workflow and runs it to the result docs/workflows.md gives', async () => {
    const guide = readFileSync('docs/workflows.md', 'utf8');
    const examples = readdirSync('examples/workflows').filter((f) => f.endsWith('.json'));
    expect(examples.sort()).toEqual(['publish-with-approval.json', 'review-per-repo.json', 'review-pull-request.json', 'triage-schedule.json', 'triage.json']);
    // The typed-client test above may have installed the first already (200); a first install is 201.
    for (const slug of ['meeting-notes-summarizer', 'stakeholder-update-writer'])
      expect([200, 201]).toContain((await api(`/api/v1/skills/${slug}/install`, {})).status);
    const read = (file: string) => JSON.parse(readFileSync(join('examples/workflows', file), 'utf8'));
    for (const file of examples) {
      expect(guide, `docs/workflows.md shows examples/workflows/${file}`).toContain(`examples/workflows/${file}`);
      const definition = read(file);
      // A definition has a graph; triage-schedule.json is a schedule of triage (below).
      if (definition.graph) expect((await api(`/api/v1/workflows/${definition.id}/install`, definition)).status).toBe(201);
    }
    const schedule = await api('/api/v1/workflows/triage/schedules', read('triage-schedule.json'));
    expect(schedule.status).toBe(201);
    expect(schedule.body.nextFireTimes).toHaveLength(5);

    const settle = async (runId: string) => {
      for (let i = 0; i < 120; i++) {
        const { body } = await api(`/api/v1/workflows/runs/${runId}`);
        if (body.run.status !== 'running') return body.run;
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error(`run ${runId} did not settle`);
    };
    const launch = async (slug: string, inputs: unknown) => {
      const launched = await api(`/api/v1/workflows/${slug}/launch`, { inputs });
      expect(launched.status).toBe(201);
      return settle(launched.body.runId);
    };

    // triage: the documented inputs and results.
    expect((await launch('triage', { title: 'Login fails', priority: 4, labels: ['bug'] })).snapshot.result).toEqual({
      urgent: { title: 'Login fails' },
      bug: { title: 'Login fails' },
      unassigned: { title: 'Login fails' },
    });
    expect((await launch('triage', { title: 'Typo on the home page', priority: 1, assignee: 'ana' })).snapshot.result).toEqual({
      unlabelled: { title: 'Typo on the home page' },
    });

    // publish-with-approval: suspended at review, then each decision takes its branch.
    for (const [approved, branch] of [
      [true, 'update'],
      [false, 'discarded'],
    ] as const) {
      const waiting = await launch('publish-with-approval', { notes: 'Ana ships on Friday.' });
      expect(waiting.status).toBe('suspended');
      expect(waiting.snapshot.suspended.review.prompt).toBe('Send this summary as a stakeholder update?');
      expect((await api(`/api/v1/workflows/runs/${waiting.runId}/resume`, { resumeData: { approved } })).status).toBe(200);
      const done = await settle(waiting.runId);
      expect(done.status).toBe('success');
      expect(Object.keys(done.snapshot.result)).toEqual([branch]);
    }

    // review-per-repo: a second review of the same repository waits for the first.
    const statusOf = async (runId: string) => (await api(`/api/v1/workflows/runs/${runId}`)).body.run.status as string;
    const until = async (runId: string, status: string) => {
      for (let i = 0; i < 120 && (await statusOf(runId)) !== status; i++) await new Promise((r) => setTimeout(r, 500));
      expect(await statusOf(runId)).toBe(status);
    };
    const first = await api('/api/v1/workflows/review-per-repo/launch', { inputs: { repo: 'acme/api', change: 'one' } });
    await until(first.body.runId, 'suspended');
    const second = await api('/api/v1/workflows/review-per-repo/launch', { inputs: { repo: 'acme/api', change: 'two' } });
    await until(second.body.runId, 'queued');
    expect((await api(`/api/v1/workflows/runs/${first.body.runId}/resume`, { resumeData: { approved: true } })).status).toBe(200);
    await until(first.body.runId, 'success');
    await until(second.body.runId, 'suspended');
  });
});
