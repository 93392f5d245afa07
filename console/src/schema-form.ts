import { field, h } from './dom';

/** The part of JSON Schema the generated forms understand; anything else is edited as JSON. */
interface Schema {
  type?: string | string[];
  title?: string;
  description?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
}

export interface SchemaForm {
  /** The labelled controls, to put in a form. */
  element: HTMLElement;
  /** The value the controls hold; throws a FieldError for a control that cannot be read. */
  read: () => unknown;
  /** Shows an error at the control for `path` (dot-separated, relative to the value), or at the form. */
  showError: (path: string, message: string) => void;
  clearErrors: () => void;
}

export class FieldError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

const typeOf = (schema: Schema) => (Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type);

/**
 * A form generated from a JSON Schema: one labelled control per property of an object schema
 * (text, number, checkbox, a choice for `enum`, JSON for the rest), or one JSON box.
 * `prefix` keeps ids unique when a page has several forms.
 */
export function schemaForm(schema: Schema | undefined, prefix: string, jsonLabel: string): SchemaForm {
  const controls = new Map<string, { control: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement; read: () => unknown }>();
  const errors = h('div');
  const box = h('div', { class: 'schema-form' });
  const properties = typeOf(schema ?? {}) === 'object' || schema?.properties ? Object.entries(schema?.properties ?? {}) : null;

  const jsonControl = (id: string, path: string, optional: boolean) => {
    const area = h('textarea', { id, rows: 4, spellcheck: 'false' });
    return {
      control: area,
      read: () => {
        if (optional && !area.value.trim()) return undefined;
        try {
          return JSON.parse(area.value);
        } catch {
          throw new FieldError(path, 'This is not valid JSON.');
        }
      },
    };
  };

  if (properties === null) {
    const entry = jsonControl(`${prefix}-json`, '', false);
    controls.set('', entry);
    box.append(field(jsonLabel, entry.control));
  } else {
    for (const [name, prop] of properties) {
      const id = `${prefix}-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
      const required = schema?.required?.includes(name) ?? false;
      const label = prop.title ?? name;
      const type = typeOf(prop);
      let entry: { control: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement; read: () => unknown };
      if (prop.enum) {
        const select = h(
          'select',
          { id, required },
          required ? null : h('option', { value: '' }, '(none)'),
          prop.enum.map((v, i) => h('option', { value: String(i) }, String(v))),
        );
        entry = { control: select, read: () => (select.value === '' ? undefined : prop.enum![Number(select.value)]) };
      } else if (type === 'boolean') {
        const box = h('input', { id, type: 'checkbox' });
        entry = { control: box, read: () => box.checked };
      } else if (type === 'number' || type === 'integer') {
        const input = h('input', { id, type: 'number', required, step: type === 'integer' ? '1' : 'any' });
        entry = { control: input, read: () => (input.value === '' ? undefined : Number(input.value)) };
      } else if (type === 'string' || type === undefined) {
        const area = h('textarea', { id, rows: 3, required });
        entry = { control: area, read: () => (area.value === '' && !required ? undefined : area.value) };
      } else {
        entry = jsonControl(id, name, !required);
      }
      controls.set(name, entry);
      box.append(
        type === 'boolean'
          ? h(
              'div',
              { class: 'field check' },
              entry.control,
              ' ',
              h('label', { for: id }, label),
              prop.description ? h('p', { class: 'muted' }, prop.description) : null,
            )
          : field(label, entry.control, prop.description),
      );
    }
  }
  box.append(errors);

  const clearErrors = () => {
    errors.replaceChildren();
    for (const { control } of controls.values()) {
      control.removeAttribute('aria-invalid');
      control.removeAttribute('aria-errormessage');
      document.getElementById(`${control.id}-error`)?.remove();
    }
  };
  const showError = (path: string, message: string) => {
    const entry = controls.get(path.split('.')[0] ?? '') ?? (controls.size === 1 ? controls.get('') : undefined);
    if (!entry) {
      errors.append(h('p', { class: 'error', role: 'alert' }, message));
      return;
    }
    const note = h('p', { class: 'error', role: 'alert', id: `${entry.control.id}-error` }, message);
    entry.control.setAttribute('aria-invalid', 'true');
    entry.control.setAttribute('aria-errormessage', note.id);
    entry.control.insertAdjacentElement('afterend', note);
    entry.control.focus();
  };
  const read = () => {
    if (properties === null) return controls.get('')!.read();
    const value: Record<string, unknown> = {};
    for (const [name, entry] of controls) {
      const v = entry.read();
      if (v !== undefined) value[name] = v;
    }
    return value;
  };
  return { element: box, read, showError, clearErrors };
}
