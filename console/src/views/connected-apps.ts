import { api, post, type Answer } from '../api';
import { askInPlace, h, show, when } from '../dom';
import { listActions, section } from './settings-more';

type Grant = Answer<'/oauth-grants'>['data'][number];

/** The name an app gave itself, with its workspace: two sign-ins of one app are told apart. */
const nameOf = (g: Grant) => `${g.clientName} in ${g.workspace.name}`;

/**
 * Connected apps: the apps the person let in through the OAuth consent page, in any of their
 * workspaces (docs/auth.md), each with what it may do. Revoking asks again in place, then ends the
 * app's tokens at once.
 */
export async function connectedApps(box: HTMLElement) {
  const message = h('div', { role: 'status' });
  const list = h('div');
  const draw = async () => {
    const page = await api('/oauth-grants', { query: { limit: 100 } });
    show(
      list,
      page.data.length ? h('ul', { class: 'plain', 'aria-label': 'Connected apps' }, page.data.map(item)) : h('p', { class: 'muted' }, 'No app is connected.'),
    );
  };
  const act = listActions(message, draw);

  const askRevoke = (g: Grant, into: HTMLElement) =>
    askInPlace(into, `Revoke ${nameOf(g)}? It is signed out at once and must ask you again to connect.`, `Yes, revoke ${nameOf(g)}`, 'Keep it', () =>
      act(async () => {
        await post('/oauth-grants/{id}/revoke', { path: { id: g.id } });
        return `Revoked ${nameOf(g)}.`;
      }, 'The app could not be revoked.'),
    );

  const item = (g: Grant) => {
    const confirm = h('div');
    return h(
      'li',
      { class: 'card', 'aria-label': nameOf(g) },
      h('h3', {}, h('bdi', {}, g.clientName)),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'App id'),
        h('dd', {}, h('code', {}, g.clientId)),
        h('dt', {}, 'Workspace'),
        h('dd', {}, g.workspace.name),
        h('dt', {}, 'Allowed to'),
        h('dd', {}, g.scopes.join(', ')),
        h('dt', {}, 'Connected'),
        h('dd', {}, when(g.createdAt)),
        h('dt', {}, 'Last signed in or refreshed'),
        h('dd', {}, g.lastTokenAt ? when(g.lastTokenAt) : 'never'),
        h('dt', {}, 'Signed in until'),
        h('dd', {}, when(g.expiresAt), g.scopes.includes('offline_access') ? ', longer each time it refreshes' : ''),
      ),
      h('button', { type: 'button', class: 'secondary', 'aria-label': `Revoke ${nameOf(g)}`, onclick: () => askRevoke(g, confirm) }, 'Revoke'),
      confirm,
    );
  };

  await draw();
  show(
    box,
    section(
      'connected-apps',
      'Connected apps',
      h('p', { class: 'muted' }, 'Apps you allowed on the sign-in consent page, in any of your workspaces. Each name is what the app calls itself.'),
      list,
      message,
    ),
  );
}
