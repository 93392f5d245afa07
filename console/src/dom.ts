/** A tiny element builder: the console draws with the DOM API only (no innerHTML, so no markup injection). */
type Attrs = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;
export type Kid = Node | string | number | null | undefined | false | Kid[];

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...kids: Kid[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== undefined && value !== false) el.setAttribute(name, String(value));
  }
  append(el, kids);
  return el;
}

function append(el: Node, kids: Kid[]) {
  for (const kid of kids) {
    if (Array.isArray(kid)) append(el, kid);
    else if (kid instanceof Node) el.appendChild(kid);
    else if (kid !== null && kid !== undefined && kid !== false) el.appendChild(document.createTextNode(String(kid)));
  }
}

/** Replaces what `el` shows. */
export function show(el: Element, ...kids: Kid[]) {
  el.replaceChildren();
  append(el, kids);
}

/** A labelled field: the label's `for` names the control. */
export function field(label: string, control: HTMLElement, hint?: string) {
  const id = control.id || `f-${label.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  control.id = id;
  if (hint) control.setAttribute('aria-describedby', `${id}-hint`);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('p', { id: `${id}-hint`, class: 'muted' }, hint) : null);
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '');

/** A status in words and a badge, never by colour alone. */
export const statusBadge = (status: string) => h('span', { class: `badge status-${status}` }, status);

/** A message for the person, announced to screen readers. */
export const alertBox = (message: string) => h('p', { class: 'error', role: 'alert' }, message);

/**
 * A step that cannot be undone, asked again in place: `question` in `into`, the `yes` button
 * (marked danger, focused) running `onYes`, and `no` putting things back as they were.
 */
export function askInPlace(into: HTMLElement, question: string, yes: string, no: string, onYes: () => void) {
  const confirm = h('button', { type: 'button', class: 'danger', onclick: onYes }, yes);
  show(into, h('p', {}, question), confirm, ' ', h('button', { type: 'button', onclick: () => show(into) }, no));
  confirm.focus();
}

/**
 * Errors shown at their fields: `refuse(name, text)` marks the control the API named
 * (`details.field`) invalid with the text beside it, or shows the text in `message` when no
 * control has that name; `clear()` removes every mark and the message.
 */
export function fieldErrors(controls: Record<string, HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>, message: HTMLElement) {
  return {
    clear() {
      show(message);
      for (const control of Object.values(controls)) {
        control.removeAttribute('aria-invalid');
        control.removeAttribute('aria-errormessage');
        document.getElementById(`${control.id}-error`)?.remove();
      }
    },
    refuse(name: string, text: string) {
      const control = controls[name];
      if (!control) return show(message, alertBox(text));
      const note = h('p', { class: 'error', role: 'alert', id: `${control.id}-error` }, text);
      control.setAttribute('aria-invalid', 'true');
      control.setAttribute('aria-errormessage', note.id);
      control.insertAdjacentElement('afterend', note);
      control.focus();
    },
  };
}
