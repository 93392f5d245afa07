import { api, ApiError, put } from '../api';
import { field, fieldErrors, h, show } from '../dom';
import { RETENTION_DEFAULTS, type RetentionKind } from '../../../workers/services/retention-defaults';
import { failure, section } from './settings-more';

const LABELS: Record<RetentionKind, string> = {
  executions: 'Executions (days)',
  traces: 'Traces (days)',
  workflowRuns: 'Workflow runs (days)',
  activity: 'Activity (days)',
  audit: 'Audit log (days)',
};
const KINDS = Object.keys(LABELS) as RetentionKind[];

/**
 * Retention: how many days the workspace keeps each kind of data. The owner edits the
 * windows and saves them at once (a refusal is shown at the field the API names); others see them read-only.
 */
export async function retention(box: HTMLElement) {
  const { id, role } = await api('/workspaces/current');
  const windows = await api('/workspaces/{id}/retention', { path: { id } });
  const owner = role === 'owner';
  const controls = Object.fromEntries(
    KINDS.map((kind) => [
      kind,
      h('input', { id: `retention-${kind}`, type: 'number', min: 1, step: 1, required: true, readonly: !owner, value: windows[kind] }),
    ]),
  ) as Record<RetentionKind, HTMLInputElement>;
  const message = h('div', { role: 'status' });
  const fields = KINDS.map((kind) => field(LABELS[kind], controls[kind], `Default ${RETENTION_DEFAULTS[kind]} days.`));

  const { clear, refuse } = fieldErrors(controls, message);
  const save = async (e: Event) => {
    e.preventDefault();
    clear();
    try {
      const saved = await put('/workspaces/{id}/retention', {
        path: { id },
        body: Object.fromEntries(KINDS.map((kind) => [kind, controls[kind].valueAsNumber])),
      });
      for (const kind of KINDS) controls[kind].value = String(saved[kind]);
      show(message, 'Saved. Data older than its window is deleted within the hour.');
    } catch (error) {
      if (error instanceof ApiError && typeof error.details.field === 'string') refuse(error.details.field, error.message);
      else show(message, failure(error, 'Retention could not be saved.'));
    }
  };

  show(
    box,
    section(
      'retention',
      'Retention',
      h(
        'p',
        { class: 'muted' },
        owner
          ? 'How many days this workspace keeps each kind of data.'
          : 'How many days this workspace keeps each kind of data. Only the owner can change them.',
      ),
      owner
        ? h(
            'form',
            { 'aria-label': 'Retention', onsubmit: save },
            h('div', { class: 'number-fields' }, fields),
            h('button', { type: 'submit' }, 'Save'),
            message,
          )
        : h('div', { class: 'number-fields' }, fields),
    ),
  );
}
