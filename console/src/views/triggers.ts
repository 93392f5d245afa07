import { api, ApiError, del, post, type Answer, type Call } from '../api';
import { alertBox, askInPlace, field, fieldErrors, h, show, statusBadge, when } from '../dom';
import { failure, listActions } from './settings-more';

type Trigger = Answer<'/workflows/{slug}/triggers'>['triggers'][number];
type Delivery = Answer<'/workflows/{slug}/triggers/{triggerId}/deliveries'>['data'][number];
type Body = NonNullable<Call<'/workflows/{slug}/triggers', 'post'>['body']>;
type Source = NonNullable<Body['source']>;
type GithubEvent = NonNullable<Body['events']>[number];
/** What a definition's `metadata.triggers` declares for GitHub (docs/workflows.md, GitHub triggers). */
export interface GithubDeclaration {
  events: GithubEvent[];
  repository?: string;
}

const SOURCES: Record<Source, string> = {
  webhook: 'Any sender (webhook): its JSON body is the run input',
  github: 'GitHub: a repository webhook’s events',
};
const AUTHS: Record<Trigger['auth'], string> = {
  signature: 'Standard Webhooks signature (webhook-id, webhook-timestamp, webhook-signature headers)',
  bearer: 'The secret as a bearer token (Authorization: Bearer)',
  github_signature: 'GitHub’s signature (X-Hub-Signature-256)',
};

/** A GitHub event in words: `pull_request.opened` is "Pull request opened". */
const eventLabel = (event: GithubEvent) =>
  event === 'push' ? 'Pushes' : event === 'pull_request' ? 'Pull requests (every action)' : `Pull request ${event.split('.')[1]!.replaceAll('_', ' ')}`;

/** The GitHub declaration of a definition's metadata, if it has one (install checked its shape). */
export function declaredGithub(metadata: { triggers?: unknown[] } | undefined): GithubDeclaration | null {
  const entry = metadata?.triggers?.find((t) => typeof t === 'object' && t !== null && (t as { source?: unknown }).source === 'github');
  return entry ? (entry as GithubDeclaration) : null;
}

const nameOf = (t: Trigger) => t.name ?? `${t.source === 'github' ? 'GitHub' : 'Webhook'} trigger ${t.id.slice(-6)}`;

/** What to do with a new secret: GitHub's webhook settings, step by step, or how a sender proves itself. */
function howToUse(t: Trigger, rotated: boolean) {
  if (t.source === 'github' && rotated)
    return h(
      'p',
      {},
      `In GitHub, open ${t.repository ?? 'the repository'}: Settings → Webhooks, edit the webhook of the URL above, paste the new secret into Secret and Update webhook.`,
    );
  if (t.source === 'github') {
    const individual = [
      t.events?.some((e) => e === 'push') ? 'Pushes' : null,
      t.events?.some((e) => e.startsWith('pull_request')) ? 'Pull requests' : null,
    ].filter(Boolean);
    return [
      h('p', {}, `In GitHub, open ${t.repository ?? 'the repository'}: Settings → Webhooks → Add webhook, and fill in:`),
      h(
        'ol',
        { 'aria-label': 'GitHub webhook settings' },
        h('li', {}, 'Payload URL: the URL above.'),
        h('li', {}, 'Content type: ', h('code', {}, 'application/json'), '.'),
        h('li', {}, 'Secret: the whole secret above.'),
        h('li', {}, `Which events: “Let me select individual events”, then ${individual.join(' and ')}.`),
        h('li', {}, 'Active, then Add webhook. GitHub sends a ping, which this URL answers; its Recent Deliveries shows it.'),
      ),
    ];
  }
  return t.auth === 'bearer'
    ? h(
        'p',
        {},
        'POST the run input as a JSON body with ',
        h('code', {}, 'Authorization: Bearer <secret>'),
        '; an Idempotency-Key header makes a retry start nothing new.',
      )
    : h(
        'p',
        {},
        'POST the run input as a JSON body signed with the secret by the Standard Webhooks rules (any Standard Webhooks library signs it); a repeated webhook-id starts nothing new.',
      );
}

/** Deliveries the disclosure shows: the newest. */
const RECENT = 25;

/** What an outcome without a reason means. */
const NOTES: Partial<Record<Delivery['outcome'], string>> = {
  duplicate: 'Its delivery id came before: answered with the run it started then.',
};

