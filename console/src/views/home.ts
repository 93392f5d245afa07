import { api, itemsOf } from '../api';
import { h, show, statusBadge, when } from '../dom';
import { openControlChannel } from '../live';
import { runLink } from './runs';

/** Home: the workspace, balance and tier, the runs happening now (live, over the control plane) and the recent ones. */
export async function home(app: HTMLElement) {
  const [balance, tier, current, workspaces, recentPage] = await Promise.all([
    api('/billing/balance'),
    api('/billing/subscription/tier'),
    api('/workspaces/current'),
    api('/workspaces', { query: { limit: 100 } }),
    api('/executions', { query: { limit: 10 } }),
  ]);
  const recent = itemsOf(recentPage);
  const live = h('ul', { class: 'plain', 'aria-label': 'Runs happening now' });
  const liveEmpty = h('p', { class: 'muted' }, 'Nothing is running.');
  const recentList = h('ul', { class: 'plain' });
  const addLive = (id: string, label: string) => {
    if (live.querySelector(`[data-id="${id}"]`)) return;
    live.append(h('li', { 'data-id': id }, runLink(id, label), ' ', statusBadge('working')));
    liveEmpty.hidden = true;
  };
  for (const run of recent) {
    if (run.status === 'working') addLive(run.executionId, run.skillName);
    recentList.append(
      h('li', {}, runLink(run.executionId, run.skillName), ' ', statusBadge(run.status), ' ', h('span', { class: 'muted' }, when(run.startedAt))),
    );
  }
  liveEmpty.hidden = live.childElementCount > 0;

  const switcher = h(
    'select',
    {
      id: 'workspace',
      onchange: (e: Event) => {
        localStorage.setItem('workspace', (e.target as HTMLSelectElement).value);
        location.reload();
      },
    },
    workspaces.data.map((w) => h('option', { value: w.id, selected: w.id === current.id }, w.name)),
  );

  show(
    app,
    h(
      'div',
      { class: 'cards' },
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'ws-h' },
        h('h2', { id: 'ws-h' }, 'Workspace'),
        h('label', { for: 'workspace', class: 'sr-only' }, 'Workspace'),
        switcher,
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'bal-h' },
        h('h2', { id: 'bal-h' }, 'Balance'),
        h('p', { class: 'big' }, `${balance.balance} credits`),
        h('p', {}, 'Tier: ', h('strong', {}, tier.tier)),
      ),
    ),
    h('section', { 'aria-labelledby': 'live-h' }, h('h2', { id: 'live-h' }, 'Happening now'), liveEmpty, live),
    h(
      'section',
      { 'aria-labelledby': 'recent-h' },
      h('h2', { id: 'recent-h' }, 'Recent runs'),
      recent.length ? recentList : h('p', { class: 'muted' }, 'No runs yet.'),
    ),
  );

  openControlChannel((event) => {
    if (event.type === 'execution-started') addLive(event.executionId, event.executionId);
    if (event.type === 'execution-completed' || event.type === 'execution-failed') {
      live.querySelector(`[data-id="${event.executionId}"]`)?.remove();
      liveEmpty.hidden = live.childElementCount > 0;
    }
  });
}
