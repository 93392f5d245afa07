import { api, ApiError, del, post, put, type Answer } from '../api';
import { alertBox, field, h, show, when } from '../dom';

/** A settings section: its heading, then what it holds. */
export const section = (id: string, title: string, ...kids: (Node | null)[]) =>
  h('section', { 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), ...kids);

export const failure = (error: unknown, fallback: string) => alertBox(error instanceof ApiError ? error.message : fallback);

/**
 * What a list's buttons run: `act(work, failed)` clears the status line, does the work, draws
 * the list again and, when the work answers a text, says it there; a refusal shows there instead.
 */
export const listActions =
  (message: HTMLElement, redraw: () => Promise<void>) =>
  async (work: () => Promise<unknown>, failed: string): Promise<void> => {
    show(message);
    try {
      const done = await work();
      await redraw();
      if (typeof done === 'string') show(message, done);
    } catch (error) {
      show(message, failure(error, failed));
    }
  };

/** A form that sends once, says how it went in its status line, and draws the section again. */
function actionForm(label: string, button: string, fields: HTMLElement[], send: () => Promise<string>, after: () => Promise<void>) {
  const message = h('div', { role: 'status' });
  return h(
    'form',
    {
      'aria-label': label,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const done = await send();
          await after();
          show(message, done);
        } catch (error) {
          show(message, failure(error, `${label} failed.`));
        }
      },
    },
    fields,
    h('button', { type: 'submit' }, button),
    message,
  );
}

const ROLES = ['member', 'admin'] as const;

/** Members and invitations of the current workspace; inviting shows the acceptance token once. */
export async function members(box: HTMLElement) {
  const { id, role: myRole } = await api('/workspaces/current');
  const list = h('div');
  const draw = async () => {
    const [people, invitations] = await Promise.all([
      api('/workspaces/{id}/members', { path: { id }, query: { limit: 100 } }),
      api('/workspaces/{id}/invitations', { path: { id }, query: { limit: 100 } }).catch(() => ({ data: [] })),
    ]);
    show(
      list,
      h(
        'ul',
        { class: 'plain', 'aria-label': 'Members' },
        people.data.map((m) => h('li', {}, h('strong', {}, m.name), ` ${m.email} `, h('span', { class: 'badge' }, m.role))),
      ),
      invitations.data.length
        ? h(
            'ul',
            { class: 'plain', 'aria-label': 'Invitations' },
            invitations.data.map((i) =>
              h('li', {}, `${i.email} `, h('span', { class: 'badge' }, i.role), h('span', { class: 'badge' }, i.status), ` until ${when(i.expiresAt)}`),
            ),
          )
        : null,
    );
  };
  const email = h('input', { id: 'invite-email', type: 'email', required: true, autocomplete: 'off' });
  const role = h(
    'select',
    { id: 'invite-role' },
    ROLES.map((r) => h('option', { value: r }, r)),
  );
  await draw();
  show(
    box,
    section(
      'members',
      'Members and invitations',
      list,
      // Only owners and admins may invite; a member is told so instead of offered a form the service refuses.
      myRole === 'member'
        ? h('p', {}, 'Owners and admins invite people to this workspace.')
        : actionForm(
            'Invite someone',
            'Invite',
            [field('Email to invite', email), field('Role', role)],
            async () => {
              const created = await post('/workspaces/{id}/invitations', {
                path: { id },
                body: { email: email.value, role: ROLES.find((r) => r === role.value) ?? 'member' },
              });
              email.value = '';
              return `Invited. Send them this acceptance token (shown once): ${created.token}`;
            },
            draw,
          ),
    ),
  );
}

/** Secrets: names only (values are write-only), add, delete. */
export async function secrets(box: HTMLElement) {
  const list = h('ul', { class: 'plain', 'aria-label': 'Secrets' });
  const draw = async () => {
    const page = await api('/secrets', { query: { limit: 100 } });
    show(
      list,
      page.data.length
        ? page.data.map((s) =>
            h(
              'li',
              {},
              h('code', {}, s.name),
              h('span', { class: 'muted' }, ` updated ${when(s.updatedAt)} `),
              h(
                'button',
                {
                  type: 'button',
                  'aria-label': `Delete ${s.name}`,
                  onclick: async () => {
                    await del('/secrets/{id}', { path: { id: s.id } });
                    await draw();
                  },
                },
                'Delete',
              ),
            ),
          )
        : h('li', { class: 'muted' }, 'No secrets yet.'),
    );
  };
  const name = h('input', { id: 'secret-name', required: true, autocomplete: 'off', pattern: '[A-Z_][A-Z0-9_]*' });
  const value = h('input', { id: 'secret-value', type: 'password', required: true, autocomplete: 'off' });
  await draw();
  show(
    box,
    section(
      'secrets',
      'Secrets',
      list,
      actionForm(
        'Add a secret',
        'Add secret',
        [field('Secret name', name, 'An environment variable name, e.g. GITHUB_TOKEN.'), field('Secret value', value, 'Write-only: it is never shown again.')],
        async () => {
          await post('/secrets', { body: { name: name.value, value: value.value } });
          const added = name.value;
          name.value = value.value = '';
          return `Saved ${added}.`;
        },
        draw,
      ),
    ),
  );
}

