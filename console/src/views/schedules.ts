import { api, ApiError, del, post, type Answer } from '../api';
import { alertBox, field, fieldErrors, h, show, statusBadge, when } from '../dom';
import { listActions } from './settings-more';

type Schedule = Answer<'/workflows/{slug}/schedules'>['schedules'][number];

const OVERLAPS: Record<Schedule['overlap'], string> = {
  skip: 'Skip the fire time',
  queue_one: 'Queue one run for when it ends',
  allow: 'Start another run',
};
const CATCH_UPS: Record<Schedule['catchUp'], string> = {
  skip: 'Skip them',
  run_once: 'Start one run for them all',
};

const options = <K extends string>(labels: Record<K, string>, id: string) =>
  h(
    'select',
    { id },
    Object.entries<string>(labels).map(([value, label]) => h('option', { value }, label)),
  );

/** What became of the last fire time, in words. */
function lastFire(fire: NonNullable<Schedule['lastFire']>) {
  const at = when(fire.fireTime);
  if (fire.outcome === 'started') return [`Last fired ${at}: `, h('a', { href: `/workflows/runs/${encodeURIComponent(fire.runId ?? '')}` }, 'its run')];
  if (fire.outcome === 'queued') return `Last fire time ${at} waits for the previous run to end.`;
  if (fire.outcome === 'skipped') return `Last fire time ${at} was skipped: a run it started had not finished.`;
  return `Fire times up to ${at} were missed while paused or down.`;
}

/**
 * A workflow's schedules (docs/workflows.md, Schedules): each with its next fire times, pause or
 * resume and delete; and a form that adds one, its input as JSON (the required properties filled
 * in, empty). A refusal is shown at the field the API names.
 */
export async function schedulesSection(slug: string, inputSchema: { required?: string[] } | undefined): Promise<HTMLElement> {
  const box = h('section', { 'aria-labelledby': 'schedules-h' });
  const message = h('div', { role: 'status' });
  const cron = h('input', { id: 'schedule-cron', required: true, placeholder: '0 9 * * 1-5', spellcheck: 'false' });
  const timezone = h('input', { id: 'schedule-timezone', required: true, value: Intl.DateTimeFormat().resolvedOptions().timeZone });
  const overlap = options(OVERLAPS, 'schedule-overlap');
  const catchUp = options(CATCH_UPS, 'schedule-catch-up');
  // JSON, not a generated form: the launch form above already labels its controls by property.
  const input = h('textarea', { id: 'schedule-input', rows: 4, spellcheck: 'false' });
  input.value = JSON.stringify(Object.fromEntries((inputSchema?.required ?? []).map((name) => [name, ''])));
  const { clear, refuse } = fieldErrors({ cron, timezone, input }, message);

  const act = listActions(message, () => draw());

  const item = (s: Schedule) =>
    h(
      'li',
      { class: 'card' },
      h('h3', {}, `${s.cron} (${s.timezone})`),
      ' ',
      statusBadge(s.state),
      s.stoppedReason ? h('p', { class: 'error' }, `Stopped: ${s.stoppedReason}`) : null,
      s.nextFireTimes.length
        ? [
            h('p', {}, 'Next fire times:'),
            h(
              'ul',
              { class: 'plain', 'aria-label': `Next fire times of ${s.cron}` },
              s.nextFireTimes.map((t) => h('li', {}, when(t))),
            ),
          ]
        : null,
      s.lastFire ? h('p', { class: 'muted' }, lastFire(s.lastFire)) : null,
      h('p', { class: 'muted' }, `If a run is still going: ${OVERLAPS[s.overlap].toLowerCase()}. Missed fire times: ${CATCH_UPS[s.catchUp].toLowerCase()}.`),
      s.state === 'active'
        ? h(
            'button',
            {
              type: 'button',
              onclick: () =>
                act(() => post('/workflows/{slug}/schedules/{scheduleId}/pause', { path: { slug, scheduleId: s.id } }), 'The schedule could not be paused.'),
            },
            `Pause ${s.cron}`,
          )
        : h(
            'button',
            {
              type: 'button',
              onclick: () =>
                act(() => post('/workflows/{slug}/schedules/{scheduleId}/resume', { path: { slug, scheduleId: s.id } }), 'The schedule could not be resumed.'),
            },
            `Resume ${s.cron}`,
          ),
      ' ',
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => act(() => del('/workflows/{slug}/schedules/{scheduleId}', { path: { slug, scheduleId: s.id } }), 'The schedule could not be deleted.'),
        },
        `Delete ${s.cron}`,
      ),
    );

  const list = h('div');
  async function draw() {
    const { schedules } = await api('/workflows/{slug}/schedules', { path: { slug } });
    show(list, schedules.length ? h('ul', { class: 'grid', 'aria-label': 'Schedules' }, schedules.map(item)) : h('p', { class: 'muted' }, 'No schedules yet.'));
  }

  const add = async (e: Event) => {
    e.preventDefault();
    clear();
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(input.value || '{}') as Record<string, unknown>;
    } catch {
      return refuse('input', 'The run input is not valid JSON.');
    }
    try {
      await post('/workflows/{slug}/schedules', {
        path: { slug },
        body: {
          cron: cron.value.trim(),
          timezone: timezone.value.trim(),
          input: value,
          overlap: overlap.value as Schedule['overlap'],
          catchUp: catchUp.value as Schedule['catchUp'],
        },
      });
      cron.value = '';
      await draw();
      show(message, 'Schedule added.');
    } catch (error) {
      const at = error instanceof ApiError && typeof error.details.field === 'string' ? error.details.field.split('.')[0]! : '';
      if (error instanceof ApiError) refuse(at, error.message);
      else show(message, alertBox('The schedule could not be added.'));
    }
  };

  await draw();
  show(
    box,
    h('h2', { id: 'schedules-h' }, 'Schedules'),
    list,
    h(
      'form',
      { 'aria-labelledby': 'add-schedule-h', onsubmit: add },
      h('h3', { id: 'add-schedule-h' }, 'Add a schedule'),
      field('Cron expression', cron, 'Five fields: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5 for 09:00 on weekdays.'),
      field('Time zone', timezone, 'An IANA name such as Europe/Paris, or UTC.'),
      field('If a run is still going', overlap),
      field('Fire times missed while paused', catchUp),
      field('Run input (JSON)', input, 'What every run it starts is given, as the launch form’s inputs.'),
      h('button', { type: 'submit' }, 'Add schedule'),
    ),
    message,
  );
  return box;
}
