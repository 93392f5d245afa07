import { api, ApiError, del, type Answer } from '../api';
import { alertBox, field, fieldErrors, h, show, statusBadge } from '../dom';
import { failure, section } from './settings-more';

/** How often a deletion's job is read again while it runs. */
const POLL_MS = 2_000;

const pause = () => new Promise((resolve) => setTimeout(resolve, POLL_MS));

type WorkspaceJob = Answer<'/workspaces/{id}/deletion'>;
type AccountJob = Answer<'/account-deletions/{token}'>;

const jobLine = (job: WorkspaceJob) =>
  h('p', {}, 'Deletion of ', h('strong', {}, job.workspaceName), ': ', statusBadge(job.status), job.status === 'completed' ? '' : ` (now: ${job.step})`);

/**
 * Delete workspace: for the owner of a workspace that is not their personal one. The name typed
 * back confirms; the job's status is shown until it completes. The workspace is gone for
 * everyone at once, so the console stops choosing it.
 */
export async function deleteWorkspace(box: HTMLElement) {
  const workspace = await api('/workspaces/current');
  if (workspace.role !== 'owner') return show(box);
  if (workspace.personal) {
    return show(
      box,
      section('delete-workspace', 'Delete workspace', h('p', { class: 'muted' }, 'Your personal workspace is deleted only with your account (below).')),
    );
  }
  const confirm = h('input', { id: 'delete-workspace-confirm', required: true, autocomplete: 'off', maxlength: 200 });
  const message = h('div', { role: 'status' });
  const { clear, refuse } = fieldErrors({ confirm }, message);
  const follow = async (job: WorkspaceJob) => {
    show(message, jobLine(job));
    while (job.status !== 'completed') {
      await pause();
      job = await api('/workspaces/{id}/deletion', { path: { id: workspace.id } });
      show(message, jobLine(job));
    }
    show(message, jobLine(job), h('p', {}, 'Everything in it is gone. ', h('a', { href: '/' }, 'Go to your workspaces')));
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    clear();
    try {
      const job = await del('/workspaces/{id}', { path: { id: workspace.id }, body: { confirm: confirm.value } });
      // Its memberships went with the request: the console acts in the personal workspace from now on.
      localStorage.removeItem('workspace');
      (e.target as HTMLFormElement).querySelector('button')!.disabled = true;
      await follow(job);
    } catch (error) {
      if (error instanceof ApiError && typeof error.details.field === 'string') refuse(error.details.field, error.message);
      else show(message, failure(error, 'The workspace could not be deleted.'));
    }
  };
  show(
    box,
    section(
      'delete-workspace',
      'Delete workspace',
      h('p', {}, 'Deletes this workspace for everyone: its runs, workflows, skills, secrets, files, keys and members. It cannot be undone.'),
      h(
        'form',
        { 'aria-label': 'Delete workspace', onsubmit: submit },
        field(`Type the workspace’s name (${workspace.name}) to confirm`, confirm),
        h('button', { type: 'submit', class: 'danger' }, 'Delete workspace'),
        message,
      ),
    ),
  );
}

const accountLine = (job: AccountJob) =>
  h(
    'p',
    {},
    'Account deletion: ',
    statusBadge(job.status),
    ` · workspaces deleted: ${job.workspaces.filter((w) => w.status === 'completed').length} of ${job.workspaces.length}`,
  );

/**
 * Delete account: with the password. The answer's status URL needs no credential (the account
 * has none left), so the page reads it until the deletion completes.
 */
export async function deleteAccount(box: HTMLElement) {
  const password = h('input', { id: 'delete-account-password', type: 'password', required: true, autocomplete: 'current-password' });
  const message = h('div', { role: 'status' });
  const { clear, refuse } = fieldErrors({ password }, message);
  const follow = async (statusUrl: string, job: AccountJob) => {
    show(message, accountLine(job));
    while (job.status !== 'completed') {
      await pause();
      job = (await (await fetch(statusUrl, { headers: { accept: 'application/json' } })).json()) as AccountJob;
      show(message, accountLine(job));
    }
    show(message, accountLine(job), h('p', {}, 'Your account is deleted. ', h('a', { href: '/' }, 'Leave')));
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    clear();
    try {
      const job = await del('/profile', { body: { password: password.value } });
      localStorage.removeItem('workspace');
      (e.target as HTMLFormElement).querySelector('button')!.disabled = true;
      await follow(job.statusUrl!, job);
    } catch (error) {
      if (error instanceof ApiError && error.details.reason === 'sole_owner') {
        const names = (error.details.workspaces as { name: string }[]).map((w) => w.name).join(', ');
        show(message, alertBox(`${error.message}: ${names}.`));
      } else if (error instanceof ApiError && typeof error.details.field === 'string') refuse(error.details.field, error.message);
      else show(message, failure(error, 'The account could not be deleted.'));
    }
  };
  show(
    box,
    section(
      'delete-account',
      'Delete account',
      h(
        'p',
        {},
        'Deletes your account: your personal workspace and every workspace only you are in, your sessions, keys and connected apps. You leave workspaces others own; what you did there stays, without your name. Payments stay on record under an anonymous id. It cannot be undone.',
      ),
      h(
        'form',
        { 'aria-label': 'Delete account', onsubmit: submit },
        field('Your password', password),
        h('button', { type: 'submit', class: 'danger' }, 'Delete account'),
        message,
      ),
    ),
  );
}
