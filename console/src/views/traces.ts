import { api, type Answer } from '../api';
import { field, h, show, statusBadge, when } from '../dom';

type Turn = Answer<'/traces/{id}/events'>['items'][number];

const KINDS = ['execution', 'chat'] as const;

/** Traces: the list, filtered by kind and status. */
export async function traces(app: HTMLElement) {
  const kind = h(
    'select',
    { id: 'trace-kind' },
    ['', ...KINDS].map((k) => h('option', { value: k }, k || 'Any')),
  );
  const status = h('input', { id: 'trace-status' });
  const list = h('div');
  const refresh = async () => {
    const page = await api('/traces', { query: { limit: 50, kind: KINDS.find((k) => k === kind.value), status: status.value.trim() } });
    show(
      list,
      page.items.length
        ? h(
            'ul',
            { class: 'plain', 'aria-label': 'Traces' },
            page.items.map((t) =>
              h(
                'li',
                {},
                h('a', { href: `/traces/${encodeURIComponent(t.id)}` }, t.title),
                ' ',
                statusBadge(t.status),
                h('span', { class: 'muted' }, ` ${t.kind} · ${t.totalCost} credits · ${when(t.lastActivityAt)}`),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No traces match.'),
    );
  };
  show(
    app,
    h(
      'form',
      {
        class: 'filters',
        'aria-label': 'Filter traces',
        onsubmit: (e: Event) => {
          e.preventDefault();
          void refresh();
        },
      },
      field('Kind', kind),
      field('Trace status', status),
      h('button', { type: 'submit' }, 'Filter'),
    ),
    list,
  );
  await refresh();
}

/** What a turn says, in one line. */
function turnText(turn: Turn): string {
  const p = turn.payload;
  if (typeof p.text === 'string') return p.text;
  if (Array.isArray(p.content)) return (p.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  if (typeof p.name === 'string') return p.name;
  return JSON.stringify(p);
}

/** A trace: its turns on a timeline, each with its time, tokens and cost. */
export async function trace(app: HTMLElement, id: string) {
  const [t, turns] = await Promise.all([api('/traces/{id}', { path: { id } }), api('/traces/{id}/events', { path: { id }, query: { limit: 200 } })]);
  document.querySelector('h1')!.textContent = t.title;
  show(
    app,
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Status'),
      h('dd', {}, statusBadge(t.status)),
      h('dt', {}, 'Cost'),
      h('dd', {}, `${t.totalCost} credits`),
      h('dt', {}, 'Started'),
      h('dd', {}, when(t.startedAt)),
      t.target.kind === 'execution' && t.target.executionId
        ? [h('dt', {}, 'Run'), h('dd', {}, h('a', { href: `/runs/${encodeURIComponent(t.target.executionId)}` }, t.target.executionId))]
        : null,
    ),
    h('h2', { id: 'turns-h' }, 'Turns'),
    h(
      'ol',
      { class: 'timeline', 'aria-labelledby': 'turns-h' },
      turns.items.map((turn) =>
        h(
          'li',
          {},
          h('span', { class: 'muted' }, `${new Date(turn.at).toLocaleTimeString()} `),
          h('strong', {}, turn.type),
          turn.tokens ? h('span', { class: 'muted' }, ` · ${turn.tokens.input} in, ${turn.tokens.output} out`) : null,
          turn.cost !== null ? h('span', { class: 'muted' }, ` · ${turn.cost} credits`) : null,
          h('p', { class: 'turn' }, turnText(turn)),
        ),
      ),
    ),
  );
}