/** Bring your own model key: its masked preview, replace, remove. */
export async function byok(box: HTMLElement) {
  const state = h('p');
  const remove = h('button', { type: 'button' }, 'Remove model key');
  const draw = async () => {
    const s = await api('/byok');
    remove.hidden = !s.hasKey;
    show(
      state,
      s.hasKey
        ? ['Your ', h('strong', {}, s.provider ?? ''), ' key ', h('code', {}, s.keyPreview ?? ''), ' is used for your runs.']
        : 'Runs use the service’s model and your credits.',
    );
  };
  remove.addEventListener('click', async () => {
    await del('/byok');
    await draw();
  });
  const key = h('input', { id: 'byok-key', type: 'password', required: true, autocomplete: 'off' });
  await draw();
  show(
    box,
    section(
      'byok',
      'Your own model key',
      state,
      actionForm(
        'Save a model key',
        'Save model key',
        [field('Model API key', key, 'sk-ant-… (Anthropic) or sk-… (OpenAI-compatible); stored encrypted.')],
        async () => {
          await put('/byok', { body: { key: key.value } });
          key.value = '';
          return 'Saved.';
        },
        draw,
      ),
      remove,
    ),
  );
}

/** Connectors: each with its state; connect with a token, disconnect. */
export async function connectors(box: HTMLElement) {
  const list = h('div');
  const draw = async () => {
    const { connectors: items } = await api('/connectors');
    show(
      list,
      items.map((c) => {
        const token = h('input', { id: `connector-${c.type}`, type: 'password', required: true, autocomplete: 'off' });
        return h(
          'div',
          { class: 'card' },
          h('h3', {}, c.name, ' ', h('span', { class: 'badge' }, c.status.replace('_', ' '))),
          h('p', {}, c.description),
          c.status === 'connected'
            ? h(
                'button',
                {
                  type: 'button',
                  onclick: async () => {
                    await post('/connectors/{type}/disconnect', { path: { type: c.type } });
                    await draw();
                  },
                },
                `Disconnect ${c.name}`,
              )
            : c.configured
              ? actionForm(
                  `Connect ${c.name}`,
                  `Connect ${c.name}`,
                  [field(`${c.name} token`, token, c.connect.help)],
                  async () => {
                    await post('/connectors/{type}/connect', { path: { type: c.type }, body: { token: token.value } });
                    return `Connected ${c.name}.`;
                  },
                  draw,
                )
              : h('p', { class: 'muted' }, 'Not available on this deployment.'),
        );
      }),
    );
  };
  await draw();
  show(box, section('connectors', 'Connectors', list));
}

/** Billing: the tier, packs bought through Stripe Checkout, the recent transactions. */
export async function billing(box: HTMLElement) {
  const [tier, packs, transactions, profile] = await Promise.all([
    api('/billing/subscription/tier'),
    api('/billing/packs'),
    api('/billing/transactions'),
    api('/profile'),
  ]);
  const message = h('div', { role: 'status' });
  const buy = async (pack: Answer<'/billing/packs'>['packs'][number]) => {
    try {
      const back = `${location.origin}/settings#billing-h`;
      const { checkoutUrl } = await post('/billing/purchase', {
        body: { packId: pack.id, email: profile.email, successUrl: back, cancelUrl: back },
      });
      location.assign(checkoutUrl);
    } catch (error) {
      show(message, failure(error, 'Checkout could not be opened.'));
    }
  };
  show(
    box,
    section(
      'billing',
      'Billing',
      h(
        'p',
        {},
        'Tier: ',
        h('strong', {}, tier.tier),
        tier.subscriptionExpiresAt ? ` until ${when(tier.subscriptionExpiresAt)}` : '',
        tier.isTestMode ? ' (Stripe test mode)' : '',
      ),
      h(
        'ul',
        { class: 'plain', 'aria-label': 'Credit packs' },
        packs.packs.map((p) =>
          h(
            'li',
            {},
            `${p.name}: ${p.dollarinos} credits for $${(p.priceCents / 100).toFixed(2)} `,
            h('button', { type: 'button', 'aria-label': `Buy ${p.name}`, onclick: () => buy(p) }, 'Buy'),
          ),
        ),
      ),
      message,
      h('h3', {}, 'Transactions'),
      transactions.transactions.length
        ? h(
            'table',
            {},
            h('caption', { class: 'sr-only' }, 'Transactions'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['When', 'What', 'Amount'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h(
              'tbody',
              {},
              transactions.transactions.map((t) =>
                h('tr', {}, h('td', {}, when(t.createdAt)), h('td', {}, t.description || t.type), h('td', {}, String(t.amount))),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No transactions yet.'),
    ),
  );
}
