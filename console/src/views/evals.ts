import { api, post, type Answer } from '../api';
import { field, h, show, statusBadge, when, type Kid } from '../dom';
import { failure } from './settings-more';

type LatestEval = Answer<'/skills/{slug}'>['evals'][number];
type ShippedEval = Answer<'/marketplace/skills/{slug}'>['evals'][number];
type Job = Answer<'/skills/{slug}/evals/{evalId}'>;
type Run = NonNullable<Job['cases'][number]['runs'][number]['with']>;

const POLL_MS = 2000;

export const evalPath = (slug: string, id: string) => `/skills/${encodeURIComponent(slug)}/evals/${encodeURIComponent(id)}`;

export const percent = (rate: number | null) => (rate === null ? 'not graded' : `${Math.round(rate * 100)}%`);
const points = (difference: number | null) => {
  if (difference === null) return 'none';
  const n = Math.round(difference * 100);
  return n === 0 ? '0 points' : `${n > 0 ? '+' : '−'}${Math.abs(n)} points`;
};

/** Why a result on the built-in local model says little, wherever one is shown. */
const localNote = () =>
  h(
    'p',
    { class: 'muted' },
    h('span', { class: 'badge' }, 'local model'),
    ' marks a run on the built-in local model: its answers are a digest of the input and the skill’s steps, not a model’s, and only machine checks are graded. It shows that the cases and checks work, not how much the skill helps a model.',
  );

const modelCell = (model: string, local: boolean) => [model, local ? h('span', { class: 'badge' }, 'local model') : null];

/** A table of evals, a row each, with the columns every place shows: cases, pass rates with and without, difference, model, date. */
function evalTable(
  label: string,
  firstColumn: string,
  rows: { first: Kid; casesCount: number; e: LatestEval | ShippedEval; last?: Kid }[],
  lastColumn?: string,
) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('caption', { class: 'sr-only' }, label),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          [firstColumn, 'Cases', 'With the skill', 'Without', 'Difference', 'Model', 'Date', lastColumn].map((c) => (c ? h('th', { scope: 'col' }, c) : null)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((r) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, r.first),
            h('td', {}, String(r.casesCount)),
            h('td', {}, percent(r.e.passRateWith)),
            h('td', {}, percent(r.e.passRateWithout)),
            h('td', {}, points(r.e.difference)),
            h('td', {}, modelCell(r.e.model, r.e.local)),
            h('td', {}, when(r.e.completedAt)),
            lastColumn ? h('td', {}, r.last) : null,
          ),
        ),
      ),
    ),
    rows.some((r) => r.e.local) ? localNote() : null,
  );
}

/** The marketplace skill's shipped results: the latest eval of each version its deployer ran, the current one marked. */
export function shippedEvals(evals: ShippedEval[], contentChecksum: string) {
  if (!evals.length) return h('p', { class: 'muted' }, 'The catalog ships no eval results for this skill.');
  return [
    h('p', {}, 'How the deployer’s runs of this skill’s eval cases did with the skill and without it (the same model and input, no instructions).'),
    evalTable(
      'Shipped evals',
      'Version',
      evals.map((e) => ({
        first: [e.version, e.contentChecksum === contentChecksum ? h('span', { class: 'badge' }, 'current') : null],
        casesCount: e.casesCount,
        e,
      })),
    ),
    evals.map((e) =>
      h(
        'details',
        {},
        h('summary', {}, `Per case, version ${e.version} (${e.model})`),
        h(
          'ul',
          { class: 'plain' },
          e.cases.map((c) => h('li', {}, `Case ${c.id}: ${percent(c.passRateWith)} with the skill, ${percent(c.passRateWithout)} without`)),
        ),
      ),
    ),
  ].flat();
}

/**
 * An installed skill's evals: the latest of each version, recent jobs (running ones too), and
 * "Run eval" when its active version carries cases (it opens the job's page, which follows it).
 */
