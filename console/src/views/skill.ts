import { api, del, itemsOf, post, put, type Answer } from '../api';
import { field, h, show } from '../dom';
import { evalPath, installedEvals } from './evals';
import { failure, section } from './settings-more';
import { skillVersions } from './skill-versions';

type Held = NonNullable<Answer<'/skills/{slug}', 'put'>['guard']>;

/** What a save the version guard held back says: the version is being evaluated, and where to follow it. */
const heldBack = (slug: string, guard: Held) =>
  h(
    'p',
    {},
    `Saved as version ${guard.version}. It is being evaluated against version ${guard.previousVersion} and becomes current if it scores at least as well. `,
    h('a', { href: evalPath(slug, guard.evalId) }, `Follow the eval of version ${guard.version}`),
  );

/** One installed skill: an editor (every save is a version), its evals with Run eval, its versions (with what the version guard made of each, Restore, and the owner's override), and its secret bindings. */
export async function skill(app: HTMLElement, slug: string) {
  const evalsBox = h('div');
  const bindingsBox = h('div');
  const name = h('input', { id: 'skill-name', required: true, maxlength: 100 });
  const description = h('textarea', { id: 'skill-description', rows: 2, required: true });
  const category = h('input', { id: 'skill-category', required: true });
  const prompt = h('textarea', { id: 'skill-prompt', rows: 14, required: true, spellcheck: 'false' });
  const note = h('input', { id: 'skill-note', maxlength: 500 });
  const saved = h('div', { role: 'status' });

  const loadEditor = async () => {
    const mine = itemsOf(await api('/skills')).find((s) => s.slug === slug);
    if (!mine) throw new Error('This skill is not installed.');
    document.querySelector('h1')!.textContent = mine.name;
    [name.value, description.value, category.value, prompt.value] = [mine.name, mine.description, mine.category, mine.prompt];
  };

  const drawBindings = async () => {
    const [bindings, secrets] = await Promise.all([api('/skills/{slug}/secrets', { path: { slug } }), api('/secrets', { query: { limit: 100 } })]);
    const secret = h(
      'select',
      { id: 'binding-secret', required: true },
      secrets.data.map((s) => h('option', { value: s.id }, s.name)),
    );
    const envVar = h('input', { id: 'binding-env', required: true, pattern: '[A-Z_][A-Z0-9_]*' });
    const origins = h('input', { id: 'binding-origins', placeholder: 'https://api.example.com' });
    const message = h('div', { role: 'status' });
    show(
      bindingsBox,
      bindings.length
        ? h(
            'ul',
            { class: 'plain', 'aria-label': 'Secret bindings' },
            bindings.map((b) =>
              h(
                'li',
                {},
                h('code', {}, b.envVar),
                ` ← ${b.secretName} `,
                h('span', { class: 'muted' }, b.origins.length ? `sent to ${b.origins.join(', ')} ` : 'never sent '),
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Remove ${b.envVar}`,
                    onclick: async () => {
                      await del('/skills/{slug}/secrets/{id}', { path: { slug, id: String(b.id) } });
                      await drawBindings();
                    },
                  },
                  'Remove',
                ),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No secrets bound.'),
      secrets.data.length
        ? h(
            'form',
            {
              'aria-label': 'Bind a secret',
              onsubmit: async (e: Event) => {
                e.preventDefault();
                try {
                  await post('/skills/{slug}/secrets', {
                    path: { slug },
                    body: { secretId: secret.value, envVar: envVar.value, origins: origins.value.split(/[\s,]+/).filter(Boolean) },
                  });
                  await drawBindings();
                } catch (error) {
                  show(message, failure(error, 'The secret could not be bound.'));
                }
              },
            },
            field('Secret', secret),
            field('Environment variable', envVar),
            field(
              'Sites it may be sent to',
              origins,
              'Origins such as https://api.example.com, separated by spaces. A run sends the secret only in a request header to these; with none, never.',
            ),
            h('button', { type: 'submit' }, 'Bind secret'),
            message,
          )
        : h('p', { class: 'muted' }, 'Add secrets in ', h('a', { href: '/settings' }, 'Settings'), ' to bind them here.'),
    );
  };

  const drawEvals = async () => show(evalsBox, await installedEvals(slug, await api('/skills/{slug}', { path: { slug } })));
  const { role } = await api('/workspaces/current');
  // A refused version leaves the editor as its writer left it, to try again; a version that became current is shown.
  const versions = skillVersions(slug, role === 'owner', saved, async (current) => {
    await Promise.all([current ? loadEditor() : null, drawEvals()]);
  });

  await Promise.all([loadEditor(), versions.draw(), drawBindings(), drawEvals()]);
  show(
    app,
    h('p', {}, h('a', { class: 'button', href: `/skills/${encodeURIComponent(slug)}/run` }, 'Run')),
    section(
      'editor',
      'Edit',
      h(
        'form',
        {
          'aria-label': 'Edit the skill',
          onsubmit: async (e: Event) => {
            e.preventDefault();
            try {
              const body = {
                name: name.value,
                description: description.value,
                category: category.value,
                prompt: prompt.value,
                ...(note.value ? { note: note.value } : {}),
              };
              const written = await put('/skills/{slug}', { path: { slug }, body });
              note.value = '';
              // A version the guard holds back leaves the editor as written: the current version is still the one before.
              await versions.draw();
              show(saved, written.guard ? heldBack(slug, written.guard) : 'Saved as a new version.');
            } catch (error) {
              show(saved, failure(error, 'The skill could not be saved.'));
            }
          },
        },
        field('Name', name),
        field('Description', description),
        field('Category', category),
        field('Instructions', prompt),
        field('Version note', note, 'Optional: what changed.'),
        h('button', { type: 'submit' }, 'Save version'),
        saved,
      ),
    ),
    section('evals', 'Evals', evalsBox),
    section('versions', 'Versions', versions.box),
    section('bindings', 'Secrets', bindingsBox),
  );
}
