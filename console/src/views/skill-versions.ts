import { api, post, type Answer } from '../api';
import { askInPlace, h, show, statusBadge, when } from '../dom';
import { evalPath, percent } from './evals';
import { failure, listActions } from './settings-more';

type Version = Answer<'/skills/{slug}/versions'>[number];
type Guard = NonNullable<Version['guard']>;

const POLL_MS = 2000;
/** Statuses of a version the guard holds back: not current; one being evaluated is not restorable (its eval decides it). */
const held = (g: Guard | null) => g?.status === 'evaluating' || g?.status === 'refused';

/** What the guard made of a version, in words: its status, its pass rate against the one it had to reach, its eval, and the service's note (why it was refused or overridden). */
function guardState(slug: string, g: Guard) {
  const said =
    g.status === 'evaluating'
      ? ` being evaluated against version ${g.previousVersion}`
      : g.status === 'overridden'
        ? ''
        : ` ${percent(g.passRate)} with the skill; version ${g.previousVersion} had ${percent(g.required)}`;
  return h(
    'p',
    {},
    'Guard: ',
    statusBadge(g.status),
    said,
    g.note ? h('span', { class: 'muted' }, ` · ${g.note}`) : null,
    ' · ',
    h('a', { href: evalPath(slug, g.evalId), 'aria-label': `Open its eval, version ${g.version}` }, 'Open its eval'),
  );
}

/** Where a version came from, in words: the skill shows its current version's. */
function origin(v: Version): string {
  const from = {
    catalog: 'from the marketplace',
    authored: 'written here',
    artifact: 'from a run’s file',
    registry: 'from the registry',
    archive: 'from an uploaded archive',
  }[v.source];
  const at = [v.repository, v.commitHash?.slice(0, 7)].filter(Boolean).join(' @ ');
  return at ? `${from} (${at})` : from;
}

/** What the status line says when the guard decided while the page watched. */
const decision = (g: Guard) =>
  g.status === 'accepted'
    ? `Version ${g.version} passed its eval and is current.`
    : g.status === 'refused'
      ? `Version ${g.version} was refused: ${percent(g.passRate)} with the skill; version ${g.previousVersion} had ${percent(g.required)}.`
      : `Version ${g.version} was made current by the owner.`;

/**
 * A skill's versions: each with what the version guard made of it, "Restore" for one not being
 * evaluated (with the guard on, one that did not pass is held back again), and for the owner "Make current anyway" on a held-back one, asked again in place. While
 * a version is being evaluated the list is read again every 2 s. `changed` is called when a
 * guard decided or a version became current (`current`: the editor shows it then); `message` is
 * the status line actions report in.
 */
export function skillVersions(slug: string, owner: boolean, message: HTMLElement, changed: (current: boolean) => Promise<void>) {
  const box = h('div');
  let timer: ReturnType<typeof setTimeout> | undefined;
  let seen: Version[] | undefined;

  /** Runs an owner's or writer's action, then reads the list again; a refusal goes to the status line. */
  const act = listActions(message, () => draw());

  const restore = (v: Version) =>
    act(async () => {
      const restored = await post('/skills/{slug}/versions/{versionNumber}/restore', { path: { slug, versionNumber: String(v.versionNumber) } });
      return restored.guard
        ? `Restored version ${restored.restoredFrom} as version ${restored.guard.version}, held back until its eval passes.`
        : `Restored version ${restored.restoredFrom} as a new version.`;
    }, 'The version could not be restored.');

  /** Making a held-back version current skips its eval: asked again in place, audited by the service. */
  const askPromote = (v: Version, into: HTMLElement) =>
    askInPlace(
      into,
      `Make version ${v.versionNumber} current without passing its eval? Runs that start from now on use it; the override is recorded in the audit log.`,
      `Yes, make version ${v.versionNumber} current`,
      'Keep it held back',
      () =>
        act(async () => {
          await post('/skills/{slug}/versions/{versionNumber}/promote', { path: { slug, versionNumber: String(v.versionNumber) } });
          return `Version ${v.versionNumber} is current, over the guard.`;
        }, 'The version could not be made current.'),
    );

  const item = (v: Version) => {
    const confirm = h('div');
    return h(
      'li',
      {},
      h('strong', {}, `Version ${v.versionNumber}`),
      v.active ? h('span', { class: 'badge' }, 'active') : null,
      ` ${v.name} · ${when(v.createdAt)}`,
      h('span', { class: 'muted' }, ` · ${origin(v)} · ${v.filesCount === 1 ? '1 file' : `${v.filesCount} files`}`),
      v.note ? h('span', { class: 'muted' }, ` · ${v.note}`) : null,
      v.active || v.guard?.status === 'evaluating'
        ? null
        : h('button', { type: 'button', 'aria-label': `Restore version ${v.versionNumber}`, onclick: () => restore(v) }, 'Restore'),
      v.guard ? guardState(slug, v.guard) : null,
      owner && held(v.guard)
        ? h(
            'button',
            { type: 'button', class: 'secondary', 'aria-label': `Make current anyway, version ${v.versionNumber}`, onclick: () => askPromote(v, confirm) },
            'Make current anyway',
          )
        : null,
      confirm,
    );
  };

  const evaluating = (versions: Version[]) => versions.filter((v) => v.guard?.status === 'evaluating').map((v) => v.versionNumber);
  const activeOf = (versions: Version[]) => versions.find((v) => v.active)?.versionNumber;

  /** Reads the versions and draws them; tells the page when the current version changed or an eval it waited for was decided. */
  async function draw() {
    clearTimeout(timer);
    const versions = await api('/skills/{slug}/versions', { path: { slug } });
    const before = seen;
    seen = versions;
    show(box, h('ol', { class: 'plain', 'aria-label': 'Versions' }, versions.map(item)));
    const waiting = evaluating(versions);
    if (waiting.length) timer = setTimeout(() => void draw().catch((error) => show(message, failure(error, 'The versions could not be read.'))), POLL_MS);
    if (!before) return;
    const current = activeOf(before) !== activeOf(versions);
    const decided = versions.filter((v) => v.guard && v.guard.status !== 'evaluating' && evaluating(before).includes(v.versionNumber));
    if (decided.length) show(message, decided.map((v) => decision(v.guard!)).join(' '));
    if (current || decided.length) await changed(current);
  }

  return { box, draw };
}
