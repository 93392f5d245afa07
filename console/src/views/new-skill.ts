import { api, ApiError, put, type Answer } from '../api';
import { alertBox, field, h, show } from '../dom';

type Category = Answer<'/marketplace/skills/categories'>[number];

/**
 * "New skill": authoring from nothing (`PUT /skills/:slug` with a slug no installed skill has;
 * editing an installed one is its own page). A refusal is shown at the field the API names.
 */
export function newSkillForm(installed: Set<string>, categories: Category[]) {
  const controls = {
    slug: h('input', { id: 'new-slug', required: true, maxlength: 64, autocomplete: 'off' }),
    name: h('input', { id: 'new-name', required: true, maxlength: 100 }),
    description: h('textarea', { id: 'new-description', rows: 2, required: true, maxlength: 1024 }),
    category: h(
      'select',
      { id: 'new-category', required: true },
      categories.map((c) => h('option', { value: c.id }, c.name)),
    ),
    prompt: h('textarea', { id: 'new-prompt', rows: 10, required: true, spellcheck: 'false' }),
  };
  const message = h('div');
  const clear = () => {
    show(message);
    for (const control of Object.values(controls)) control.removeAttribute('aria-invalid');
  };
  const refuse = (name: string, text: string) => {
    const control = controls[name as keyof typeof controls];
    show(message, alertBox(text));
    if (!control) return;
    control.setAttribute('aria-invalid', 'true');
    control.focus();
  };
  const button = h('button', { type: 'submit' }, 'Create skill');
  return h(
    'form',
    {
      'aria-labelledby': 'new-skill-h',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        clear();
        const slug = controls.slug.value.trim();
        if (installed.has(slug)) return refuse('slug', `A skill "${slug}" is installed already: edit it on its page.`);
        button.disabled = true;
        try {
          await put('/skills/{slug}', {
            path: { slug },
            body: {
              name: controls.name.value,
              description: controls.description.value,
              category: controls.category.value,
              prompt: controls.prompt.value,
              note: 'first version',
            },
          });
          location.assign(`/skills/${encodeURIComponent(slug)}`);
        } catch (error) {
          button.disabled = false;
          if (!(error instanceof ApiError)) return refuse('', 'The skill could not be created. Try again.');
          refuse(
            typeof error.details.field === 'string' ? error.details.field : '',
            `${error.message}${error.details.field ? ` (${error.details.field})` : ''}`,
          );
        }
      },
    },
    h('h2', { id: 'new-skill-h' }, 'New skill'),
    field('Slug', controls.slug, 'Lower-case letters, digits and single hyphens; the skill’s address, e.g. release-notes.'),
    field('Name', controls.name),
    field('Description', controls.description, 'What it does, in a sentence: people and models choose skills by it.'),
    field('Category', controls.category),
    field('Instructions', controls.prompt, 'What the model is told to do with the input.'),
    message,
    button,
  );
}

export const skillCategories = () => api('/marketplace/skills/categories');
