import { api, put } from '../api';
import { h, show } from '../dom';
import { failure, section } from './settings-more';

const ABOUT =
  'With the guard on, a new version of a skill written here whose current version carries eval cases is held back until its eval scores at least as well as the version it would replace. The evals are charged to the writer.';

/**
 * Skill version guard: whether a new version of an authored skill must pass its eval before it
 * becomes current. The owner turns it on or off and saves; others see it read-only.
 */
export async function skillGuard(box: HTMLElement) {
  const { id, role } = await api('/workspaces/current');
  const current = await api('/workspaces/{id}/skill-guard', { path: { id } });
  const owner = role === 'owner';
  // A checkbox cannot be read-only: a member's is disabled, and the sentence says why.
  const enabled = h('input', { type: 'checkbox', id: 'skill-guard-enabled', checked: current.enabled, disabled: !owner });
  const control = h('div', { class: 'field check' }, enabled, ' ', h('label', { for: enabled.id }, 'Hold back new skill versions until their eval passes'));
  const message = h('div', { role: 'status' });

  const save = async (e: Event) => {
    e.preventDefault();
    show(message);
    try {
      const saved = await put('/workspaces/{id}/skill-guard', { path: { id }, body: { enabled: enabled.checked } });
      enabled.checked = saved.enabled;
      show(
        message,
        saved.enabled
          ? 'Saved. New versions are held back until their eval passes.'
          : 'Saved. New versions become current at once; versions already held back keep to their evals.',
      );
    } catch (error) {
      show(message, failure(error, 'The guard could not be saved.'));
    }
  };

  show(
    box,
    section(
      'skill-guard',
      'Skill version guard',
      h('p', { class: 'muted' }, owner ? ABOUT : `${ABOUT} Only the owner can change it.`),
      owner ? h('form', { 'aria-label': 'Skill version guard', onsubmit: save }, control, h('button', { type: 'submit' }, 'Save'), message) : control,
    ),
  );
}
