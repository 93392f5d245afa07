import { api, ApiError, itemsOf, post, type Answer } from '../api';
import { alertBox, field, h, show } from '../dom';
import { shippedEvals } from './evals';

/** What the page reads of an installed skill, in the install answer and the installed list alike. */
type Installed = Pick<Answer<'/skills/{slug}/install', 'post'>, 'slug' | 'contentChecksum'>;

const installedSkills = async () => itemsOf(await api('/skills'));

/** The catalog: a search box, a category filter, and each skill marked when it is installed. */
export async function marketplace(app: HTMLElement) {
  const [categories, installed] = await Promise.all([api('/marketplace/skills/categories'), installedSkills()]);
  const installedSlugs = new Set(installed.map((s) => s.slug));
  const search = h('input', { type: 'search', id: 'search', autocomplete: 'off' });
  const category = h(
    'select',
    { id: 'category' },
    h('option', { value: '' }, 'All categories'),
    categories.map((c) => h('option', { value: c.id }, `${c.name} (${c.count})`)),
  );
  const count = h('p', { role: 'status', class: 'muted' });
  const list = h('ul', { class: 'grid', 'aria-label': 'Skills' });
  let pending = 0;
  const refresh = async () => {
    const mine = ++pending;
    const items = itemsOf(await api('/marketplace/skills', { query: { limit: 50, q: search.value.trim(), category: category.value } }));
    if (mine !== pending) return;
    count.textContent = `${items.length} skill${items.length === 1 ? '' : 's'}`;
    show(
      list,
      items.map((s) =>
        h(
          'li',
          { class: 'card' },
          h('h2', {}, h('a', { href: `/marketplace/${encodeURIComponent(s.slug)}` }, s.name)),
          h('p', {}, s.description),
          h('p', { class: 'muted' }, s.category, installedSlugs.has(s.slug) ? h('span', { class: 'badge' }, 'Installed') : null),
        ),
      ),
    );
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 200);
  });
  category.addEventListener('change', refresh);
  show(app, h('div', { role: 'search', class: 'filters' }, field('Search skills', search), field('Category', category)), count, list);
  await refresh();
}

/** One catalog skill: what it is, its shipped eval results, its files, and Install (or Update when the catalog has a newer version). */
export async function marketplaceSkill(app: HTMLElement, slug: string) {
  const [skill, bundle, installed] = await Promise.all([
    api('/marketplace/skills/{slug}', { path: { slug } }),
    api('/marketplace/skills/{slug}/bundle', { path: { slug } }),
    installedSkills(),
  ]);
  document.title = `${skill.name} · Workspace AI Skills`;
  document.querySelector('h1')!.textContent = skill.name;
  const action = h('div', { class: 'actions' });
  const message = h('div', { role: 'status' });
  const drawAction = (mine: Installed | undefined) => {
    const runLink = h('a', { class: 'button', href: `/skills/${encodeURIComponent(slug)}/run` }, 'Run');
    if (!mine) show(action, h('button', { type: 'button', onclick: () => install('Installed') }, 'Install'));
    else if (mine.contentChecksum !== skill.contentChecksum)
      show(action, h('span', { class: 'badge' }, 'Installed'), h('button', { type: 'button', onclick: () => install('Updated') }, 'Update'), runLink);
    else show(action, h('span', { class: 'badge' }, 'Installed'), runLink);
  };
  const install = async (done: string) => {
    show(message);
    try {
      const record = await post('/skills/{slug}/install', { path: { slug } });
      drawAction(record);
      show(
        message,
        record.guard ? `Version ${record.guard.version} of ${skill.name} is held back by the version guard until its eval passes.` : `${done} ${skill.name}.`,
      );
    } catch (error) {
      show(message, alertBox(error instanceof ApiError ? error.message : 'The skill could not be installed.'));
    }
  };
  drawAction(installed.find((s) => s.slug === slug));
  show(
    app,
    h('p', {}, skill.description),
    h('p', { class: 'muted' }, `${skill.category} · version ${skill.version} · by ${skill.author}${skill.license ? ` · ${skill.license}` : ''}`),
    action,
    message,
    h('section', { 'aria-labelledby': 'evals-h' }, h('h2', { id: 'evals-h' }, 'Evals'), shippedEvals(skill.evals, skill.contentChecksum)),
    h('h2', { id: 'files-h' }, 'Files'),
    h(
      'ul',
      { 'aria-labelledby': 'files-h' },
      bundle.files.map((f) => h('li', {}, h('code', {}, f.path))),
    ),
    h('h2', {}, 'Instructions'),
    h('pre', { tabindex: 0, 'aria-label': 'Instructions' }, skill.prompt),
  );
}
