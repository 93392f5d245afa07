import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium';
import { freePort, type RunningService, signedDelivery } from './helpers';
import { startPrepared } from './prepared';
import { screenshot } from './screenshot';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core in the page (evaluated through the browser's protocol, which the page's CSP does not
 * govern; once per document): serious and critical violations, listed in the page, so only they
 * come back, not every rule's passes.
 */
async function accessibilityProblems(page: Page) {
  if (await page.evaluate<boolean>("typeof axe === 'undefined'")) await page.evaluate(AXE);
  return page.evaluate<string[]>(
    `axe.run({ resultTypes: ['violations'] }).then((result) => result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`,
  );
}

/**
 * The console as a person uses it, in headless Chromium against `npm start`: sign up from the
 * landing page, find and install a skill in the marketplace, run it and watch the answer stream,
 * reload mid-run and see it go on, interrupt a run, create and revoke a key, answer an agent's
 * permission request. Every page passes axe-core (no serious or critical violation) and runs
 * under its CSP without a refusal or an error.
 */
describe('the console in a browser', () => {
  let service: RunningService;
  let browser: Browser;
  /** The page of the person a test acts as (see signUp). */
  let page: Page;
  let runner: Page;
  let administrator: Page;
  const problems: string[] = [];

  /**
   * A new person, signed up from the landing page in a browser context of their own. The API
   * allows each user 100 requests a minute; the console waits out a 429, but one person doing all
   * of this within a minute would wait, so the tests share the work among three people.
   */
  async function signUp(name: string): Promise<Page> {
    const person = await (await browser.newContext()).newPage();
    // A 400 the page shows (a compile error, a refused input) is an answer, not a problem; nor is a
    // 429 from the API's per-user limit, which the console waits out (Retry-After) and retries.
    person.on('console', (m) => m.type() === 'error' && !/status of (400|429)/.test(m.text()) && problems.push(m.text()));
    person.on('pageerror', (e) => problems.push(String(e)));
    await person.goto(`${service.base}/`);
    await person.getByRole('link', { name: 'Sign up', exact: true }).click();
    await person.getByLabel('Name').fill(name);
    await person.getByLabel('Email').fill(`${name.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@example.test`);
    await person.getByLabel('Password').fill('console password long enough');
    await person.getByRole('button', { name: 'Create account' }).click();
    await person.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    return person;
  }

  /** Checks `person`'s page as it is now and saves what it looks like. */
  const check = async (person: Page, name: string) => {
    expect(await accessibilityProblems(person), name).toEqual([]);
    await screenshot(person, `console/${name}`, { fullPage: true });
  };
  const output = () => page.getByRole('region', { name: 'Output' });
  /** A call to the API from `person`'s page, with its cookie session: a GET, or a POST (or `method`) of `body`. */
  const inPage = (person: Page, path: string, body?: object, method = body ? 'POST' : 'GET') =>
    person.evaluate<{ id: string; email: string }>(
      `fetch(${JSON.stringify(path)}, { method: ${JSON.stringify(method)}, headers: { 'content-type': 'application/json', 'x-csrf-token': document.querySelector('meta[name="csrf-token"]').content }, body: ${JSON.stringify(body ? JSON.stringify(body) : null)} }).then((r) => r.json())`,
    );

  beforeAll(async () => {
    // Words 40 ms apart: a run streams for a few seconds, long enough to watch, reload and interrupt.
    // LOCAL_DEVELOPMENT: a webhook endpoint on this machine's loopback receives the runs' events.
    [service, browser] = await Promise.all([
      startPrepared(120_000, { args: ['--var', 'LOCAL_MODEL_DELAY_MS:40', '--var', 'LOCAL_DEVELOPMENT:true'] }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('signs up from the landing page, installs a skill from the marketplace, runs it and watches it stream, across a reload', async () => {
    page = runner = await signUp('Console Person');

    // Home: the console, with its navigation, the balance and the tier.
    const nav = page.getByRole('navigation', { name: 'Console' });
    for (const name of ['Home', 'Marketplace', 'Skills', 'Runs', 'Workflows', 'Traces', 'Memory', 'Settings']) {
      expect(await nav.getByRole('link', { name, exact: true }).isVisible()).toBe(true);
    }
    await page.getByText('100 credits').waitFor();
    await page.getByText('No runs yet.').waitFor();
    await check(page, 'home');

    // Marketplace: search, open the skill, see its files, install it.
    await nav.getByRole('link', { name: 'Marketplace' }).click();
    await page.getByLabel('Search skills').fill('meeting notes');
    const skills = page.getByRole('list', { name: 'Skills' });
    await skills
      .getByRole('link', { name: /meeting.notes.summarizer/i })
      .first()
      .waitFor();
    await check(page, 'marketplace');
    await skills
      .getByRole('link', { name: /meeting.notes.summarizer/i })
      .first()
      .click();
    await page.getByRole('list', { name: 'Files' }).getByText('SKILL.md').waitFor();
    await page.getByRole('button', { name: 'Install' }).click();
    await page
      .getByRole('status')
      .getByText(/^Installed /)
      .waitFor();
    expect(await page.getByRole('button', { name: 'Install' }).count()).toBe(0);
    await check(page, 'marketplace-skill');

    // Run it: the answer appears in Output while the run is still working, drawn as Markdown as it streams.
    await page.getByRole('link', { name: 'Run', exact: true }).click();
    // The last sentence carries markup and a script link into the run's notes file, which the preview must show as text.
    await page
      .getByLabel('Input')
      .fill(
        'Ana ships the release on Friday. Ben writes the notes. Cleo reviews the budget on Monday. See <script>window.hacked=1</script> [the plan](javascript:window.hacked=2).',
      );
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/runs\/exec_/);
    await output().getByRole('heading', { name: 'Key points' }).waitFor();
    expect(await page.getByRole('button', { name: 'Interrupt' }).isVisible()).toBe(true);
    expect(await output().getAttribute('aria-busy')).toBe('true');
    const before = (await output().textContent())!;
    expect(before).not.toContain('Covered');
    expect(before).not.toContain('## ');
    // A screenshot only (axe checks the finished page below), so the reload still comes mid-run.
    await screenshot(page, 'console/run-streaming', { fullPage: true });

    // Reload mid-run: what was seen is back at once and the stream goes on from there to the end,
    // even when its URL is refused as an expired one would be: the page signs a fresh one.
    let refused = 0;
    const problemsBefore = problems.length;
    await page.route('**/streams/executions/**', (route) =>
      refused++ === 0
        ? route.fulfill({ status: 401, contentType: 'application/json', body: '{"error":{"code":"UNAUTHORIZED","message":"expired"}}' })
        : route.continue(),
    );
    await page.reload();
    await output().getByText('Key points').waitFor();
    await output()
      .getByText(/Covered \d+ points? of the request/)
      .waitFor({ timeout: 30_000 });
    await page.getByRole('status').getByText('end turn').waitFor();
    expect(refused).toBeGreaterThan(1);
    await page.unroute('**/streams/executions/**');
    // The browser logs the refusal it was given here, and nothing else went wrong meanwhile.
    expect(problems.splice(problemsBefore)).toEqual(['Failed to load resource: the server responded with a status of 401 (Unauthorized)']);
    const text = (await output().textContent())!;
    expect(text.startsWith(before.slice(0, 40))).toBe(true);
    expect(text.match(/Key points/g)).toHaveLength(1);
    // The whole answer is drawn as Markdown: its headings, emphasis and list, not their marks.
    await output().getByRole('heading', { name: 'Key points' }).waitFor();
    expect(await output().getAttribute('aria-busy')).toBe('false');
    expect(await output().getByRole('listitem').filter({ hasText: 'Ben writes the notes.' }).count()).toBe(1);
    expect(await output().locator('strong', { hasText: 'Request:' }).count()).toBe(1);
    expect(text).not.toContain('### ');
    // Its headings stand out from its text: none is drawn smaller.
    const fontSize = (element: Locator) => element.evaluate((e) => parseFloat(e.ownerDocument.defaultView!.getComputedStyle(e).fontSize));
    expect(await fontSize(output().getByRole('heading', { name: 'Key points' }))).toBeGreaterThanOrEqual(
      await fontSize(output().getByRole('listitem').first()),
    );
    await page.getByLabel('Follow-up').waitFor();

    // The run's files: a safe preview of its Markdown notes, and a download of the same bytes.
    const files = page.getByRole('list', { name: 'Artifacts' });
    await files.getByText('output.md').waitFor(); // the answer, kept as a file when the run ends
    const name = 'notes.md'; // what the model saved on the way
    await page.getByRole('button', { name: `Preview ${name}` }).click();
    const preview = page.getByRole('region', { name: `Preview of ${name}` });
    await preview.getByRole('heading', { name: /^Notes: / }).waitFor();
    await preview.getByText('<script>window.hacked=1</script>', { exact: false }).waitFor();
    expect(await preview.locator('script, img, iframe').count()).toBe(0);
    expect(await preview.locator('a[href^="javascript:"]').count()).toBe(0);
    expect(await page.evaluate('window.hacked')).toBeUndefined();
    await check(page, 'run');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: `Download ${name}` }).click()]);
    expect(download.suggestedFilename()).toBe(name);
    const saved = readFileSync((await download.path())!, 'utf8');
    expect(saved).toMatch(/^# Notes: /);
    expect(saved).toContain('<script>window.hacked=1</script>');

    // The finished run opened afresh (a new tab has seen nothing of it) replays to its end and lists its files once.
    const fresh = await page.context().newPage();
    const listings: string[] = [];
    fresh.on('request', (request) => request.url().includes('/api/v1/artifacts?') && listings.push(request.url()));
    await fresh.goto(page.url());
    await fresh.getByRole('list', { name: 'Artifacts' }).getByText('output.md').waitFor();
    await fresh.getByRole('list', { name: 'Event timeline', includeHidden: true }).getByText('session.status_idle').waitFor({ state: 'attached' });
    await fresh.waitForLoadState('networkidle');
    expect(listings).toHaveLength(1);
    await fresh.close();

    // Home now lists the run.
    await nav.getByRole('link', { name: 'Home' }).click();
    await page.getByRole('heading', { name: 'Recent runs' }).waitFor();
    await page
      .getByRole('link', { name: /meeting.notes.summarizer/i })
      .first()
      .waitFor();
  });

  it('interrupts a working run', async () => {
    page = runner;
    await page.goto(`${service.base}/skills`);
    await page.getByRole('link', { name: /^Run meeting.notes.summarizer/i }).click();
    await page.getByLabel('Input').fill('A long meeting: Dana plans the launch, Eli writes the docs, Fay books the venue, Gus checks the numbers.');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await output().getByText('Key points').waitFor();
    // Home, in another tab, shows it among the runs happening now.
    const home = await page.context().newPage();
    await home.goto(`${service.base}/`);
    await home.getByRole('list', { name: 'Runs happening now' }).getByRole('link').first().waitFor();
    await home.close();
    await page.getByRole('button', { name: 'Interrupt' }).click();
    await page.getByRole('status').getByText('interrupt').waitFor();
    expect(await output().textContent()).not.toContain('Covered');
    expect(await page.getByRole('button', { name: 'Interrupt' }).count()).toBe(0);

    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('table').getByRole('row').nth(2).waitFor();
    await check(page, 'runs');
  });

  it('installs a workflow from JSON (a compile error shown at the box first), launches it from its form, resumes its human-input step and cancels another run', async () => {
    page = await signUp('Workflow Person');
    await page.goto(`${service.base}/marketplace/meeting-notes-summarizer`);
    await page.getByRole('button', { name: 'Install' }).click();
    await page
      .getByRole('status')
      .getByText(/^Installed /)
      .waitFor();
    const definition = readFileSync('examples/workflows/publish-with-approval.json', 'utf8');
    await page.goto(`${service.base}/workflows`);
    const box = page.getByLabel('Definition (JSON)');
    await box.fill(definition.replace('"toolId": "execute-skill"', '"toolId": "no-such-tool"'));
    await page.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('alert').getByText('graph.1.toolId').waitFor();
    expect(await box.getAttribute('aria-invalid')).toBe('true');
    await check(page, 'workflows-compile-error');
    await box.fill(definition);
    await page.getByRole('button', { name: 'Install' }).click();

    // The launch form comes from the input schema.
    await page.getByRole('heading', { level: 1, name: 'Publish with approval' }).waitFor();
    await page.getByLabel('notes').fill('Ana ships Friday. Ben writes the notes.');
    // The graph says how a step with a retry policy is tried again.
    await page.getByText('Retries: up to 3 tries, 2 s apart ×2, at most 60 s; never on NOT_FOUND').waitFor();
    await check(page, 'workflow');
    await page.getByRole('button', { name: 'Launch' }).click();
    await page.waitForURL(/\/workflows\/runs\//);
    const graph = page.getByRole('list', { name: 'Step graph' });
    await graph.getByRole('listitem', { name: 'summary: success' }).waitFor({ timeout: 30_000 });
    await page.getByRole('heading', { name: 'Input needed: review' }).waitFor();
    await page.getByText('Send this summary as a stakeholder update?').waitFor();
    expect(await graph.getByRole('listitem', { name: 'review: suspended' }).isVisible()).toBe(true);
    expect(await graph.getByRole('link', { name: 'Open the run of summary' }).isVisible()).toBe(true);
    await check(page, 'workflow-run-suspended');

    // Resume from the form generated from the resume schema: not approved, so the update is discarded.
    await page.getByLabel('note').fill('Not this week');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('status').getByText('success').waitFor({ timeout: 30_000 });
    expect(await graph.getByRole('listitem', { name: 'discarded: success' }).isVisible()).toBe(true);
    expect(await graph.getByRole('listitem', { name: 'update: skipped' }).isVisible()).toBe(true);
    expect(await page.getByRole('heading', { name: 'Input needed: review' }).count()).toBe(0);
    await page.getByLabel('Result').waitFor();
    await check(page, 'workflow-run');

    // A finished run reruns from one of its top-level steps: the steps before it are not run again.
    const original = page.url();
    await graph.getByRole('button', { name: 'Rerun from decision' }).click();
    await page.waitForURL((url) => url.href !== original && /\/workflows\/runs\//.test(url.href));
    await page.getByRole('status').getByText('success').waitFor({ timeout: 30_000 });
    const rerun = page.getByRole('list', { name: 'Step graph' });
    expect(await rerun.getByRole('listitem', { name: 'summary: success' }).isVisible()).toBe(true);
    expect(await rerun.getByRole('listitem', { name: 'discarded: success' }).isVisible()).toBe(true);

    // The list of definitions says what each workflow takes.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Workflows' }).click();
    const card = page.getByRole('list', { name: 'Installed workflows' }).getByRole('listitem').filter({ hasText: 'Publish with approval' });
    await card.getByText('notes', { exact: true }).waitFor();
    expect(await card.getByText('examples', { exact: true }).isVisible()).toBe(true);
    await check(page, 'workflows-installed');

    // Another run, cancelled while its first skill runs.
    await page.goto(`${service.base}/workflows/publish-with-approval`);
    await page.getByLabel('notes').fill('Cleo reviews the budget on Monday.');
    await page.getByRole('button', { name: 'Launch' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('status').getByText('canceled').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
  });

  it('schedules a workflow from its page: a refused cron shown at its field, next fire times, pause, resume and delete', async () => {
    page = await signUp('Schedule Person');
    await page.goto(`${service.base}/workflows`);
    await page.getByLabel('Definition (JSON)').fill(readFileSync('examples/workflows/triage.json', 'utf8'));
    await page.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('heading', { level: 1, name: 'Triage' }).waitFor();

    const schedules = page.getByRole('region', { name: 'Schedules' });
    await schedules.getByText('No schedules yet.').waitFor();
    const cron = schedules.getByLabel('Cron expression');
    await cron.fill('every weekday');
    await schedules.getByLabel('Time zone').fill('Europe/Paris');
    await schedules.getByLabel('Run input (JSON)').fill('{"title": "Weekly triage", "labels": ["chore"]}');
    await schedules.getByLabel('If a run is still going').selectOption({ label: 'Queue one run for when it ends' });
    await schedules.getByRole('button', { name: 'Add schedule' }).click();
    await schedules
      .getByRole('alert')
      .getByText(/^cron: /)
      .waitFor();
    expect(await cron.getAttribute('aria-invalid')).toBe('true');
    await check(page, 'workflow-schedule-refused');

    await cron.fill('0 9 * * 1-5');
    await schedules.getByRole('button', { name: 'Add schedule' }).click();
    const item = schedules.getByRole('list', { name: 'Schedules' }).getByRole('listitem').filter({ hasText: '0 9 * * 1-5 (Europe/Paris)' });
    await item.getByRole('list', { name: 'Next fire times of 0 9 * * 1-5' }).waitFor();
    expect(await item.getByRole('list', { name: 'Next fire times of 0 9 * * 1-5' }).getByRole('listitem').count()).toBe(5);
    expect(await item.getByText('If a run is still going: queue one run for when it ends.', { exact: false }).isVisible()).toBe(true);
    await check(page, 'workflow-schedules');

    await item.getByRole('button', { name: 'Pause 0 9 * * 1-5' }).click();
    await item.getByText('paused', { exact: true }).waitFor();
    expect(await item.getByRole('list', { name: 'Next fire times of 0 9 * * 1-5' }).count()).toBe(0);
    await item.getByRole('button', { name: 'Resume 0 9 * * 1-5' }).click();
    await item.getByText('active', { exact: true }).waitFor();
    await item.getByRole('button', { name: 'Delete 0 9 * * 1-5' }).click();
    await schedules.getByText('No schedules yet.').waitFor();
  });

  it('adds trigger URLs from a workflow page: a refused source shown at its field, the secret shown once, a signed POST starts a run, rotate and delete; a GitHub trigger of declared events', async () => {
    page = await signUp('Trigger Person');
    await page.goto(`${service.base}/workflows`);
    await page.getByLabel('Definition (JSON)').fill(readFileSync('examples/workflows/triage.json', 'utf8'));
    await page.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('heading', { level: 1, name: 'Triage' }).waitFor();

    // Triage declares no GitHub events: the API's refusal is shown at the source.
    const triggers = page.getByRole('region', { name: 'Triggers' });
    await triggers.getByText('No triggers yet.').waitFor();
    const source = triggers.getByLabel('Sent by');
    await source.selectOption({ label: 'GitHub: a repository webhook’s events' });
    await triggers.getByText('This workflow’s definition declares no GitHub events').waitFor();
    await triggers.getByRole('button', { name: 'Add trigger' }).click();
    await triggers
      .getByRole('alert')
      .getByText(/declares no GitHub events/)
      .waitFor();
    expect(await source.getAttribute('aria-invalid')).toBe('true');
    await check(page, 'workflow-trigger-refused');

    await source.selectOption({ label: 'Any sender (webhook): its JSON body is the run input' });
    await triggers.getByLabel('Name (optional)').fill('Issue tracker');
    await triggers.getByLabel('How the sender proves itself').selectOption('signature');
    await triggers.getByRole('button', { name: 'Add trigger' }).click();
    const shown = triggers.getByRole('group', { name: 'Issue tracker is ready' });
    await shown.getByText('Copy the secret now: it will not be shown again.').waitFor();
    const url = (await shown.getByLabel('Trigger URL').textContent())!;
    const secret = (await shown.getByLabel('Trigger secret').textContent())!;
    expect(url).toMatch(new RegExp(`^${service.base}/hooks/workflows/trg_`));
    expect(secret).toMatch(/^whsec_/);
    const item = triggers.getByRole('list', { name: 'Triggers' }).getByRole('listitem', { name: 'Issue tracker' });
    await item.getByText(url, { exact: true }).waitFor();
    await item.getByText('none yet', { exact: true }).waitFor();

    // The URL works: a POST signed as triggers.test.ts signs starts a run with its body as input.
    const deliver = (key: string, id: string) => signedDelivery(url, key, id, { title: 'Login fails', priority: 4, labels: ['bug'] });
    const started = await deliver(secret, 'msg_console_1');
    expect(started.status).toBe(202);
    // One signed with another secret is refused.
    expect((await deliver(`whsec_${randomBytes(24).toString('base64')}`, 'msg_console_forged')).status).toBe(401);
    await page.goto(`${service.base}/workflows/runs/${started.body.runId}`);
    await page.getByRole('status').getByText('success').waitFor({ timeout: 30_000 });

    // Back on the workflow's page the secret is gone for good, and the delivery is listed.
    await page.goto(`${service.base}/workflows/triage`);
    const again = page.getByRole('region', { name: 'Triggers' }).getByRole('listitem', { name: 'Issue tracker' });
    await again.getByText('Last delivery').waitFor();
    expect(await again.getByText('none yet', { exact: true }).count()).toBe(0);
    expect(await page.getByText(secret).count()).toBe(0);
    await check(page, 'workflow-triggers');

    // Its recent deliveries: the refused one first, with its reason, then the one that started the run, linked.
    await again.getByText('Recent deliveries').click();
    const log = again.getByRole('table', { name: 'Recent deliveries of Issue tracker' });
    const rows = log.getByRole('row');
    await rows.nth(1).getByText('msg_console_forged').waitFor();
    await rows.nth(1).getByText('refused', { exact: true }).waitFor();
    await rows
      .nth(1)
      .getByText(/signature .* does not verify/)
      .waitFor();
    expect(await rows.nth(1).getByRole('cell', { name: '401', exact: true }).count()).toBe(1);
    await rows.nth(2).getByText('started', { exact: true }).waitFor();
    expect(await rows.nth(2).getByRole('cell', { name: '202', exact: true }).count()).toBe(1);
    expect(await rows.nth(2).getByRole('link', { name: 'Open run' }).getAttribute('href')).toBe(`/workflows/runs/${started.body.runId}`);
    expect(await rows.count()).toBe(3);
    await check(page, 'workflow-trigger-deliveries');

    // Rotating shows a new secret once; the old one is refused at once.
    await again.getByRole('button', { name: 'Rotate secret of Issue tracker' }).click();
    const rotated = page.getByRole('group', { name: 'New secret of Issue tracker' });
    const newSecret = (await rotated.getByLabel('Trigger secret').textContent())!;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(secret);
    expect((await deliver(secret, 'msg_console_2')).status).toBe(401);
    expect((await deliver(newSecret, 'msg_console_3')).status).toBe(202);

    // Delete asks first; "Keep it" keeps it, then the URL is gone.
    await again.getByRole('button', { name: 'Delete Issue tracker' }).click();
    await again.getByRole('button', { name: 'Keep it' }).click();
    expect(await again.getByRole('button', { name: 'Yes, delete Issue tracker' }).count()).toBe(0);
    await again.getByRole('button', { name: 'Delete Issue tracker' }).click();
    await check(page, 'workflow-trigger-delete');
    await again.getByRole('button', { name: 'Yes, delete Issue tracker' }).click();
    await page.getByRole('region', { name: 'Triggers' }).getByText('No triggers yet.').waitFor();
    expect((await deliver(newSecret, 'msg_console_4')).status).toBe(404);

    // A workflow that declares GitHub events: they are the form's checkboxes, and the steps for GitHub come with the secret.
    await page.goto(`${service.base}/workflows`);
    await page.getByLabel('Definition (JSON)').fill(readFileSync('examples/workflows/review-pull-request.json', 'utf8'));
    await page.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('heading', { level: 1, name: 'Review pull requests' }).waitFor();
    const github = page.getByRole('region', { name: 'Triggers' });
    await github.getByLabel('Sent by').selectOption('github');
    expect(await github.getByLabel('How the sender proves itself').isVisible()).toBe(false);
    const events = github.getByRole('group', { name: 'Events that start a run' });
    expect(await events.getByRole('checkbox').count()).toBe(2);
    expect(await events.getByLabel(/^Pull request opened/).isChecked()).toBe(true);
    await events.getByLabel(/^Pull request reopened/).uncheck();
    await github.getByLabel('Repository (optional)').fill('octo/hello');
    await github.getByRole('button', { name: 'Add trigger' }).click();
    const ready = github.getByRole('group', { name: /^GitHub trigger \w+ is ready$/ });
    const steps = ready.getByRole('list', { name: 'GitHub webhook settings' });
    await steps.getByText('Content type: application/json.').waitFor();
    expect(await steps.getByText('“Let me select individual events”, then Pull requests.', { exact: false }).isVisible()).toBe(true);
    const hook = github.getByRole('list', { name: 'Triggers' }).getByRole('listitem');
    await hook.getByText('Pull request opened', { exact: true }).waitFor();
    await hook.getByText('octo/hello', { exact: true }).waitFor();
    // GitHub's ping, signed with the secret shown, is answered.
    const ping = JSON.stringify({ zen: 'Design for failure.', repository: { full_name: 'octo/hello' } });
    const pong = await fetch((await ready.getByLabel('Trigger URL').textContent())!, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'ping',
        'x-github-delivery': 'gh-console-0',
        'x-hub-signature-256': `sha256=${createHmac('sha256', (await ready.getByLabel('Trigger secret').textContent())!)
          .update(ping)
          .digest('hex')}`,
      },
      body: ping,
    });
    expect(((await pong.json()) as { status: string }).status).toBe('pong');
    await check(page, 'workflow-trigger-github');
  });

  it('creates a key with chosen scopes, shows it once, answers its permission request, sees its memory write and revokes it', async () => {
    page = administrator = await signUp('Settings Person');
    await page.goto(`${service.base}/settings`);
    await page.getByLabel('Key name').fill('laptop agent');
    await page.getByLabel('memory:read').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByLabel('New API key').textContent())!;
    expect(key).toMatch(/^sk_live_/);
    const keys = page.getByRole('list', { name: 'API keys' });
    await keys.getByText('laptop agent').waitFor();
    const listed = (await keys.getByRole('listitem').filter({ hasText: 'laptop agent' }).textContent())!;
    for (const scope of ['profile:read', 'agent:list', 'memory:read']) expect(listed).toContain(scope);

    // The agent holding that key asks for one more scope; the person approves it here.
    const asked = await fetch(`${service.base}/api/v1/agents/request-permission`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ scope: 'memory:write', reason: 'To save the meeting notes to memory' }),
    });
    expect(asked.status).toBe(202);
    await page.reload();
    expect(await page.getByLabel('New API key').count()).toBe(0); // shown once
    await page.getByText('To save the meeting notes to memory').waitFor();
    await check(page, 'settings');
    await page.getByRole('button', { name: 'Approve memory:write for laptop agent' }).click();
    await page.getByText('Granted "memory:write" to laptop agent.').waitFor();
    const memory = await fetch(`${service.base}/api/v1/memory`, {
      method: 'PUT',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Notes from the agent' }),
    });
    expect(memory.status).toBe(200);

    await page.getByRole('button', { name: 'Revoke laptop agent' }).click();
    await keys.getByText('revoked').waitFor();
    expect((await fetch(`${service.base}/api/v1/profile`, { headers: { 'x-api-key': key } })).status).toBe(403); // a revoked key

    // What the agent wrote with the key is the workspace's memory.
    await page.goto(`${service.base}/memory`);
    await expect(page.getByLabel('Memory document').inputValue()).resolves.toBe('Notes from the agent');
    await check(page, 'memory');
  });

  it('lists an app let in through the OAuth consent page under Connected apps, and revokes it after asking again: its token stops at once', async () => {
    // The app's redirect target: it only has to answer, the test reads the code from the browser's URL.
    const callback = createServer((_req, res) => res.end('You can close this window.'));
    const port = await freePort();
    await new Promise<void>((resolve) => callback.listen(port, '127.0.0.1', resolve));
    try {
      page = await signUp('Apps Person');
      const redirectUri = `http://127.0.0.1:${port}/callback`;
      const registered = await fetch(`${service.base}/auth/oauth2/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Notes Sync', redirect_uris: [redirectUri] }),
      });
      const { client_id: clientId } = (await registered.json()) as { client_id: string };
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URL(`${service.base}/auth/oauth2/authorize`);
      authorize.search = new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'profile:read memory:read',
        state: 'console-state',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      await page.goto(authorize.href);
      await Promise.all([page.waitForURL((url) => url.href.startsWith(redirectUri)), page.getByRole('button', { name: 'Allow' }).click()]);
      const code = new URL(page.url()).searchParams.get('code')!;
      const exchanged = await fetch(`${service.base}/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: redirectUri, code_verifier: verifier }),
      });
      const { access_token: accessToken } = (await exchanged.json()) as { access_token: string };
      const asApp = () => fetch(`${service.base}/api/v1/profile`, { headers: { authorization: `Bearer ${accessToken}` } });
      expect((await asApp()).status).toBe(200);

      await page.goto(`${service.base}/settings`);
      const { name: workspace } = await inPage(page, '/api/v1/workspaces/current').then((w) => w as unknown as { name: string });
      const apps = page.getByRole('region', { name: 'Connected apps' });
      const app = apps.getByRole('list', { name: 'Connected apps' }).getByRole('listitem', { name: `Notes Sync in ${workspace}` });
      await app.getByRole('heading', { name: 'Notes Sync' }).waitFor();
      await app.getByText('profile:read, memory:read').waitFor();
      await app.getByText(clientId).waitFor();
      await check(page, 'settings-connected-apps');

      // Revoking asks again in place; keeping it puts things back.
      await app.getByRole('button', { name: `Revoke Notes Sync in ${workspace}` }).click();
      await app.getByText(`Revoke Notes Sync in ${workspace}? It is signed out at once`).waitFor();
      await app.getByRole('button', { name: 'Keep it' }).click();
      expect(await app.getByRole('button', { name: /^Yes, revoke/ }).count()).toBe(0);
      expect((await asApp()).status).toBe(200);
      await app.getByRole('button', { name: `Revoke Notes Sync in ${workspace}` }).click();
      const yes = app.getByRole('button', { name: `Yes, revoke Notes Sync in ${workspace}` });
      expect(await page.evaluate('document.activeElement.textContent')).toBe(await yes.textContent()); // focused, as askInPlace puts it
      await check(page, 'settings-connected-apps-revoke');
      await yes.click();
      await apps.getByRole('status').getByText(`Revoked Notes Sync in ${workspace}.`).waitFor();
      await apps.getByText('No app is connected.').waitFor();
      expect((await asApp()).status).toBe(401);
    } finally {
      callback.close();
    }
  });

  it('invites a member, keeps a secret write-only, sets and removes a model key, and shows connectors and billing', async () => {
    page = administrator;
    await page.goto(`${service.base}/settings`);
    await page.getByRole('list', { name: 'Members' }).getByText('Settings Person').waitFor();
    await page.getByLabel('Email to invite').fill('colleague@example.test');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(/^Invited\. Send them this acceptance token/).waitFor();
    await page.getByRole('list', { name: 'Invitations' }).getByText('colleague@example.test').waitFor();

    await page.getByLabel('Secret name').fill('DEPLOY_TOKEN');
    await page.getByLabel('Secret value').fill('very-secret-value-123');
    await page.getByRole('button', { name: 'Add secret' }).click();
    await page.getByRole('list', { name: 'Secrets' }).getByText('DEPLOY_TOKEN').waitFor();
    expect(await page.content()).not.toContain('very-secret-value-123');

    await page.getByLabel('Model API key').fill('sk-test-0123456789abcdefghijklmnop');
    await page.getByRole('button', { name: 'Save model key' }).click();
    await page.getByText(/key sk-.*is used for your runs/).waitFor();

    await page.getByRole('heading', { name: /GitHub/ }).waitFor();
    await page.getByRole('list', { name: 'Credit packs' }).getByRole('button').first().waitFor();
    await check(page, 'settings-all');

    await page.getByRole('button', { name: 'Remove model key' }).click();
    await page.getByText('Runs use the service’s model and your credits.').waitFor();
    await page.getByRole('button', { name: 'Delete DEPLOY_TOKEN' }).click();
    await page.getByRole('list', { name: 'Secrets' }).getByText('No secrets yet.').waitFor();
  });

  it('lets the owner set and clear spend limits, with what was charged so far, and shows a refused amount at its field', async () => {
    page = await signUp('Limits Owner');
    await page.goto(`${service.base}/settings`);
    const limits = page.getByRole('region', { name: 'Spend limits' });
    await limits.getByText(/^Charged this month: 0 Ds/).waitFor();
    const monthly = limits.getByLabel('Monthly limit (Ds)');
    const daily = limits.getByLabel('Daily limit (Ds)');
    await expect(monthly.inputValue()).resolves.toBe('');

    await monthly.fill('2000000000');
    await limits.getByRole('button', { name: 'Save' }).click();
    const refused = limits.getByRole('alert');
    await refused.waitFor();
    expect(await monthly.getAttribute('aria-invalid')).toBe('true');
    expect(await monthly.getAttribute('aria-errormessage')).toBe(await refused.getAttribute('id'));

    await monthly.fill('250');
    await daily.fill('20.5');
    await limits.getByRole('button', { name: 'Save' }).click();
    await limits.getByText(/^Saved\./).waitFor();
    expect(await limits.getByRole('alert').count()).toBe(0);
    await check(page, 'settings-limits');
    await page.reload();
    const again = page.getByRole('region', { name: 'Spend limits' });
    await expect(again.getByLabel('Monthly limit (Ds)').inputValue()).resolves.toBe('250');
    await expect(again.getByLabel('Daily limit (Ds)').inputValue()).resolves.toBe('20.5');
    await again.getByLabel('Daily limit (Ds)').fill('');
    await again.getByRole('button', { name: 'Save' }).click();
    await again.getByText(/^Saved\./).waitFor();
    await page.reload();
    await expect(page.getByRole('region', { name: 'Spend limits' }).getByLabel('Daily limit (Ds)').inputValue()).resolves.toBe('');
  });

  it('lets the owner set retention, shows a refused window at its field, and shows the windows read-only to a member', async () => {
    const owner = (page = await signUp('Retention Owner'));
    await page.goto(`${service.base}/settings`);
    const retention = page.getByRole('region', { name: 'Retention' });
    const traces = retention.getByLabel('Traces (days)');
    const audit = retention.getByLabel('Audit log (days)');
    await expect(traces.inputValue()).resolves.toBe('30');
    await expect(retention.getByLabel('Workflow runs (days)').inputValue()).resolves.toBe('30');
    await expect(retention.getByLabel('Activity (days)').inputValue()).resolves.toBe('90');
    await expect(audit.inputValue()).resolves.toBe('365');
    await retention.getByText('Default 365 days.').waitFor();

    await traces.fill('7');
    await audit.fill('500');
    await retention.getByRole('button', { name: 'Save' }).click();
    const refused = retention.getByRole('alert');
    await refused.getByText('audit must be at most 400 days').waitFor();
    expect(await audit.getAttribute('aria-invalid')).toBe('true');
    expect(await audit.getAttribute('aria-errormessage')).toBe(await refused.getAttribute('id'));
    await check(page, 'settings-retention');

    await audit.fill('200');
    await retention.getByRole('button', { name: 'Save' }).click();
    await retention.getByText(/^Saved\./).waitFor();
    expect(await retention.getByRole('alert').count()).toBe(0);
    await page.reload();
    await expect(page.getByRole('region', { name: 'Retention' }).getByLabel('Traces (days)').inputValue()).resolves.toBe('7');
    await expect(page.getByRole('region', { name: 'Retention' }).getByLabel('Audit log (days)').inputValue()).resolves.toBe('200');

    // A member of the owner's workspace, acting there, sees the same windows and no way to change them.
    const member = await signUp('Retention Member');
    const workspace = await inPage(owner, '/api/v1/workspaces/current');
    await owner.goto(`${service.base}/settings`);
    await owner.getByLabel('Email to invite').fill((await inPage(member, '/api/v1/profile')).email);
    await owner.getByRole('button', { name: 'Invite' }).click();
    const invited = (await owner.getByText(/^Invited\. Send them this acceptance token/).textContent())!;
    await inPage(member, '/api/v1/invitations/accept', { token: invited.split(': ').at(-1) });
    await member.reload();
    await member.getByRole('combobox', { name: 'Workspace' }).selectOption(workspace.id);
    await member.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    await member.goto(`${service.base}/settings`);
    page = member;
    const seen = page.getByRole('region', { name: 'Retention' });
    await seen.getByText('Only the owner can change them.').waitFor();
    await expect(seen.getByLabel('Traces (days)').inputValue()).resolves.toBe('7');
    expect(await seen.getByLabel('Audit log (days)').getAttribute('readonly')).toBe('');
    expect(await seen.getByRole('button', { name: 'Save' }).count()).toBe(0);
    const people = page.getByRole('region', { name: 'Members and invitations' });
    await people.getByText('Owners and admins invite people to this workspace.').waitFor();
    expect(await people.getByLabel('Email to invite').count()).toBe(0);
    await check(page, 'settings-retention-member');
  });

  it('adds a webhook endpoint (its secret shown once), lists its delivery of a run and redelivers it, disables it, and sets and removes a telemetry destination', async () => {
    // A receiver on this machine: loopback endpoints are accepted under LOCAL_DEVELOPMENT.
    const received: string[] = [];
    const receiver = createServer((req, res) => {
      req.on('data', () => {});
      req.on('end', () => {
        received.push(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
    try {
      page = await signUp('Hooks Owner');
      await page.goto(`${service.base}/settings`);
      const hooks = page.getByRole('region', { name: 'Webhooks' });
      await hooks.getByText('No endpoints yet.').waitFor();
      await hooks.getByLabel('Endpoint URL').fill('http://example.com/hooks');
      await hooks.getByLabel(/^A run completed/).check();
      await hooks.getByRole('button', { name: 'Add endpoint' }).click();
      const refused = hooks.getByRole('alert');
      await refused.waitFor();
      expect(await hooks.getByLabel('Endpoint URL').getAttribute('aria-invalid')).toBe('true');

      await hooks.getByLabel('Endpoint URL').fill(`http://127.0.0.1:${port}/hooks`);
      await hooks.getByLabel('Description (optional)').fill('Local receiver');
      await hooks.getByRole('button', { name: 'Add endpoint' }).click();
      await expect(hooks.getByLabel('Signing secret').textContent()).resolves.toMatch(/^whsec_/);
      // The form starts over for the next endpoint: no event left ticked.
      expect(await hooks.getByLabel(/^A run completed/).isChecked()).toBe(false);
      const endpoint = hooks.getByRole('listitem', { name: 'Local receiver' });
      await endpoint.getByText('Events: A run completed').waitFor();
      await endpoint.getByText('enabled', { exact: true }).waitFor();

      // A run that completes is delivered to the receiver and listed under Deliveries.
      await page.evaluate(`(async () => {
        const headers = { 'content-type': 'application/json', 'x-csrf-token': document.querySelector('meta[name="csrf-token"]').content };
        await fetch('/api/v1/skills/hook-notes', { method: 'PUT', headers, body: JSON.stringify({ name: 'Hook notes', description: 'Summarises.', category: 'productivity', prompt: '# Notes\\nSummarise.' }) });
        await fetch('/api/v1/skills/hook-notes/run', { method: 'POST', headers, body: JSON.stringify({ input: 'Ship it.' }) });
      })()`);
      await expect.poll(() => received.length, { timeout: 60_000 }).toBeGreaterThan(0);
      await endpoint.getByText('Deliveries').click();
      const deliveries = endpoint.getByRole('list', { name: 'Deliveries' });
      await deliveries.getByText('execution.completed').waitFor();
      await deliveries.getByRole('cell', { name: '204' }).waitFor();
      await deliveries.getByRole('button', { name: /^Redeliver dlv_/ }).click();
      await deliveries.getByRole('cell', { name: '2', exact: true }).waitFor();
      expect(new Set(received).size).toBe(1);
      expect(received.length).toBe(2);
      await check(page, 'settings-webhooks');

      await hooks.getByRole('button', { name: 'Rotate secret of Local receiver' }).click();
      await hooks.getByText(/^The new signing secret of Local receiver/).waitFor();
      await hooks.getByRole('button', { name: 'Disable Local receiver' }).click();
      await hooks.getByRole('listitem', { name: 'Local receiver' }).getByText('disabled', { exact: true }).waitFor();
      await hooks.getByRole('button', { name: 'Delete Local receiver' }).click();
      await hooks.getByText('No endpoints yet.').waitFor();

      // Telemetry: an endpoint and a write-only header, then removed.
      const otel = page.getByRole('region', { name: 'Telemetry' });
      await otel.getByText('No destination: runs are not exported.').waitFor();
      await otel.getByLabel('OTLP traces endpoint').fill('https://collector.example.com/v1/traces');
      await otel.getByLabel('Header 1 name').fill('x-honeycomb-team');
      await otel.getByLabel('Header 1 value').fill('team-key');
      await otel.getByRole('button', { name: 'Save' }).click();
      await otel.getByText('Exported: 0 traces. Dropped: 0.').waitFor();
      await otel.getByText('Headers sent (values hidden): x-honeycomb-team').waitFor();
      // The typed value is not kept in the page to be sent again with the next save.
      await expect(otel.getByLabel('Header 1 value').inputValue()).resolves.toBe('');
      await check(page, 'settings-telemetry');
      await page.reload();
      const again = page.getByRole('region', { name: 'Telemetry' });
      await expect(again.getByLabel('OTLP traces endpoint').inputValue()).resolves.toBe('https://collector.example.com/v1/traces');
      expect(await again.getByText('team-key').count()).toBe(0);
      await again.getByRole('button', { name: 'Remove' }).click();
      await again.getByText('No destination: runs are not exported.').waitFor();
    } finally {
      receiver.close();
    }
  });

  it('writes a new skill, approves an agent asking to connect with fewer scopes than it asked for, and edits the skill into a new version, restores the old one and binds a secret', async () => {
    page = await signUp('Author Person');
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Skills' }).click();
    await page.getByLabel('Slug').fill('Release Notes');
    await page.getByLabel('Name').fill('Release notes');
    await page.getByLabel('Description').fill('Turns a list of merged changes into release notes.');
    await page.getByLabel('Category').selectOption({ label: 'Documents' });
    await page.getByLabel('Instructions').fill('Write release notes from the changes given, grouped by kind.');
    await page.getByRole('button', { name: 'Create skill' }).click();
    await page.getByRole('alert').waitFor(); // the slug has capitals and a space: refused at its field
    expect(await page.getByLabel('Slug').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Slug').fill('release-notes');
    await page.getByRole('button', { name: 'Create skill' }).click();
    await page.getByRole('heading', { level: 1, name: 'Release notes' }).waitFor();
    await page.getByRole('list', { name: 'Versions' }).getByText('Version 1').waitFor();

    // An agent with a key of this person's asks to connect; the person grants one of its two scopes.
    await page.goto(`${service.base}/settings`);
    await page.getByLabel('Key name').fill('notes agent');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByLabel('New API key').textContent())!;
    const asked = await fetch(`${service.base}/api/v1/agents/connect`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ requestedScopes: ['memory:read', 'memory:write'], agentDisplayName: 'Notes agent', reason: 'To keep the team notes' }),
    });
    expect(asked.status).toBe(202);
    const { consent_id: consentId } = (await asked.json()) as { consent_id: string };
    await page.reload();
    const consents = page.getByRole('list', { name: 'Pending agent consents' });
    await consents.getByText('To keep the team notes').waitFor();
    await check(page, 'settings-consent');
    await consents.getByLabel('memory:write').uncheck();
    await page.getByRole('button', { name: 'Approve Notes agent (key notes agent)' }).click();
    await page.getByText(/^Connected Notes agent: its key now holds/).waitFor();
    const poll = await fetch(`${service.base}/api/v1/agents/connect/poll/${consentId}`, { headers: { 'x-api-key': key } });
    const granted = (await poll.json()) as { status: string; scopes: string[] };
    expect(granted.status).toBe('granted');
    expect(granted.scopes).toContain('memory:read');
    expect(granted.scopes).not.toContain('memory:write');

    // Their own skill: a new version, the old one restored, a secret bound.
    await page.getByLabel('Secret name').fill('NOTES_TOKEN');
    await page.getByLabel('Secret value').fill('token-for-the-notes');
    await page.getByRole('button', { name: 'Add secret' }).click();
    await page.getByRole('list', { name: 'Secrets' }).getByText('NOTES_TOKEN').waitFor();

    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Skills' }).click();
    await page.getByRole('link', { name: 'Release notes', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Release notes' }).waitFor();
    await page.getByLabel('Description').fill('Short release notes.');
    await page.getByLabel('Version note').fill('shorter description');
    await page.getByRole('button', { name: 'Save version' }).click();
    await page.getByText('Saved as a new version.').waitFor();
    const versions = page.getByRole('list', { name: 'Versions' });
    await versions.getByRole('listitem').filter({ hasText: 'Version 2' }).getByText('active').waitFor();
    // Each version says where it came from and how many files it has.
    await versions.getByRole('listitem').filter({ hasText: 'Version 2' }).getByText('· written here · 1 file').waitFor();
    await page.getByRole('button', { name: 'Restore version 1' }).click();
    await page.getByText('Restored version 1 as a new version.').waitFor();
    await versions.getByRole('listitem').filter({ hasText: 'Version 3' }).getByText('active').waitFor();
    expect(await page.getByLabel('Description').inputValue()).not.toBe('Short release notes.');
    await page.getByLabel('Secret', { exact: true }).selectOption({ label: 'NOTES_TOKEN' });
    await page.getByLabel('Environment variable').fill('NOTES_TOKEN');
    await page.getByRole('button', { name: 'Bind secret' }).click();
    await page.getByRole('list', { name: 'Secret bindings' }).getByText('NOTES_TOKEN').first().waitFor();
    await check(page, 'skill');
  });

  it('reruns and remixes a run, and reads its trace', async () => {
    page = runner;
    // The first run, again: Rerun in its lineage, then Remix.
    await page.goto(`${service.base}/runs`);
    await page.getByRole('table').getByRole('link').last().click();
    await page.getByLabel('New instructions').waitFor();
    const first = page.url();
    await page.getByLabel('New instructions').fill('Only the action items, please.');
    await page.getByRole('button', { name: 'Rerun' }).click();
    await page.waitForURL((url) => url.href !== first);
    await page.getByRole('status').getByText('end turn').waitFor({ timeout: 30_000 });
    await page.getByText('Event timeline').click();
    await page.getByRole('list', { name: 'Event timeline' }).getByText('session.status_idle').waitFor();
    const rerun = page.url();
    await page.getByLabel('New instructions').fill('A haiku of the meeting.');
    await page.getByRole('button', { name: 'Remix' }).click();
    await page.waitForURL((url) => url.href !== rerun);
    await output()
      .getByText(/^You: A haiku of the meeting\.$/)
      .waitFor();

    await page.goto(`${service.base}/traces`);
    await page.getByRole('list', { name: 'Traces' }).getByRole('link').first().click();
    await page.getByRole('heading', { name: 'Turns' }).waitFor();
    await page.getByRole('list', { name: 'Turns' }).getByRole('listitem').first().waitFor();
    await check(page, 'trace');
  });

  // The next four wait on the service most of their time (an eval's runs at 40 ms a word, a
  // deletion's steps, a rate limit's window), each as a person of its own: they run together,
  // on pages of their own.
  it.concurrent(
    'installs a skill that ships eval cases, runs an eval of it on the local model, and reads each case’s runs with and without the skill side by side',
    async () => {
      const page = await signUp('Eval Person');
      const slug = 'pull-request-reviewer';
      await page.goto(`${service.base}/marketplace/${slug}`);
      const evals = page.getByRole('region', { name: 'Evals' });
      await evals.getByText('The catalog ships no eval results for this skill.').waitFor();
      await page.getByRole('button', { name: 'Install' }).click();
      await page
        .getByRole('status')
        .getByText(/^Installed /)
        .waitFor();

      await page.goto(`${service.base}/skills/${slug}`);
      await evals.getByText('No finished eval yet.').waitFor();
      await evals.getByLabel('Repetitions').fill('1');
      await evals.getByRole('button', { name: 'Run eval' }).click();
      await page.waitForURL(/\/skills\/pull-request-reviewer\/evals\/eval_\d+$/);
      await page.getByRole('heading', { level: 1, name: `Eval of ${slug}, version 1` }).waitFor();
      // The page follows the job until it ends.
      await page.getByRole('status').getByText('Eval succeeded.').waitFor({ timeout: 90_000 });
      const evalId = page.url().split('/').pop()!;
      const job = (await inPage(page, `/api/v1/skills/${slug}/evals/${evalId}`)) as unknown as {
        local: boolean;
        cases: {
          id: number | string;
          runs: {
            with: { output: string; checks: { passed: boolean }[]; expectations?: { passed: null }[] };
            without: { output: string; checks: { passed: boolean }[] };
          }[];
        }[];
      };
      expect(job.local).toBe(true);
      await page.getByText('marks a run on the built-in local model').first().waitFor();
      // Each case: the run with the skill and the run without it, each with its output and each check's verdict as the service graded it.
      for (const c of job.cases) {
        const section = page.getByRole('region', { name: `Case ${c.id}`, exact: true });
        const run = c.runs[0]!;
        for (const [side, graded] of [
          ['with the skill', run.with],
          ['without the skill', run.without],
        ] as const) {
          const title = side === 'with the skill' ? 'With the skill' : 'Without the skill';
          const output = section.getByRole('region', { name: new RegExp(`^${title}`) }).getByLabel(`${title}, case ${c.id}: output`);
          expect((await output.textContent())!.trim()).toBe(graded.output.trim());
          const verdicts = await section
            .getByRole('list', { name: `Checks ${side}, case ${c.id}` })
            .getByRole('listitem')
            .allTextContents();
          expect(verdicts.map((v) => v.trim().split(' ')[0])).toEqual(graded.checks.map((k) => (k.passed ? 'pass' : 'fail')));
        }
        // The local model grades no expectation: each is shown ungraded, with the reason.
        if (run.with.expectations?.length) {
          const expectations = section.getByRole('list', { name: `Expectations with the skill, case ${c.id}` }).getByRole('listitem');
          expect(await expectations.first().textContent()).toMatch(/^not graded/);
        }
      }
      await check(page, 'skill-eval');

      // The skill shows it as the latest eval of version 1, labelled local, with a way back to it.
      await page.getByRole('link', { name: `Back to ${slug}` }).click();
      const latest = page.getByRole('table', { name: 'Latest eval of each version' });
      await latest.waitFor();
      expect(await latest.getByRole('row', { name: /Version 1/ }).textContent()).toContain('local model');
      await check(page, 'skill-evals');
      await latest.getByRole('link', { name: 'Open the eval of version 1' }).click();
      await page.getByRole('heading', { level: 1, name: `Eval of ${slug}, version 1` }).waitFor();
    },
  );

  it.concurrent(
    'holds back a skill version its eval scores lower, follows it to refused, lets the owner make it current anyway, and shows a member the guard read-only',
    async () => {
      let page = await signUp('Guard Owner');
      const owner = page;
      await page.goto(`${service.base}/settings`);
      const guard = page.getByRole('region', { name: 'Skill version guard' });
      const enabled = guard.getByLabel('Hold back new skill versions until their eval passes');
      expect(await enabled.isChecked()).toBe(false);
      await enabled.check();
      await guard.getByRole('button', { name: 'Save' }).click();
      await guard.getByText(/^Saved\. New versions are held back/).waitFor();
      await check(page, 'settings-skill-guard');

      // Version 1 carries eval cases. The local model's answer shows the skill's steps under
      // "### Approach": case 1 checks for them, so a version without steps passes one case of two.
      const slug = 'release-digest';
      await inPage(
        owner,
        `/api/v1/skills/${slug}`,
        {
          name: 'Release digest',
          description: 'Writes release notes.',
          category: 'productivity',
          prompt: '# Release Notes Writer\n1. Group the changes by kind.\n2. Name breaking changes first.',
          evals: [
            {
              id: 1,
              prompt: 'Write release notes for: fixed login bug. Added dark mode.',
              checks: [{ type: 'contains', value: 'approach', ignore_case: true }],
            },
            { id: 2, prompt: 'Write release notes for: faster search.', checks: [{ type: 'not_contains', value: 'lorem ipsum' }] },
          ],
        },
        'PUT',
      );
      await page.goto(`${service.base}/skills/${slug}`);
      await page.getByRole('heading', { level: 1, name: 'Release digest' }).waitFor();
      await page.getByLabel('Instructions').fill('Be brief.');
      await page.getByLabel('Version note').fill('no steps');
      await page.getByRole('button', { name: 'Save version' }).click();
      await page.getByText('Saved as version 2. It is being evaluated against version 1').waitFor();
      const evalHref = await page.getByRole('link', { name: 'Follow the eval of version 2' }).getAttribute('href');
      expect(evalHref).toMatch(new RegExp(`^/skills/${slug}/evals/eval_\\d+$`));
      const versions = page.getByRole('list', { name: 'Versions' });
      const [first, second] = [/^Version 1(?!\d)/, /^Version 2(?!\d)/].map((name) => versions.getByRole('listitem').filter({ hasText: name }));
      await second!.getByText('evaluating', { exact: true }).waitFor();
      await first!.getByText('active', { exact: true }).waitFor();
      // The list follows the eval until the guard decides.
      await second!.getByText('refused', { exact: true }).waitFor({ timeout: 90_000 });
      await second!.getByText('50% with the skill; version 1 had 100%').waitFor();
      await page.getByRole('status').getByText('Version 2 was refused: 50% with the skill; version 1 had 100%.').waitFor();
      await second!.getByText(/below version 1/).waitFor();
      expect(await second!.getByRole('link', { name: 'Open its eval, version 2' }).getAttribute('href')).toBe(evalHref);
      // A refused version may be restored: with the guard on, it is held back and measured again.
      expect(await second!.getByRole('button', { name: 'Restore version 2' }).count()).toBe(1);
      // The editor keeps what its writer wrote, to try again; the current version is still version 1.
      expect(await page.getByLabel('Instructions').inputValue()).toBe('Be brief.');
      expect(await first!.getByText('active', { exact: true }).count()).toBe(1);
      await check(page, 'skill-guard-refused');

      // A member of the owner's workspace sees the guard on, read-only, and no override.
      const member = await signUp('Guard Member');
      const workspace = await inPage(owner, '/api/v1/workspaces/current');
      const invited = (await inPage(owner, `/api/v1/workspaces/${workspace.id}/invitations`, {
        email: (await inPage(member, '/api/v1/profile')).email,
        role: 'member',
      })) as unknown as { token: string };
      await inPage(member, '/api/v1/invitations/accept', { token: invited.token });
      await member.reload();
      await member.getByRole('combobox', { name: 'Workspace' }).selectOption(workspace.id);
      await member.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
      await member.goto(`${service.base}/settings`);
      page = member;
      const seen = page.getByRole('region', { name: 'Skill version guard' });
      await seen.getByText('Only the owner can change it.').waitFor();
      const box = seen.getByLabel('Hold back new skill versions until their eval passes');
      expect(await box.isChecked()).toBe(true);
      expect(await box.isDisabled()).toBe(true);
      expect(await seen.getByRole('button', { name: 'Save' }).count()).toBe(0);
      await check(page, 'settings-skill-guard-member');
      await page.goto(`${service.base}/skills/${slug}`);
      await page.getByRole('list', { name: 'Versions' }).getByText('50% with the skill; version 1 had 100%').waitFor();
      expect(await page.getByRole('button', { name: 'Make current anyway, version 2' }).count()).toBe(0);

      // The owner makes it current anyway, asked again first.
      page = owner;
      await page.getByRole('button', { name: 'Make current anyway, version 2' }).click();
      await page.getByText('Make version 2 current without passing its eval?').waitFor();
      await page.getByRole('button', { name: 'Yes, make version 2 current' }).click();
      await page.getByText('Version 2 is current, over the guard.').waitFor();
      await second!.getByText('active', { exact: true }).waitFor();
      await second!.getByText('overridden', { exact: true }).waitFor();
      expect(await page.getByRole('button', { name: 'Make current anyway, version 2' }).count()).toBe(0);
      expect(await page.getByLabel('Instructions').inputValue()).toBe('Be brief.');
      await check(page, 'skill-guard-overridden');
    },
  );

  it.concurrent('says so while it waits out the API rate limit', async () => {
    const page = await signUp('Busy Person');
    // The person's 100 requests of this minute and one more, spent from the page as the console calls (cookie and
    // CSRF token), in a window with time left for what follows (a window that ends during them would split them).
    const statuses = (await page.evaluate(`(async () => {
      const headers = { 'x-csrf-token': document.querySelector('meta[name="csrf-token"]').content };
      const reset = Number((await fetch('/api/v1/profile', { headers })).headers.get('x-ratelimit-reset'));
      if (reset < 20) await new Promise((resolve) => setTimeout(resolve, (reset + 1) * 1000));
      const answers = await Promise.all(Array.from({ length: 101 }, () => fetch('/api/v1/profile', { headers })));
      return answers.map((res) => res.status);
    })()`)) as number[];
    expect(statuses).toContain(429);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Memory' }).click();
    await page
      .getByRole('status')
      .getByText(/^The service is limiting requests for a moment: trying again in \d+ s\.$/)
      .waitFor();
    expect(await page.locator('#app').getAttribute('aria-busy')).toBe('true');
    await check(page, 'rate-limited');
  });

  it.concurrent(
    'deletes a workspace whose name its owner types back, following the job until it completes, then deletes the account with its password',
    async () => {
      const page = await signUp('Leaving Person');
      const team = await inPage(page, '/api/v1/workspaces', { name: 'Doomed Team', slug: `doomed-${Date.now()}` });
      await page.reload();
      await page.getByRole('combobox', { name: 'Workspace' }).selectOption(team.id);
      await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
      await page.goto(`${service.base}/settings`);

      const workspace = page.getByRole('region', { name: 'Delete workspace' });
      const confirm = workspace.getByLabel('Type the workspace’s name (Doomed Team) to confirm');
      await confirm.fill('doomed team');
      await workspace.getByRole('button', { name: 'Delete workspace' }).click();
      await workspace.getByRole('alert').getByText("Type the workspace's name exactly to confirm its deletion").waitFor();
      expect(await confirm.getAttribute('aria-invalid')).toBe('true');
      await check(page, 'settings-delete-workspace-refused');
      await confirm.fill('Doomed Team');
      await workspace.getByRole('button', { name: 'Delete workspace' }).click();
      await workspace.getByText('Everything in it is gone.').waitFor({ timeout: 60_000 });
      await workspace.getByText('completed').waitFor();
      await check(page, 'settings-delete-workspace-done');
      expect((await inPage(page, '/api/v1/workspaces/current')).id).not.toBe(team.id);

      // Back in the personal workspace, which goes only with the account.
      await page.goto(`${service.base}/settings`);
      await page.getByRole('region', { name: 'Delete workspace' }).getByText('Your personal workspace is deleted only with your account').waitFor();
      const account = page.getByRole('region', { name: 'Delete account' });
      await account.getByLabel('Your password').fill('console password long enough');
      await account.getByRole('button', { name: 'Delete account' }).click();
      await account.getByText('Your account is deleted.').waitFor({ timeout: 60_000 });
      await account.getByText('workspaces deleted: 1 of 1').waitFor();
      await check(page, 'settings-delete-account-done');
      // With the page's cookies, but outside the page: the 401 is the answer wanted, not a page's failure.
      expect((await page.context().request.get(`${service.base}/api/v1/profile`)).status()).toBe(401);
    },
  );

  it('shows the other sections accessibly, and no page was refused by its CSP or failed', async () => {
    page = runner;
    for (const [path, name] of [
      ['/skills', 'skills'],
      ['/workflows', 'workflows'],
      ['/traces', 'traces'],
    ]) {
      await page.goto(`${service.base}${path}`);
      await page.locator('#app:not([aria-busy])').waitFor({ state: 'attached' });
      await check(page, name!);
    }
    expect(problems).toEqual([]);
  });
});
