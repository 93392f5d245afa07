import { api, ApiError, api as call } from '../api';
import { alertBox, field, h, show, when } from '../dom';

const empty = (text: string) => h('p', { class: 'muted' }, text);

/** Skills: what is installed, each with Run and its marketplace page. */
export async function skills(app: HTMLElement) {
  const installed = await api<{ slug: string; name: string; description: string; versionNumber: number }[]>('/skills');
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
              h('h2', {}, s.name),
              h('p', {}, s.description),
              h('p', { class: 'muted' }, `version ${s.versionNumber}`),
              h('a', { class: 'button', href: `/skills/${encodeURIComponent(s.slug)}/run`, 'aria-label': `Run ${s.name}` }, 'Run'),
            ),
          ),
        )
      : h('p', {}, 'No skills installed yet. ', h('a', { href: '/marketplace' }, 'Browse the marketplace'), '.'),
  );
}

/** Traces: the list, newest first. */
export async function traces(app: HTMLElement) {
  const page = await api<{ items: { id: string; title?: string; status: string; startedAt?: string; createdAt?: string }[] }>('/traces?limit=50');
  show(
    app,
    page.items.length
      ? h(
          'ul',
          { 'aria-label': 'Traces' },
          page.items.map((t) => h('li', {}, t.title ?? t.id, ' ', h('span', { class: 'badge' }, t.status), ' ', when(t.startedAt ?? t.createdAt))),
        )
      : empty('No traces yet.'),
  );
}

/** Memory: the workspace's working-memory document, edited whole. */
export async function memory(app: HTMLElement) {
  const doc = await api<{ content: string }>('/memory');
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
            await call('/memory', { method: 'PUT', body: { content: box.value } });
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