export async function installedEvals(slug: string, details: Answer<'/skills/{slug}'>) {
  const jobs = await api('/skills/{slug}/evals', { path: { slug }, query: { limit: 5 } });
  const repetitions = h('input', { id: 'eval-repetitions', type: 'number', min: 1, max: 5, value: 1, required: true });
  const message = h('div', { role: 'status' });
  const start = h('button', { type: 'submit' }, 'Run eval');
  return [
    details.evals.length
      ? evalTable(
          'Latest eval of each version',
          'Version',
          details.evals.map((e) => ({
            first: `Version ${e.versionNumber}`,
            casesCount: e.casesCount,
            e,
            last: h('a', { href: evalPath(slug, e.id), 'aria-label': `Open the eval of version ${e.versionNumber}` }, 'Open'),
          })),
          'Details',
        )
      : h('p', { class: 'muted' }, 'No finished eval yet.'),
    jobs.data.length
      ? [
          h('h3', { id: 'eval-jobs-h' }, 'Recent eval jobs'),
          h(
            'ul',
            { class: 'plain', 'aria-labelledby': 'eval-jobs-h' },
            jobs.data.map((j) =>
              h(
                'li',
                {},
                h('a', { href: evalPath(slug, j.id) }, `Version ${j.versionNumber}, ${j.model}`),
                ' ',
                statusBadge(j.status),
                ' ',
                h('span', { class: 'muted' }, when(j.createdAt)),
              ),
            ),
          ),
        ]
      : null,
    details.hasEvalCases
      ? h(
          'form',
          {
            'aria-label': 'Run an eval',
            onsubmit: async (e: Event) => {
              e.preventDefault();
              start.disabled = true;
              try {
                const job = await post('/skills/{slug}/evals/run', {
                  path: { slug },
                  body: { version: details.versionNumber, repetitions: Number(repetitions.value) },
                });
                location.assign(evalPath(slug, job.id));
              } catch (error) {
                start.disabled = false;
                show(message, failure(error, 'The eval could not start.'));
              }
            },
          },
          h(
            'p',
            { class: 'muted' },
            `Runs each case of version ${details.versionNumber} with the skill and without it, and grades both. The runs are charged like any run.`,
          ),
          field('Repetitions', repetitions, 'Runs of each case each way, 1 to 5.'),
          start,
          message,
        )
      : h('p', { class: 'muted' }, 'The active version has no eval cases.'),
  ];
}

/** What a check tested, in words. */
function checkText(check: Record<string, unknown>) {
  const quoted = (v: unknown) => JSON.stringify(v);
  switch (check.type) {
    case 'contains':
      return `contains ${quoted(check.value)}${check.ignore_case ? ' (any case)' : ''}`;
    case 'not_contains':
      return `does not contain ${quoted(check.value)}${check.ignore_case ? ' (any case)' : ''}`;
    case 'regex':
      return `matches /${String(check.pattern)}/${String(check.flags ?? '')}`;
    case 'json_schema':
      return 'holds JSON matching the schema';
    case 'artifact':
      return `wrote a file named ${quoted(check.name)}`;
    default:
      return String(check.type);
  }
}

const verdict = (passed: boolean | null | undefined) =>
  passed === true
    ? h('span', { class: 'badge verdict-pass' }, 'pass')
    : passed === false
      ? h('span', { class: 'badge verdict-fail' }, 'fail')
      : h('span', { class: 'badge' }, 'not graded');

/** One run of a case (with or without the skill): its output, and each check and expectation with its verdict. */
function runPanel(id: string, title: string, caseLabel: string, run: Run | undefined) {
  const heading = h('h4', { id }, title, ' ', run?.status === 'graded' ? verdict(run.passed) : statusBadge(run?.status ?? 'pending'));
  if (!run || run.status !== 'graded')
    return h(
      'section',
      { class: 'run-panel', 'aria-labelledby': id },
      heading,
      h('p', { class: 'muted' }, run?.status === 'skipped' ? 'Not run.' : 'Not graded yet.'),
    );
  return h(
    'section',
    { class: 'run-panel', 'aria-labelledby': id },
    heading,
    run.note ? h('p', {}, run.note) : null,
    h('pre', { class: 'eval-output', tabindex: 0, 'aria-label': `${title}, ${caseLabel}: output` }, run.output || '(no output)'),
    run.outputChars !== undefined && run.output !== undefined && run.outputChars > run.output.length
      ? h('p', { class: 'muted' }, `The start of ${run.outputChars} characters; the whole is the run’s.`)
      : null,
    run.executionId ? h('p', {}, h('a', { href: `/runs/${encodeURIComponent(run.executionId)}` }, `Open the run ${title.toLowerCase()}`)) : null,
    run.checks?.length
      ? [
          h('h5', {}, 'Checks'),
          h(
            'ul',
            { class: 'plain verdicts', 'aria-label': `Checks ${title.toLowerCase()}, ${caseLabel}` },
            run.checks.map((c) => h('li', {}, verdict(c.passed), ' ', checkText(c.check), c.detail ? h('span', { class: 'muted' }, ` · ${c.detail}`) : null)),
          ),
        ]
      : null,
    run.expectations?.length
      ? [
          h('h5', {}, 'Expectations'),
          h(
            'ul',
            { class: 'plain verdicts', 'aria-label': `Expectations ${title.toLowerCase()}, ${caseLabel}` },
            run.expectations.map((x) =>
              h('li', {}, verdict(x.passed), ' ', x.expectation, x.reasoning ? h('p', { class: 'muted reasoning' }, x.reasoning) : null),
            ),
          ),
        ]
      : null,
  );
}

