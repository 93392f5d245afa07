import { api, ApiError, del, patch, post, type Answer } from '../api';
import { field, fieldErrors, h, show, statusBadge, when } from '../dom';
import { failure, listActions, section } from './settings-more';

type Endpoint = Answer<'/webhooks'>['data'][number];
type Delivery = Answer<'/webhooks/{id}/deliveries'>['data'][number];
type EventType = Endpoint['events'][number];

/** Every event type, in words (a Record, so a type the API adds does not compile until it has a label). */
const EVENT_LABELS: Record<EventType, string> = {
  'execution.completed': 'A run completed',
  'execution.failed': 'A run failed',
  'execution.limit_reached': 'A run stopped at a limit',
  'workflow_run.succeeded': 'A workflow run succeeded',
  'workflow_run.failed': 'A workflow run failed',
  'workflow_run.suspended': 'A workflow run waits for input',
  'credits.limit_reached': 'A spend limit refused a run',
  'credits.low': 'A balance ran low',
};
const EVENTS = Object.keys(EVENT_LABELS) as EventType[];

/** A secret the API shows once, in a labelled code box. */
const secretBox = (text: string, secret: string) =>
  h('div', { class: 'card' }, h('p', {}, text), h('code', { class: 'secret', 'aria-label': 'Signing secret' }, secret));

/**
 * Webhooks: the workspace's endpoints (docs/webhooks.md), for its owners and admins. Creating one
 * or rotating its secret shows the secret once; each endpoint's deliveries open under it, each with
 * its attempts and "Redeliver". Members are refused these routes, so they get a sentence instead.
 */
