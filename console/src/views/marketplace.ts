import { api, ApiError, post } from '../api';
import { alertBox, field, h, show } from '../dom';

interface Item {
  slug: string;
  name: string;
  description: string;
  category: string;
}
interface Detail extends Item {
  author: string;
  version: string;
  license: string | null;
  contentChecksum: string;
  prompt: string;
}
interface Installed {
  slug: string;
  contentChecksum: string;
}

const installedSkills = () => api<Installed[]>('/skills');

/** The catalog: a search box, a category filter, and each skill marked when it is installed. */
export async function marketplace(app: HTMLElement) {
  const [categories, installed] = await Promise.all([api<{ id: string; name: string; count: number }[]>('/marketplace/skills/categories'), installedSkills()]);
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
    const query = new URLSearchParams({ limit: '50' });
    if (search.value.trim()) query.set('q', search.value.trim());
    if (category.value) query.set('category', category.value);
    const items = await api<Item[]>(`/marketplace/skills?${query}`);
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

/** One catalog skill: what it is, its files, and Install (or Update when the catalog has a newer version). */
export async function marketplaceSkill(app: HTMLElement, slug: string) {
  const [skill, bundle, installed] = await Promise.all([
    api<Detail>(`/marketplace/skills/${encodeURIComponent(slug)}`),
    api<{ files: { path: string; base64: string }[] }>(`/marketplace/skills/${encodeURIComponent(slug)}/bundle`),
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
      drawAction(await post<Installed>(`/skills/${encodeURIComponent(slug)}/install`));
      show(message, `${done} ${skill.name}.`);
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