const settled = (status: string) => status !== 'queued' && status !== 'running';

/** The per-case view: each case's prompt, then per repetition the run with the skill and the run without it, side by side. */
function caseSections(job: Job) {
  return job.cases.map((c, i) => {
    const caseLabel = `case ${c.id}`;
    return h(
      'section',
      { class: 'eval-case', 'aria-labelledby': `case-${i}-h` },
      h('h3', { id: `case-${i}-h` }, `Case ${c.id}`),
      h('p', {}, `With the skill ${percent(c.passRateWith)}, without ${percent(c.passRateWithout)}`),
      h('details', {}, h('summary', {}, 'Prompt'), h('pre', { tabindex: 0, 'aria-label': `Prompt of ${caseLabel}` }, c.prompt)),
      c.expected_output ? h('details', {}, h('summary', {}, 'Expected output'), h('pre', { tabindex: 0 }, c.expected_output)) : null,
      c.runs.map((r) => [
        job.repetitions > 1 ? h('p', { class: 'muted' }, `Repetition ${r.repetition}`) : null,
        h(
          'div',
          { class: 'side-by-side' },
          runPanel(`case-${i}-r${r.repetition}-with`, 'With the skill', caseLabel, r.with),
          runPanel(`case-${i}-r${r.repetition}-without`, 'Without the skill', caseLabel, r.without),
        ),
      ]),
    );
  });
}

/** Graded (or skipped) runs of all the job has, in words. */
function progress(job: Job) {
  const runs = job.cases.flatMap((c) => c.runs.flatMap((r) => [r.with, r.without]));
  const done = runs.filter((r) => r && (r.status === 'graded' || r.status === 'skipped')).length;
  return `${done} of ${runs.length} runs graded`;
}

/** An eval job's page (`/skills/:slug/evals/:id`): its totals and the per-case view, followed until it ends. */
export async function skillEval(app: HTMLElement, item: string) {
  const [slug = '', evalId = ''] = item.split('/');
  const status = h('p', { role: 'status' });
  const body = h('div');
  const draw = (job: Job) => {
    document.querySelector('h1')!.textContent = `Eval of ${slug}, version ${job.versionNumber}`;
    document.title = `Eval of ${slug} · Workspace AI Skills`;
    status.textContent = settled(job.status) ? `Eval ${job.status}${job.stopReason ? ` (${job.stopReason})` : ''}.` : `Eval ${job.status}: ${progress(job)}.`;
    show(
      body,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Status'),
        h('dd', {}, statusBadge(job.status)),
        h('dt', {}, 'Model'),
        h('dd', {}, modelCell(job.model, job.local)),
        h('dt', {}, 'With the skill'),
        h('dd', {}, percent(job.passRateWith)),
        h('dt', {}, 'Without the skill'),
        h('dd', {}, percent(job.passRateWithout)),
        h('dt', {}, 'Difference'),
        h('dd', {}, points(job.difference)),
        h('dt', {}, 'Cases'),
        h('dd', {}, `${job.casesCount}, ${job.repetitions} repetition${job.repetitions === 1 ? '' : 's'} each way`),
        h('dt', {}, 'Cost'),
        h('dd', {}, `${job.cost} credits, ${job.inputTokens + job.outputTokens} tokens`),
        h('dt', {}, 'Started'),
        h('dd', {}, when(job.createdAt)),
        job.completedAt ? [h('dt', {}, 'Ended'), h('dd', {}, when(job.completedAt))] : null,
      ),
      job.local ? localNote() : null,
      h('h2', {}, 'Cases'),
      caseSections(job),
    );
  };
  const load = async () => {
    const job = await api('/skills/{slug}/evals/{evalId}', { path: { slug, evalId } });
    draw(job);
    if (!settled(job.status)) setTimeout(() => void load().catch((error) => show(status, failure(error, 'The eval could not be read.'))), POLL_MS);
  };
  show(app, h('p', {}, h('a', { href: `/skills/${encodeURIComponent(slug)}` }, `Back to ${slug}`)), status, body);
  await load();
}
