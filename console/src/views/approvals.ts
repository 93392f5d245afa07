import { api, post } from '../api';
import { h, show } from '../dom';
import { failure, section } from './settings-more';

const sensitiveBadge = (sensitive: boolean) => (sensitive ? h('span', { class: 'badge' }, 'sensitive') : null);

/**
 * A list of what agents wait for, each item with Approve and Deny; a decision removes the item
 * and says in the section's status line what was decided.
 */
function decisions<T>(label: string, empty: string, items: T[], draw: (item: T, decide: (send: () => Promise<string>) => void) => Node[]) {
  const message = h('div', { role: 'status' });
  const list = h(
    'ul',
    { class: 'plain', 'aria-label': label },
    items.map((item) => {
      const li: HTMLElement = h('li', { class: 'card' });
      const decide = async (send: () => Promise<string>) => {
        try {
          show(message, await send());
          li.remove();
        } catch (error) {
          show(message, failure(error, 'That could not be answered.'));
        }
      };
      show(li, draw(item, decide));
      return li;
    }),
  );
  return [items.length ? list : h('p', { class: 'muted' }, empty), message];
}

/** Agents asking to connect (their key's scope activation): the person may untick scopes to narrow what is granted. */
export async function consents(box: HTMLElement) {
  const page = await api('/agents/consents', { query: { status: 'pending', limit: 100 } });
  show(
    box,
    section(
      'consents',
      'Agents asking to connect',
      ...decisions('Pending agent consents', 'No agent is waiting to connect.', page.data, (c, decide) => {
        const boxes = c.requested_scopes.map(({ scope }, i) =>
          h('input', { type: 'checkbox', id: `consent-${c.consent_id}-${i}`, value: scope, checked: true }),
        );
        const who = `${c.agent_display_name} (key ${c.key.name})`;
        return [
          h('p', {}, h('strong', {}, c.agent_display_name), ` asks to connect with the key ${c.key.name}.`),
          h('blockquote', {}, c.reason),
          h(
            'fieldset',
            {},
            h('legend', {}, 'Scopes to grant'),
            h(
              'ul',
              { class: 'plain' },
              c.requested_scopes.map(({ scope, sensitive }, i) =>
                h('li', {}, boxes[i]!, ' ', h('label', { for: boxes[i]!.id }, scope), sensitiveBadge(sensitive)),
              ),
            ),
          ),
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Approve ${who}`,
              onclick: () =>
                decide(async () => {
                  const scopes = boxes.filter((b) => b.checked).map((b) => b.value);
                  const done = await post('/agents/consents/{consentId}/approve', { path: { consentId: c.consent_id }, body: { scopes } });
                  return `Connected ${c.agent_display_name}: its key now holds ${done.scopes.join(', ')}.`;
                }),
            },
            'Approve',
          ),
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Deny ${who}`,
              onclick: () =>
                decide(async () => {
                  await post('/agents/consents/{consentId}/deny', { path: { consentId: c.consent_id } });
                  return `Denied ${c.agent_display_name}.`;
                }),
            },
            'Deny',
          ),
        ];
      }),
    ),
  );
}

/** Connected agents asking for one more scope. */
export async function permissionRequests(box: HTMLElement) {
  const page = await api('/agents/permission-requests', { query: { status: 'pending', limit: 100 } });
  show(
    box,
    section(
      'requests',
      'Agent permission requests',
      ...decisions('Pending permission requests', 'No pending requests.', page.data, (r, decide) => {
        const answer = (decision: 'approve' | 'deny') =>
          decide(async () => {
            const done = await post(`/agents/permission-requests/{requestId}/${decision}`, { path: { requestId: r.request_id } });
            return `${done.status === 'granted' ? 'Granted' : 'Denied'} "${r.scope}" to ${r.key.name}.`;
          });
        return [
          h('p', {}, h('strong', {}, r.key.name), ' asks for ', h('code', {}, r.scope), sensitiveBadge(r.sensitive)),
          h('blockquote', {}, r.reason),
          h('button', { type: 'button', 'aria-label': `Approve ${r.scope} for ${r.key.name}`, onclick: () => answer('approve') }, 'Approve'),
          h('button', { type: 'button', 'aria-label': `Deny ${r.scope} for ${r.key.name}`, onclick: () => answer('deny') }, 'Deny'),
        ];
      }),
    ),
  );
}
