import { api, post, type Answer } from '../api';
import { field, h, show, when } from '../dom';
import { consents, permissionRequests } from './approvals';
import { connectedApps } from './connected-apps';
import { deleteAccount, deleteWorkspace } from './deletion';
import { limits } from './limits';
import { retention } from './retention';
import { skillGuard } from './skill-guard';
import { telemetry } from './telemetry';
import { webhooks } from './webhooks';
import { billing, byok, connectors, failure, members, secrets, section } from './settings-more';

type Key = Answer<'/api-keys'>['data'][number];
/** Scopes ticked for a new key unless the person changes them: what a key gets by default. */
const DEFAULT_SCOPES = ['profile:read', 'agent:list'];

const PARTS = [
  ['API keys', apiKeys],
  ['Agents asking to connect', consents],
  ['Agent permission requests', permissionRequests],
  ['Connected apps', connectedApps],
  ['Members and invitations', members],
  ['Retention', retention],
  ['Spend limits', limits],
  ['Skill version guard', skillGuard],
  ['Webhooks', webhooks],
  ['Telemetry', telemetry],
  ['Secrets', secrets],
  ['Your own model key', byok],
  ['Connectors', connectors],
  ['Billing', billing],
  ['Delete workspace', deleteWorkspace],
  ['Delete account', deleteAccount],
] as const;

/** A section's anchor, from its name: links elsewhere (an MCP client sent to connect a connector) name it, e.g. `/settings#connectors`. */
const anchorOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '-');

/**
 * Settings: API keys (created with chosen scopes, shown once, revoked), agents' pending
 * consents and permission requests, the apps let in through OAuth consent (revoked), members and invitations, retention, spend limits, the skill version guard, webhooks and their deliveries, the telemetry destination, secrets, the model key, connectors,
 * billing, and deleting the workspace or the account.
 */
export async function settings(app: HTMLElement) {
  const boxes = PARTS.map(() => h('div'));
  show(
    app,
    h(
      'nav',
      { 'aria-label': 'Settings sections' },
      h(
        'ul',
        { class: 'inline-list' },
        PARTS.map(([name]) => h('li', {}, h('a', { href: `#${anchorOf(name)}` }, name))),
      ),
    ),
    boxes.map((b, i) => ((b.id = anchorOf(PARTS[i]![0])), b)),
  );
  // The sections are drawn by this script, after the browser looked for the link's anchor.
  const linked = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  linked?.scrollIntoView();
  await Promise.all(PARTS.map(([, draw], i) => draw(boxes[i]!).catch((error) => show(boxes[i]!, failure(error, 'This section could not be loaded.')))));
}

async function apiKeys(box: HTMLElement) {
  const [{ scopes_supported: scopes }, page] = await Promise.all([
    fetch('/.well-known/oauth-protected-resource').then((r) => r.json() as Promise<{ scopes_supported: string[] }>),
    api('/api-keys', { query: { limit: 100 } }),
  ]);
  const name = h('input', { id: 'key-name', required: true, maxlength: 100 });
  const boxes = scopes.map((scope, i) =>
    h(
      'li',
      {},
      h('input', { type: 'checkbox', id: `scope-${i}`, value: scope, checked: DEFAULT_SCOPES.includes(scope) }),
      ' ',
      h('label', { for: `scope-${i}` }, scope),
    ),
  );
  const created = h('div', { role: 'status' });
  const list = h('ul', { class: 'plain', 'aria-label': 'API keys' });
  const drawKey = (key: Key) =>
    h(
      'li',
      { class: 'row' },
      h('strong', {}, key.name),
      ' ',
      h('code', {}, key.keyPreview),
      ' ',
      h('span', { class: 'badge' }, key.status),
      ' ',
      h('span', { class: 'muted' }, `${key.scopes.join(', ')} · created ${when(key.createdAt)}`),
      key.status === 'active'
        ? h(
            'button',
            {
              type: 'button',
              'aria-label': `Revoke ${key.name}`,
              onclick: async (e: Event) => {
                try {
                  const revoked = await post('/api-keys/{id}/revoke', { path: { id: key.id } });
                  (e.target as HTMLElement).closest('li')!.replaceWith(drawKey(revoked));
                } catch (error) {
                  show(created, failure(error, 'The key could not be revoked.'));
                }
              },
            },
            'Revoke',
          )
        : null,
    );
  show(list, page.data.map(drawKey));
  const form = h(
    'form',
    {
      'aria-labelledby': 'create-key-h',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const chosen = boxes
          .map((li) => li.querySelector('input')!)
          .filter((b) => b.checked)
          .map((b) => b.value);
        try {
          const key = await post('/api-keys', { body: { name: name.value, scopes: chosen } });
          list.prepend(drawKey(key));
          show(
            created,
            h(
              'div',
              { class: 'card' },
              h('p', {}, `Your new key "${key.name}". Copy it now: it is shown only once.`),
              h('code', { class: 'secret', 'aria-label': 'New API key' }, key.key),
            ),
          );
          name.value = '';
        } catch (error) {
          show(created, failure(error, 'The key could not be created.'));
        }
      },
    },
    h('h3', { id: 'create-key-h' }, 'New key'),
    field('Key name', name),
    h('fieldset', {}, h('legend', {}, 'Scopes'), h('ul', { class: 'plain scopes' }, boxes)),
    h('button', { type: 'submit' }, 'Create key'),
  );
  show(box, section('keys', 'API keys', form, created, list));
}
