import { z } from 'zod';
import { GithubTriggerEvent } from '../connectors/github-events';
import { GithubRepo } from '../connectors/github';
import { invalidInput } from '../errors';

/**
 * A definition's `metadata.triggers[]` (docs/workflows.md, GitHub triggers). Entries are free
 * catalog metadata that round-trips unchanged, except one shape the service acts on:
 * `{source: "github", events, repository?}`, the GitHub events a workspace may attach a trigger
 * to. That entry is checked at install; a definition declares GitHub events at most once.
 */
export const GithubTriggerDeclaration = z.strictObject({
  source: z.literal('github'),
  events: z.array(GithubTriggerEvent).min(1).max(30),
  repository: GithubRepo.optional(),
});
export type GithubTriggerDeclaration = z.infer<typeof GithubTriggerDeclaration>;

const isGithubEntry = (entry: unknown) => typeof entry === 'object' && entry !== null && (entry as { source?: unknown }).source === 'github';

/** Throws 400 INVALID_INPUT naming `metadata.triggers.<i>…` for a GitHub entry that does not fit, or a second one. */
export function checkTriggerDeclarations(triggers: unknown): void {
  if (triggers === undefined) return;
  if (!Array.isArray(triggers)) throw invalidInput('metadata.triggers', 'type', 'metadata.triggers: must be an array');
  let declared = false;
  triggers.forEach((entry, i) => {
    if (!isGithubEntry(entry)) return;
    const at = `metadata.triggers.${i}`;
    if (declared) throw invalidInput(at, 'duplicate', `${at}: a definition declares its GitHub events in one entry`);
    declared = true;
    const parsed = GithubTriggerDeclaration.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = [at, ...issue.path.map(String)].join('.');
      throw invalidInput(field, 'github_trigger', `${field}: ${issue.message}`);
    }
  });
}

/** The GitHub declaration of an installed definition's metadata (checked at install), or null. */
export function declaredGithubTrigger(metadata: unknown): GithubTriggerDeclaration | null {
  const triggers = (metadata as { triggers?: unknown } | undefined)?.triggers;
  const entry = Array.isArray(triggers) ? triggers.find(isGithubEntry) : undefined;
  const parsed = GithubTriggerDeclaration.safeParse(entry);
  return parsed.success ? parsed.data : null;
}