/** A trigger's newest deliveries as a table: when, which, what became of each and the run it started. */
async function drawDeliveries(slug: string, t: Trigger, into: HTMLElement) {
  try {
    const page = await api('/workflows/{slug}/triggers/{triggerId}/deliveries', { path: { slug, triggerId: t.id }, query: { limit: RECENT } });
    if (page.data.length === 0) return show(into, h('p', { class: 'muted' }, 'Nothing delivered yet.'));
    show(
      into,
      h(
        'table',
        {},
        h('caption', {}, `Recent deliveries of ${nameOf(t)}`),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Time', 'Delivery', t.source === 'github' ? 'Event' : null, 'Outcome', 'Status', 'Run']
              .filter((c) => c !== null)
              .map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          page.data.map((d) =>
            h(
              'tr',
              {},
              h('td', {}, when(d.createdAt)),
              h('td', {}, d.deliveryId ? h('code', {}, d.deliveryId) : 'no id'),
              t.source === 'github' ? h('td', {}, d.event ? h('code', {}, d.event) : '') : null,
              h('td', {}, statusBadge(d.outcome), h('div', { class: 'muted' }, d.reason ?? NOTES[d.outcome] ?? '')),
              h('td', {}, d.status),
              h('td', {}, d.runId ? h('a', { href: `/workflows/runs/${encodeURIComponent(d.runId)}` }, 'Open run') : ''),
            ),
          ),
        ),
      ),
      page.has_more ? h('p', { class: 'muted' }, `The newest ${RECENT}; the API lists up to the last 100.`) : null,
    );
  } catch (error) {
    show(into, failure(error, 'The deliveries could not be loaded.'));
  }
}

/** The URL and secret of a trigger, shown once after it was created or its secret rotated. */
const reveal = (t: Trigger, secret: string, rotated: boolean) =>
  h(
    'div',
    { class: 'card', 'aria-labelledby': 'trigger-secret-h', role: 'group', tabindex: -1 },
    h('h3', { id: 'trigger-secret-h' }, rotated ? `New secret of ${nameOf(t)}` : `${nameOf(t)} is ready`),
    h('p', {}, h('strong', {}, 'Copy the secret now: it will not be shown again.'), rotated ? ' The old one no longer works.' : ''),
    h('p', {}, 'URL'),
    h('code', { class: 'secret', 'aria-label': 'Trigger URL' }, t.url),
    h('p', {}, 'Secret'),
    h('code', { class: 'secret', 'aria-label': 'Trigger secret' }, secret),
    howToUse(t, rotated),
  );

/**
 * A workflow's trigger URLs (docs/workflows.md, Triggers): each with its source, how a sender
 * proves itself, its URL and last delivery, "Rotate secret" and "Delete" (asked again first), and
 * its recent deliveries under a disclosure, read when it opens; and
 * a form that adds one, from any sender or from GitHub (the events the definition declares as
 * checkboxes). The URL and secret are shown once; a refusal is shown at the field the API names.
 */
