import { api, del, itemsOf, post, put } from '../api';
import { field, h, show, when } from '../dom';
import { installedEvals } from './evals';
import { failure, section } from './settings-more';

/** One installed skill: an editor (every save is a version), its evals with Run eval, its versions with Restore, and its secret bindings. */
export async function skill(app: HTMLElement, slug: string) {
  const versionsBox = h('div');
  const evalsBox = h('div');
  const bindingsBox = h('div');
  const name = h('input', { id: 'skill-name', required: true, maxlength: 100 });
  const description = h('textarea', { id: 'skill-description', rows: 2, required: true });
  const category = h('input', { id: 'skill-category', required: true });
  const prompt = h('textarea', { id: 'skill-prompt', rows: 14, required: true, spellcheck: 'false' });
  const note = h('input', { id: 'skill-note', maxlength: 500 });
  const saved = h('div', { role: 'status' });

  const load = async () => {
    const mine = itemsOf(await api('/skills')).find((s) => s.slug === slug);
    if (!mine) throw new Error('This skill is not installed.');
    document.querySelector('h1')!.textContent = mine.name;
    [name.value, description.value, category.value, prompt.value] = [mine.name, mine.description, mine.category, mine.prompt];
    const versions = await api('/skills/{slug}/versions', { path: { slug } });
    show(
      versionsBox,
      h(
        'ol',
        { class: 'plain', 'aria-label': 'Versions' },
        versions.map((v) =>
          h(
            'li',
            {},
            h('strong', {}, `Version ${v.versionNumber}`),
            v.active ? h('span', { class: 'badge' }, 'active') : null,
            ` ${v.name} · ${when(v.createdAt)}`,
            v.note ? h('span', { class: 'muted' }, ` · ${v.note}`) : null,
            v.active
              ? null
              : h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Restore version ${v.versionNumber}`,
                    onclick: async () => {
                      try {
                        const restored = await post('/skills/{slug}/versions/{versionNumber}/restore', {
                          path: { slug, versionNumber: String(v.versionNumber) },
                        });
                        await load();
                        show(saved, `Restored version ${restored.restoredFrom} as a new version.`);
                      } catch (error) {
                        show(saved, failure(error, 'The version could not be restored.'));
                      }
                    },
                  },
                  'Restore',
                ),
          ),
        ),
      ),
    );
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

  await Promise.all([load(), drawBindings(), drawEvals()]);
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
              await put('/skills/{slug}', { path: { slug }, body });
              note.value = '';
              await load();
              show(saved, 'Saved as a new version.');
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
    section('versions', 'Versions', versionsBox),
    section('bindings', 'Secrets', bindingsBox),
  );
}
