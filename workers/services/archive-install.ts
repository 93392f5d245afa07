import { z } from 'zod';
import type { Actor } from '../auth/actor';
import type { ShardDb, Env } from '../env';
import { invalidInput, notFound } from '../errors';
import { readArchive } from '../lib/archive';
import { fetchLimited } from '../lib/outbound';
import { installGuarded } from './skill-writes';
import { bundleContent, SkillSlug, validated } from './skills';

/** Largest archive downloaded or read for an install. */
export const MAX_ARCHIVE_BYTES = 32 * 1024 * 1024;

/** R2 keys a workspace may install from: its own prefix, never another workspace's objects. */
export const workspacePrefix = (workspaceId: string) => `workspaces/${workspaceId}/`;

export const InstallFromSourceBody = z.object({
  source: z.discriminatedUnion('type', [
    z.object({ type: z.literal('r2'), key: z.string().min(1).max(1024) }),
    z.object({ type: z.literal('url'), url: z.url({ protocol: /^https?$/ }).max(2000) }),
  ]),
  /** The skill's folder inside the archive, when the archive is a larger repository. */
  path: z
    .string()
    .max(300)
    .regex(/^[A-Za-z0-9._/-]*$/)
    .optional(),
  /** If given, SKILL.md must name this slug. */
  slug: SkillSlug.optional(),
});
export type InstallFromSourceBody = z.infer<typeof InstallFromSourceBody>;

/** A 40-hex commit in a git host's archive URL (`/archive/<sha>.tar.gz`, `/tarball/<sha>`). */
const commitInUrl = (url: string) => /\b([0-9a-f]{40})\b/.exec(url)?.[1] ?? null;

/**
 * POST /api/v1/install: a skill bundle from a zip or tar(.gz) archive, either an object of
 * this workspace in our R2 bucket or an https URL (for example a git host's archive of a
 * commit), validated like every other bundle; over a guarded version it is held back like any
 * install (skill-writes.ts).
 */
export async function installFromSource(db: ShardDb, env: Env, principal: Actor, body: InstallFromSourceBody, grantToken: string | undefined) {
  const bucket = env.BUCKET;
  let bytes: Uint8Array;
  let repository: string;
  let fetchedFrom: string | undefined;
  if (body.source.type === 'r2') {
    const { key } = body.source;
    const object = key.startsWith(workspacePrefix(principal.workspaceId)) ? await bucket.get(key) : null;
    if (!object) throw notFound('Object');
    if (object.size > MAX_ARCHIVE_BYTES) throw invalidInput('source.key', 'too_large', `The object exceeds ${MAX_ARCHIVE_BYTES} bytes`);
    bytes = new Uint8Array(await object.arrayBuffer());
    repository = `r2:${key}`;
  } else {
    bytes = await fetchLimited(body.source.url, 'source.url', MAX_ARCHIVE_BYTES, env);
    repository = body.source.url;
    fetchedFrom = new URL(body.source.url).origin;
  }
  const bundle = validated(() => readArchive(bytes, body.path), body.slug, fetchedFrom);
  const commitHash = body.source.type === 'url' ? commitInUrl(body.source.url) : null;
  const content = await bundleContent(bucket, bundle, { source: 'archive', repository, commitHash });
  return installGuarded(db, env, principal, bundle.slug, content, grantToken);
}
