import { env } from 'cloudflare:workers';
import { zipSync } from 'fflate';
import { type CatalogEntry, importCatalog } from '../../workers/services/catalog';
import { call, signUp } from './api';
import { globalDbOf } from '../../workers/lib/db';
import { shardD1 } from './shards';

export const skillMd = (slug: string, opts: { title?: string; category?: string; body?: string; description?: string } = {}) =>
  [
    '---',
    `name: ${slug}`,
    `description: ${JSON.stringify(opts.description ?? `Does ${slug} things.`)}`,
    'license: MIT',
    'metadata:',
    `  title: ${JSON.stringify(opts.title ?? slug)}`,
    '  author: Test Author',
    '  version: "1.0.0"',
    `  category: ${opts.category ?? 'development'}`,
    '---',
    opts.body ?? `You are the ${slug} skill.`,
    '',
  ].join('\n');

const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

export const catalogEntry = (
  slug: string,
  opts: Parameters<typeof skillMd>[1] & { extra?: Record<string, string>; commitHash?: string } = {},
): CatalogEntry => ({
  slug,
  repository: 'https://git.example.test/team/skills',
  commitHash: opts.commitHash ?? 'c0ffee0000000000000000000000000000000000',
  files: [{ path: 'SKILL.md', base64: b64(skillMd(slug, opts)) }, ...Object.entries(opts.extra ?? {}).map(([path, text]) => ({ path, base64: b64(text) }))],
});

/** Loads entries into the marketplace through the importer's own service function. */
export const seedCatalog = (entries: CatalogEntry[]) => importCatalog(globalDbOf(env), env.BUCKET, entries);

export const zipOf = (files: Record<string, string>) => zipSync(Object.fromEntries(Object.entries(files).map(([p, t]) => [p, new TextEncoder().encode(t)])));

/** An artifact row plus its R2 object, as the executions issue will create them. */
export async function seedArtifact(workspaceId: string, bytes: Uint8Array, name = 'bundle.zip') {
  const key = `workspaces/${workspaceId}/artifacts/${crypto.randomUUID()}/${name}`;
  await env.BUCKET.put(key, bytes);
  const row = await (
    await shardD1(workspaceId)
  )
    .prepare('INSERT INTO artifacts (workspace_id, name, content_type, size, r2_key, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id')
    .bind(workspaceId, name, 'application/zip', bytes.length, key, Date.now())
    .first<{ id: number }>();
  return { id: `art_${row!.id}`, key };
}

/** Marks an execution of the workspace as running, as the executions issue will. */
export const seedRunningExecution = async (workspaceId: string, userId: string) =>
  (await shardD1(workspaceId))
    .prepare("INSERT INTO executions (workspace_id, user_id, skill_slug, status, started_at) VALUES (?, ?, 'x', 'working', ?)")
    .bind(workspaceId, userId, Date.now())
    .run();

/** The authored skill the execution, trace, thread and control-plane tests run. */
export const SUMMARIZER = {
  name: 'Meeting Summarizer',
  description: 'Summarises notes.',
  category: 'productivity',
  prompt: '# Meeting Summarizer\nYou summarise meeting notes.',
};

/** A new user whose workspace has SUMMARIZER installed as `meeting-summarizer`. */
export async function signUpWithSummarizer() {
  const user = await signUp();
  await call('/api/v1/skills/meeting-summarizer', { method: 'PUT', token: user.token, body: SUMMARIZER });
  return user;
}
