import { api, ApiError, put, type Answer } from '../api';
import { field, fieldErrors, h, show, when } from '../dom';
import { failure, section } from './settings-more';

type Destination = Answer<'/workspaces/{id}/telemetry'>;

/**
 * Telemetry: the OTLP/HTTP endpoint the workspace's runs are exported to as OpenTelemetry traces
 * (docs/telemetry.md), with what was exported and dropped and the last error. Header values are
 * write-only: the rows typed replace the headers set before, and no row keeps them. The owner sets
 * or removes it; others see it.
 */
export async function telemetry(box: HTMLElement) {
  const { id, role } = await api('/workspaces/current');
  const owner = role === 'owner';
  const current = await api('/workspaces/{id}/telemetry', { path: { id } });
  const endpoint = h('input', {
    id: 'telemetry-endpoint',
    type: 'url',
    maxlength: 2048,
    readonly: !owner,
    placeholder: 'https://collector.example.com/v1/traces',
  });
  const state = h('div');
  const message = h('div', { role: 'status' });
  const rows = h('ul', { class: 'plain', 'aria-label': 'Headers to send' });
  let count = 0;
  const addRow = () => {
    const n = ++count;
    const name = h('input', { id: `telemetry-header-name-${n}`, maxlength: 100, autocomplete: 'off' });
    const value = h('input', { id: `telemetry-header-value-${n}`, type: 'password', maxlength: 4096, autocomplete: 'off' });
    rows.append(h('li', { class: 'number-fields' }, field(`Header ${n} name`, name), field(`Header ${n} value`, value)));
  };
  const drawState = (d: Destination) => {
    endpoint.value = d.endpoint ?? '';
    show(
      state,
      h('p', {}, d.endpoint ? `Exported: ${d.exported} traces. Dropped: ${d.dropped}.` : 'No destination: runs are not exported.'),
      d.headerNames.length ? h('p', { class: 'muted' }, `Headers sent (values hidden): ${d.headerNames.join(', ')}`) : null,
      d.lastError ? h('p', {}, `Last error: ${d.lastError} (${when(d.lastErrorAt)})`) : null,
    );
  };
  // Typed values are sent once: after a save the rows start empty again, so a later save of the
  // endpoint alone keeps the headers instead of sending the same values again.
  const emptyRows = () => {
    rows.replaceChildren();
    count = 0;
    addRow();
  };
  drawState(current);
  emptyRows();
  const { clear, refuse } = fieldErrors({ endpoint }, message);
  const send = async (body: Parameters<typeof put<'/workspaces/{id}/telemetry'>>[1]['body'], done: string) => {
    clear();
    try {
      drawState(await put('/workspaces/{id}/telemetry', { path: { id }, body }));
      emptyRows();
      show(message, done);
    } catch (error) {
      if (error instanceof ApiError && typeof error.details.field === 'string') refuse(error.details.field, error.message);
      else show(message, failure(error, 'The destination could not be saved.'));
    }
  };
  const save = (e: Event) => {
    e.preventDefault();
    const typed = [...rows.querySelectorAll('li')].map((li) => [...li.querySelectorAll('input')].map((input) => input.value.trim())).filter(([name]) => name);
    void send(
      { endpoint: endpoint.value.trim() || null, ...(typed.length ? { headers: Object.fromEntries(typed) } : {}) },
      'Saved. Runs that end from now on are exported there.',
    );
  };
  show(
    box,
    section(
      'telemetry',
      'Telemetry',
      h(
        'p',
        { class: 'muted' },
        'Export this workspace’s runs as OpenTelemetry traces to an OTLP/HTTP endpoint.' + (owner ? '' : ' Only the owner can change it.'),
      ),
      state,
      owner
        ? h(
            'form',
            { 'aria-label': 'Telemetry destination', onsubmit: save },
            field('OTLP traces endpoint', endpoint),
            h(
              'fieldset',
              {},
              h('legend', {}, 'Headers'),
              h('p', { class: 'muted' }, 'Values are write-only. Headers typed here replace the ones set before; none typed keeps them.'),
              rows,
            ),
            h('button', { type: 'button', onclick: addRow }, 'Add header'),
            ' ',
            h('button', { type: 'submit' }, 'Save'),
            ' ',
            h('button', { type: 'button', class: 'danger', onclick: () => send({ endpoint: null }, 'Removed. Runs are no longer exported.') }, 'Remove'),
            message,
          )
        : field('OTLP traces endpoint', endpoint),
    ),
  );
}
