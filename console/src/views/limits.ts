import { api, ApiError, put } from '../api';
import { field, fieldErrors, h, show, when } from '../dom';
import { failure, section } from './settings-more';

const KINDS = ['monthly', 'daily'] as const;
const LABELS = { monthly: 'Monthly limit (Ds)', daily: 'Daily limit (Ds)' } as const;

/**
 * Spend limits: what the workspace's runs may be charged in a month and in a day, with what they
 * were charged so far. The owner sets or clears them (an empty box is no limit); others see them.
 */
export async function limits(box: HTMLElement) {
  const { id, role } = await api('/workspaces/current');
  const current = await api('/workspaces/{id}/limits', { path: { id } });
  const owner = role === 'owner';
  const controls = Object.fromEntries(
    KINDS.map((kind) => [
      kind,
      h('input', { id: `limit-${kind}`, type: 'number', min: 0.01, step: 0.01, readonly: !owner, value: current[kind] ?? '', placeholder: 'No limit' }),
    ]),
  ) as Record<(typeof KINDS)[number], HTMLInputElement>;
  const usage = h('p', { class: 'muted' });
  const showUsage = (u: typeof current.usage) =>
    show(
      usage,
      `Charged this month: ${u.month.used} Ds (starts again ${when(u.month.resetsAt)}). Today: ${u.day.used} Ds (starts again ${when(u.day.resetsAt)}).`,
    );
  showUsage(current.usage);
  const message = h('div', { role: 'status' });
  const { clear, refuse } = fieldErrors(controls, message);
  const fields = KINDS.map((kind) => field(LABELS[kind], controls[kind], 'Leave empty for no limit.'));

  const save = async (e: Event) => {
    e.preventDefault();
    clear();
    try {
      const saved = await put('/workspaces/{id}/limits', {
        path: { id },
        body: Object.fromEntries(KINDS.map((kind) => [kind, controls[kind].value === '' ? null : controls[kind].valueAsNumber])),
      });
      for (const kind of KINDS) controls[kind].value = saved[kind] === null ? '' : String(saved[kind]);
      showUsage(saved.usage);
      show(message, 'Saved. Runs that would start past a limit are refused until it resets.');
    } catch (error) {
      if (error instanceof ApiError && typeof error.details.field === 'string') refuse(error.details.field, error.message);
      else show(message, failure(error, 'The limits could not be saved.'));
    }
  };

  show(
    box,
    section(
      'limits',
      'Spend limits',
      h(
        'p',
        { class: 'muted' },
        owner
          ? 'The most this workspace’s runs may be charged, by anyone in it.'
          : 'The most this workspace’s runs may be charged, by anyone in it. Only the owner can change them.',
      ),
      usage,
      owner
        ? h(
            'form',
            { 'aria-label': 'Spend limits', onsubmit: save },
            h('div', { class: 'number-fields' }, fields),
            h('button', { type: 'submit' }, 'Save'),
            message,
          )
        : h('div', { class: 'number-fields' }, fields),
    ),
  );
}
