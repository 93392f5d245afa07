import { api, ApiError, itemsOf, post } from '../api';
import { alertBox, field, h, show, statusBadge, when } from '../dom';

export const runLink = (id: string, label: string) => h('a', { href: `/runs/${encodeURIComponent(id)}` }, label);

/** Runs: the workspace's history, filtered by source, interface and status. */
export async function runs(app: HTMLElement) {
  const source = h('input', { id: 'source', placeholder: 'api, mcp, workflow' });
  const iface = h('input', { id: 'interface' });
  const status = h(
    'select',
    { id: 'status' },
    ['', 'working', 'idle', 'completed', 'failed'].map((s) => h('option', { value: s }, s || 'Any')),
  );
  const table = h('div', { class: 'table-wrap' });
  const refresh = async () => {
    const page = await api('/executions', { query: { limit: 50, channels: source.value.trim(), interfaces: iface.value.trim() } });
    const items = itemsOf(page).filter((r) => !status.value || r.status === status.value);
    show(
      table,
      items.length
        ? h(
            'table',
            {},
            h('caption', { class: 'sr-only' }, 'Runs'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Skill', 'Status', 'Source', 'Interface', 'Started', 'Cost'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h(
              'tbody',
              {},
              items.map((r) =>
                h(
                  'tr',
                  {},
                  h('td', {}, runLink(r.executionId, r.skillName)),
                  h('td', {}, statusBadge(r.status)),
                  h('td', {}, r.source),
                  h('td', {}, r.interface),
                  h('td', {}, when(r.startedAt)),
                  h('td', {}, String(r.cost)),
                ),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No runs match.'),
    );
  };
  const form = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Filter runs',
      onsubmit: (e: Event) => {
        e.preventDefault();
        void refresh();
      },
    },
    field('Source', source),
    field('Interface', iface),
    field('Status', status),
    h('button', { type: 'submit' }, 'Filter'),
  );
  show(app, form, table);
  await refresh();
}

/** Run a skill: an Input box and a Run button; the run opens in its own view. */
export async function runSkill(app: HTMLElement, slug: string) {
  const skill = itemsOf(await api('/skills')).find((s) => s.slug === slug);
  if (!skill) {
    show(app, alertBox('This skill is not installed.'), h('a', { href: `/marketplace/${encodeURIComponent(slug)}` }, 'Find it in the marketplace'));
    return;
  }
  const input = h('textarea', { id: 'input', rows: 6, required: true });
  const message = h('div');
  const button = h('button', { type: 'submit' }, 'Run');
  show(
    app,
    h('p', {}, h('strong', {}, skill.name), ': ', skill.description),
    h(
      'form',
      {
        onsubmit: async (e: Event) => {
          e.preventDefault();
          button.disabled = true;
          try {
            const started = await post('/skills/{slug}/run', { path: { slug }, body: { input: input.value, interface: 'console' } });
            location.assign(`/runs/${encodeURIComponent(started.executionId)}`);
          } catch (error) {
            button.disabled = false;
            show(message, alertBox(error instanceof ApiError ? error.message : 'The run could not start.'));
          }
        },
      },
      field('Input', input),
      message,
      button,
    ),
  );
  input.focus();
}
