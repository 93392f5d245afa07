import { api, ApiError, itemsOf, put } from '../api';
import { alertBox, field, h, show } from '../dom';
import { newSkillForm, skillCategories } from './new-skill';

/** Skills: what is installed, each with Run and its page; and "New skill" to write one. */
export async function skills(app: HTMLElement) {
  const [installed, categories] = await Promise.all([api('/skills').then(itemsOf), skillCategories()]);
  show(
    app,
    installed.length
      ? h(
          'ul',
          { class: 'grid', 'aria-label': 'Installed skills' },
          installed.map((s) =>
            h(
              'li',
              { class: 'card' },
              h('h2', {}, h('a', { href: `/skills/${encodeURIComponent(s.slug)}` }, s.name)),
              h('p', {}, s.description),
              h('p', { class: 'muted' }, `version ${s.versionNumber}`),
              h('a', { class: 'button', href: `/skills/${encodeURIComponent(s.slug)}/run`, 'aria-label': `Run ${s.name}` }, 'Run'),
            ),
          ),
        )
      : h('p', {}, 'No skills installed yet. ', h('a', { href: '/marketplace' }, 'Browse the marketplace'), ' or write one below.'),
    newSkillForm(new Set(installed.map((s) => s.slug)), categories),
  );
}

/** Memory: the workspace's working-memory document, edited whole. */
export async function memory(app: HTMLElement) {
  const doc = await api('/memory');
  const box = h('textarea', { id: 'memory', rows: 16 });
  box.value = doc.content;
  const message = h('div', { role: 'status' });
  show(
    app,
    h(
      'form',
      {
        onsubmit: async (e: Event) => {
          e.preventDefault();
          try {
            await put('/memory', { body: { content: box.value } });
            show(message, 'Saved.');
          } catch (error) {
            show(message, alertBox(error instanceof ApiError ? error.message : 'Memory could not be saved.'));
          }
        },
      },
      field('Memory document', box),
      h('button', { type: 'submit' }, 'Save'),
    ),
    message,
  );
}
