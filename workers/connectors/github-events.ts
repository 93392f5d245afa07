import { z } from 'zod';
import { hmacSha256Hex, timingSafeEqual } from '../lib/crypto';

/**
 * What GitHub's webhook deliveries carry (docs/workflows.md, GitHub triggers): the events a
 * workflow trigger may ask for, GitHub's own signature, and the run input built from an event.
 */

/** The `action` values of GitHub's `pull_request` event. */
export const PULL_REQUEST_ACTIONS = [
  'assigned',
  'auto_merge_disabled',
  'auto_merge_enabled',
  'closed',
  'converted_to_draft',
  'demilestoned',
  'dequeued',
  'edited',
  'enqueued',
  'labeled',
  'locked',
  'milestoned',
  'opened',
  'ready_for_review',
  'reopened',
  'review_request_removed',
  'review_requested',
  'synchronize',
  'unassigned',
  'unlabeled',
  'unlocked',
] as const;

/** What a trigger may ask for: `push`, `pull_request` (every action) or `pull_request.<action>`. */
export const GITHUB_TRIGGER_EVENTS = ['push', 'pull_request', ...PULL_REQUEST_ACTIONS.map((action) => `pull_request.${action}` as const)] as const;
export const GithubTriggerEvent = z.enum(GITHUB_TRIGGER_EVENTS);
export type GithubTriggerEvent = z.infer<typeof GithubTriggerEvent>;

/** Whether `asked` covers `event`: the same name, or the whole event for one of its actions. */
export const covers = (asked: GithubTriggerEvent, event: string) => asked === event || event.startsWith(`${asked}.`);

/** An event and its action as one name (`pull_request.opened`); an event without an action is its bare name. */
export const eventName = (event: string, action: unknown) => (typeof action === 'string' && action !== '' ? `${event}.${action}` : event);

/**
 * GitHub's `X-Hub-Signature-256`: `sha256=` and the hex HMAC-SHA256 of the exact body bytes,
 * keyed with the webhook's secret as text.
 */
export async function verifyHubSignature(secret: string, body: string, header: string | null): Promise<boolean> {
  if (header === null) return false;
  return timingSafeEqual(header.trim().toLowerCase(), `sha256=${await hmacSha256Hex(secret, body)}`);
}

/**
 * The event's JSON: GitHub sends it as the body (content type `application/json`) or as the
 * `payload` field of a form (`application/x-www-form-urlencoded`, GitHub's default); null if neither parses to an object.
 */
export function payloadOf(body: string, contentType: string | null): Record<string, unknown> | null {
  const text = contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded') ? new URLSearchParams(body).get('payload') : body;
  try {
    const parsed: unknown = JSON.parse(text ?? '');
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Commits of a push copied into the input: a large push keeps its first ones (`push.commitCount` says how many there were). */
export const MAX_INPUT_COMMITS = 20;

type Loose = Record<string, any>;
const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const commitOf = (c: Loose) => ({ id: text(c.id), message: text(c.message), author: text(c.author?.username) ?? text(c.author?.name), url: text(c.url) });

/** The repository an event is about (`owner/repo`), or null. */
export const repositoryOf = (payload: Loose): string | null => text(payload.repository?.full_name);

/**
 * The run's input for a `push` or `pull_request` event: what both have (`event`, `action`,
 * `deliveryId`, `repository`, `sender`, `ref`, `branch`, `sha`), then `push` or `pullRequest`.
 * A pull request's `ref` is `refs/pull/<number>/head`, which the base repository holds even for a fork's branch.
 */
export function runInputOf(event: 'push' | 'pull_request', deliveryId: string | null, payload: Loose): Record<string, unknown> {
  const common = { event, action: text(payload.action), deliveryId, repository: repositoryOf(payload), sender: text(payload.sender?.login) };
  if (event === 'push') {
    const ref = text(payload.ref);
    const commits: Loose[] = Array.isArray(payload.commits) ? payload.commits : [];
    return {
      ...common,
      ref,
      branch: ref?.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null,
      sha: text(payload.after),
      push: {
        before: text(payload.before),
        after: text(payload.after),
        created: payload.created === true,
        deleted: payload.deleted === true,
        forced: payload.forced === true,
        compareUrl: text(payload.compare),
        commitCount: commits.length,
        commits: commits.slice(0, MAX_INPUT_COMMITS).map(commitOf),
        headCommit: payload.head_commit ? commitOf(payload.head_commit) : null,
      },
    };
  }
  const pr: Loose = payload.pull_request ?? {};
  const number = typeof pr.number === 'number' ? pr.number : typeof payload.number === 'number' ? payload.number : null;
  return {
    ...common,
    ref: number === null ? null : `refs/pull/${number}/head`,
    branch: text(pr.head?.ref),
    sha: text(pr.head?.sha),
    pullRequest: {
      number,
      title: text(pr.title),
      body: text(pr.body),
      url: text(pr.html_url),
      state: text(pr.state),
      draft: pr.draft === true,
      merged: pr.merged === true,
      author: text(pr.user?.login),
      head: { ref: text(pr.head?.ref), sha: text(pr.head?.sha), repository: text(pr.head?.repo?.full_name) },
      base: { ref: text(pr.base?.ref), sha: text(pr.base?.sha) },
    },
  };
}