export async function triggersSection(slug: string, github: GithubDeclaration | null): Promise<HTMLElement> {
  const box = h('section', { 'aria-labelledby': 'triggers-h' });
  const message = h('div', { role: 'status' });
  const revealed = h('div');
  const name = h('input', { id: 'trigger-name', maxlength: 100, placeholder: 'Issue tracker' });
  const source = h(
    'select',
    { id: 'trigger-source', onchange: () => drawSource() },
    Object.entries<string>(SOURCES).map(([value, label]) => h('option', { value }, label)),
  );
  const auth = h(
    'select',
    { id: 'trigger-auth' },
    (['signature', 'bearer'] as const).map((value) => h('option', { value }, AUTHS[value])),
  );
  const boxes = (github?.events ?? []).map((event) =>
    h('input', { type: 'checkbox', id: `trigger-event-${event.replace('.', '-')}`, value: event, checked: true }),
  );
  const repository = h('input', { id: 'trigger-repository', maxlength: 200, placeholder: 'owner/repo', spellcheck: 'false' });
  if (github?.repository) {
    repository.value = github.repository;
    repository.readOnly = true;
  }
  const { clear, refuse } = fieldErrors({ name, source, auth, repository, ...(boxes[0] ? { events: boxes[0] } : {}) }, message);

  const webhookPart = h('div', {}, field('How the sender proves itself', auth));
  const githubPart = h(
    'div',
    { hidden: true },
    github
      ? [
          h(
            'fieldset',
            {},
            h('legend', {}, 'Events that start a run'),
            h(
              'ul',
              { class: 'plain' },
              boxes.map((b) => h('li', {}, b, ' ', h('label', { for: b.id }, eventLabel(b.value as GithubEvent), ' ', h('code', {}, b.value)))),
            ),
          ),
          field(
            github.repository ? 'Repository' : 'Repository (optional)',
            repository,
            github.repository ? 'The workflow takes this repository’s events only.' : 'owner/repo. Empty: any repository whose webhook posts to the URL.',
          ),
        ]
      : h('p', { class: 'muted' }, 'This workflow’s definition declares no GitHub events (metadata.triggers), so GitHub cannot start it.'),
  );
  const drawSource = () => {
    webhookPart.hidden = source.value !== 'webhook';
    githubPart.hidden = source.value !== 'github';
  };

  /** Shows a secret and moves the focus to it, so a screen reader reads it out. */
  const showOnce = (card: HTMLElement) => {
    show(revealed, card);
    card.focus();
  };

  const listAction = listActions(message, () => draw());
  /** Runs an action on the list; a secret shown before goes. */
  const act = (work: () => Promise<unknown>, failed: string) => {
    show(revealed);
    return listAction(work, failed);
  };

  const rotate = (t: Trigger) =>
    act(async () => {
      const answer = await post('/workflows/{slug}/triggers/{triggerId}/rotate-secret', { path: { slug, triggerId: t.id } });
      showOnce(reveal(answer, answer.secret, true));
    }, 'The secret could not be rotated.');

  /** Delete asks again in place: a sender using the URL is refused from then on. */
  const askDelete = (t: Trigger, into: HTMLElement) =>
    askInPlace(into, `Delete ${nameOf(t)}? Its URL stops working at once: deliveries to it are refused.`, `Yes, delete ${nameOf(t)}`, 'Keep it', () =>
      act(async () => {
        await del('/workflows/{slug}/triggers/{triggerId}', { path: { slug, triggerId: t.id } });
        return `Deleted ${nameOf(t)}.`;
      }, 'The trigger could not be deleted.'),
    );

  const item = (t: Trigger) => {
    const confirm = h('div');
    const deliveries = h('div');
    return h(
      'li',
      { class: 'card', 'aria-label': nameOf(t) },
      h('h3', {}, nameOf(t)),
      ' ',
      statusBadge(t.state),
      t.stoppedReason ? h('p', { class: 'error' }, `Stopped: ${t.stoppedReason}`) : null,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Source'),
        h('dd', {}, t.source === 'github' ? 'GitHub' : 'Any sender (webhook)'),
        h('dt', {}, 'Proven by'),
        h('dd', {}, AUTHS[t.auth]),
        t.source === 'github'
          ? [h('dt', {}, 'Events'), h('dd', {}, (t.events ?? []).map(eventLabel).join(', ')), h('dt', {}, 'Repository'), h('dd', {}, t.repository ?? 'any')]
          : null,
        h('dt', {}, 'URL'),
        h('dd', {}, h('code', {}, t.url)),
        h('dt', {}, 'Created'),
        h('dd', {}, when(t.createdAt)),
        h('dt', {}, 'Last delivery'),
        h('dd', {}, t.lastDeliveryAt ? when(t.lastDeliveryAt) : 'none yet'),
      ),
      h('button', { type: 'button', 'aria-label': `Rotate secret of ${nameOf(t)}`, onclick: () => rotate(t) }, 'Rotate secret'),
      ' ',
      h('button', { type: 'button', class: 'secondary', 'aria-label': `Delete ${nameOf(t)}`, onclick: () => askDelete(t, confirm) }, 'Delete'),
      confirm,
      h(
        'details',
        {
          ontoggle: (e: Event) => {
            if ((e.target as HTMLDetailsElement).open) void drawDeliveries(slug, t, deliveries);
          },
        },
        h('summary', {}, 'Recent deliveries'),
        deliveries,
      ),
    );
  };

  const list = h('div');
  async function draw() {
    const { triggers } = await api('/workflows/{slug}/triggers', { path: { slug } });
    show(list, triggers.length ? h('ul', { class: 'plain', 'aria-label': 'Triggers' }, triggers.map(item)) : h('p', { class: 'muted' }, 'No triggers yet.'));
  }

  const add = async (e: Event) => {
    e.preventDefault();
    clear();
    show(revealed);
    const kind = source.value as Source;
    const body: Body =
      kind === 'github'
        ? {
            source: kind,
            // None to send when the definition declares none: the service refuses that at the source.
            events: github ? boxes.filter((b) => b.checked).map((b) => b.value as GithubEvent) : undefined,
            repository: repository.value.trim() || undefined,
          }
        : { source: kind, auth: auth.value as Body['auth'] };
    try {
      const created = await post('/workflows/{slug}/triggers', { path: { slug }, body: { name: name.value.trim() || undefined, ...body } });
      name.value = '';
      await draw();
      showOnce(reveal(created, created.secret, false));
    } catch (error) {
      const at = error instanceof ApiError && typeof error.details.field === 'string' ? error.details.field.split('.')[0]! : '';
      if (error instanceof ApiError) refuse(at, error.message);
      else show(message, alertBox('The trigger could not be added.'));
    }
  };

  await draw();
  show(
    box,
    h('h2', { id: 'triggers-h' }, 'Triggers'),
    h(
      'p',
      { class: 'muted' },
      'URLs that start a run when a sender that holds their secret POSTs to them. Each run acts for whoever created the trigger or last rotated its secret: a trigger created here stops when this sign-in ends, so create long-lived ones with an API key.',
    ),
    list,
    message,
    revealed,
    h(
      'form',
      { 'aria-labelledby': 'add-trigger-h', onsubmit: add },
      h('h3', { id: 'add-trigger-h' }, 'Add a trigger'),
      field('Name (optional)', name, 'Who sends, e.g. the tool or repository.'),
      field('Sent by', source),
      webhookPart,
      githubPart,
      h('button', { type: 'submit' }, 'Add trigger'),
    ),
  );
  return box;
}
