import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleManifest } from '../../workers/lib/bundle';
import { readBundleFiles } from '../../scripts/lib/bundle-folder';
import { launchChromium } from './chromium';
import { startService, type RunningService } from './helpers';
import { startPrepared } from './prepared';
import { screenshot } from './screenshot';

const run = promisify(execFile);
const tsx = (args: string[]) => run(process.execPath, ['node_modules/tsx/dist/cli.mjs', ...args], { env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } });
const SLUG = 'sql-query-optimizer';

/**
 * `npm run catalog:eval` as a deployer runs it: against a running service (here with no provider
 * configured, so the built-in local model), it evaluates a catalog skill through the API and
 * records the result; catalog:build and catalog:load ship it, and the marketplace shows it,
 * labelled as a local run.
 */
describe('npm run catalog:eval', () => {
  let dir: string;
  let service: RunningService | undefined;
  let browser: Browser | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'wss-catalog-eval-'));
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('evaluates a catalog skill on the service, records the result, and the loaded marketplace shows it', async () => {
    const state = join(dir, 'state');
    const evals = join(dir, 'evals');
    service = await startPrepared(120_000, { stateDir: state });
    const { stdout } = await tsx(['scripts/catalog-eval.ts', '--url', service.base, '--key', service.apiKey, '--skill', SLUG, '--evals', evals]);
    expect(stdout).toContain(`${SLUG}: `);
    expect(stdout).toContain('1 recorded, 0 failed');

    // The file names the content it measured (the bundle in catalog/skills) and says the model was the local one.
    const { checksum } = await bundleManifest(readBundleFiles(join('catalog/skills', SLUG)));
    const file = JSON.parse(readFileSync(join(evals, `${SLUG}.json`), 'utf8'));
    expect(file).toEqual({
      slug: SLUG,
      evals: [
        expect.objectContaining({
          contentChecksum: checksum,
          provider: 'local',
          model: 'local-1',
          local: true,
          repetitions: 1,
          casesCount: 2,
          cases: [expect.objectContaining({ id: expect.anything() }), expect.objectContaining({ id: expect.anything() })],
        }),
      ],
    });
    // The job is the workspace's own: its runs are in the history like any eval's.
    const history = (await (await fetch(`${service.base}/api/v1/executions?channels=eval&limit=50`, { headers: { 'x-api-key': service.apiKey } })).json()) as {
      items: { skillSlug: string }[];
    };
    expect(history.items.filter((e) => e.skillSlug === SLUG)).toHaveLength(4);
    await service.stop();

    // Built with the results and loaded, the marketplace ships them.
    const catalog = join(dir, 'catalog.json');
    await tsx(['scripts/catalog-build.ts', '--evals', evals, '--out', catalog]);
    expect((await tsx(['scripts/catalog-load.ts', '--persist-to', state, '--file', catalog])).stdout).toMatch(/0 added, 1 updated, \d+ unchanged/);
    service = await startService(120_000, { stateDir: state, restart: true });
    const detail = (await (await fetch(`${service.base}/api/v1/marketplace/skills/${SLUG}`)).json()) as { evals: unknown; contentChecksum: string };
    expect(detail.evals).toEqual(file.evals);
    expect(detail.contentChecksum).toBe(checksum);

    // The marketplace page shows it, marked current and local.
    const seed = JSON.parse(readFileSync(join(state, 'dev-seed.json'), 'utf8')) as { email: string; password: string };
    browser = await launchChromium();
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${service.base}/auth/sign-in?next=${encodeURIComponent(`/marketplace/${SLUG}`)}`);
    await page.getByLabel('Email').fill(seed.email);
    await page.getByLabel('Password').fill(seed.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const table = page.getByRole('table', { name: 'Shipped evals' });
    await table.waitFor();
    const row = table.getByRole('row').nth(1);
    expect(await row.getByRole('rowheader').textContent()).toContain('current');
    expect(await row.textContent()).toContain('local-1');
    expect(await row.textContent()).toContain('local model');
    await page.getByText('marks a run on the built-in local model').waitFor();
    await screenshot(page, 'console/marketplace-skill-evals', { fullPage: true });
  });
});