export async function webhooks(box: HTMLElement) {
  const { role } = await api('/workspaces/current');
  if (role === 'member') {
    return show(box, section('webhooks', 'Webhooks', h('p', { class: 'muted' }, 'Only owners and admins of this workspace can see and manage its webhooks.')));
  }
  const message = h('div', { role: 'status' });
  const list = h('ul', { class: 'plain', 'aria-label': 'Webhook endpoints' });
  const drawList = async () => {
    const page = await api('/webhooks', { query: { limit: 100 } });
    show(list, page.data.length ? page.data.map(drawEndpoint) : h('li', { class: 'muted' }, 'No endpoints yet.'));
  };
  const act = listActions(message, () => drawList());

  const drawEndpoint = (endpoint: Endpoint) => {
    const name = endpoint.description || endpoint.url;
    const deliveries = h('div');
    const disclosure = h(
      'details',
      {
        ontoggle: (e: Event) => {
          if ((e.target as HTMLDetailsElement).open) void drawDeliveries(endpoint, deliveries);
        },
      },
      h('summary', {}, 'Deliveries'),
      deliveries,
    );
    return h(
      'li',
      { class: 'card', 'aria-label': name },
      h('p', {}, h('code', {}, endpoint.url), ' ', statusBadge(endpoint.enabled ? 'enabled' : 'disabled')),
      endpoint.description ? h('p', {}, endpoint.description) : null,
      !endpoint.enabled && endpoint.disabledReason ? h('p', { class: 'muted' }, `Disabled: ${endpoint.disabledReason}`) : null,
      h('p', { class: 'muted' }, `Events: ${endpoint.events.map((t) => EVENT_LABELS[t]).join(', ')}`),
      h(
        'div',
        { class: 'inline-list' },
        h(
          'button',
          {
            type: 'button',
            'aria-label': `${endpoint.enabled ? 'Disable' : 'Enable'} ${name}`,
            onclick: () =>
              act(() => patch('/webhooks/{id}', { path: { id: endpoint.id }, body: { enabled: !endpoint.enabled } }), 'The endpoint could not be changed.'),
          },
          endpoint.enabled ? 'Disable' : 'Enable',
        ),
        ' ',
        h(
          'button',
          {
            type: 'button',
            'aria-label': `Rotate secret of ${name}`,
            onclick: () =>
              act(async () => {
                const rotated = await post('/webhooks/{id}/rotate-secret', { path: { id: endpoint.id } });
                show(
                  message,
                  secretBox(`The new signing secret of ${name}. Copy it now: it is shown only once. The old one keeps signing for 24 hours.`, rotated.secret),
                );
              }, 'The secret could not be rotated.'),
          },
          'Rotate secret',
        ),
        ' ',
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete ${name}`,
            onclick: () =>
              act(async () => {
                await del('/webhooks/{id}', { path: { id: endpoint.id } });
                return `Deleted ${name}.`;
              }, 'The endpoint could not be deleted.'),
          },
          'Delete',
        ),
      ),
      disclosure,
    );
  };

  /** The deliveries last drawn. */
  let drawn: Delivery[] = [];
  const drawDeliveries = async (endpoint: Endpoint, into: HTMLElement) => {
    try {
      const page = await api('/webhooks/{id}/deliveries', { path: { id: endpoint.id }, query: { limit: 50 } });
      drawn = page.data;
      show(
        into,
        page.data.length
          ? h(
              'ul',
              { class: 'plain', 'aria-label': 'Deliveries' },
              page.data.map((d) => drawDelivery(endpoint, d, into)),
            )
          : h('p', { class: 'muted' }, 'Nothing delivered yet.'),
      );
    } catch (error) {
      show(into, failure(error, 'The deliveries could not be loaded.'));
    }
  };

  const drawDelivery = (endpoint: Endpoint, delivery: Delivery, into: HTMLElement) =>
    h(
      'li',
      { class: 'row' },
      h('strong', {}, delivery.eventType),
      ' ',
      statusBadge(delivery.status),
      ' ',
      h('span', { class: 'muted' }, when(delivery.createdAt)),
      h(
        'table',
        {},
        h('caption', {}, `Attempts of ${delivery.id}`),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Attempt', 'Code', 'Latency', 'Error', 'Time'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          delivery.attempts.map((a) =>
            h(
              'tr',
              {},
              h('td', {}, a.attempt),
              h('td', {}, a.statusCode ?? 'no answer'),
              h('td', {}, `${a.latencyMs} ms`),
              h('td', {}, a.error ?? ''),
              h('td', {}, when(a.at)),
            ),
          ),
        ),
      ),
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Redeliver ${delivery.id}`,
          onclick: async () => {
            try {
              await post('/webhooks/{id}/deliveries/{deliveryId}/redeliver', { path: { id: endpoint.id, deliveryId: delivery.id } });
              // The attempt is made from the delivery queue: the list is read again until it was made (30 s at most).
              for (let i = 0; i < 30; i++) {
                await drawDeliveries(endpoint, into);
                if (drawn.find((d) => d.id === delivery.id)?.status !== 'pending') break;
                await new Promise((resolve) => setTimeout(resolve, 1000));
              }
            } catch (error) {
              show(into, failure(error, 'The delivery could not be sent again.'));
            }
          },
        },
        'Redeliver',
      ),
    );

  const url = h('input', { id: 'webhook-url', type: 'url', required: true, maxlength: 2048, placeholder: 'https://example.com/hooks' });
  const description = h('input', { id: 'webhook-description', maxlength: 500 });
  const boxes = EVENTS.map((type) => h('input', { type: 'checkbox', id: `webhook-event-${type.replace(/[._]/g, '-')}`, value: type }));
  const created = h('div', { role: 'status' });
  const { clear, refuse } = fieldErrors({ url, events: boxes[0]!, description }, created);
  const create = async (e: Event) => {
    e.preventDefault();
    clear();
    try {
      const endpoint = await post('/webhooks', {
        body: { url: url.value, events: boxes.filter((b) => b.checked).map((b) => b.value as EventType), description: description.value || undefined },
      });
      show(created, secretBox(`The signing secret of ${endpoint.url}. Copy it now: it is shown only once.`, endpoint.secret));
      url.value = '';
      description.value = '';
      for (const b of boxes) b.checked = false;
      await drawList();
    } catch (error) {
      if (error instanceof ApiError && typeof error.details.field === 'string') refuse(error.details.field, error.message);
      else show(created, failure(error, 'The endpoint could not be added.'));
    }
  };
  await drawList();
  show(
    box,
    section(
      'webhooks',
      'Webhooks',
      h('p', { class: 'muted' }, 'Endpoints this workspace’s events are sent to, signed by the Standard Webhooks rules.'),
      list,
      message,
      h(
        'form',
        { 'aria-labelledby': 'new-webhook-h', onsubmit: create },
        h('h3', { id: 'new-webhook-h' }, 'New endpoint'),
        field('Endpoint URL', url),
        h(
          'fieldset',
          {},
          h('legend', {}, 'Events'),
          h(
            'ul',
            { class: 'plain scopes' },
            boxes.map((b, i) => h('li', {}, b, ' ', h('label', { for: b.id }, EVENT_LABELS[EVENTS[i]!], ' ', h('code', {}, EVENTS[i]!)))),
          ),
        ),
        field('Description (optional)', description),
        h('button', { type: 'submit' }, 'Add endpoint'),
        created,
      ),
    ),
  );
}
