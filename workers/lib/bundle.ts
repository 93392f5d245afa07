import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Category } from '../../schema/categories';
import { CategoryId } from './categories';
import { sha256HexBytes } from './crypto';
import { EVALS_PATH, parseEvalsFile, type EvalsFile } from './eval-cases';

/**
 * Skill bundles in the open Agent Skills format: a folder with `SKILL.md` (YAML frontmatter,
 * then the prompt as Markdown) and optional `scripts/`, `references/`, `assets/`.
 * Shared by the catalog importer (Node) and the Worker (installs from artifacts, archives and
 * other registries), so both accept exactly the same bundles and compute the same checksum.
 */
export const BUNDLE_TYPE = 'agent-skills';

export const BUNDLE_LIMITS = {
  files: 200,
  fileBytes: 1024 * 1024,
  totalBytes: 8 * 1024 * 1024,
  skillMdBytes: 256 * 1024,
  pathLength: 200,
  depth: 6,
} as const;

export interface BundleFile {
  path: string;
  bytes: Uint8Array;
}

/**
 * A bundle that cannot be accepted; `rule` is machine-readable, the message says what to fix,
 * and `field`, for a problem inside one of its files (its eval cases), points at it.
 */
export class BundleError extends Error {
  readonly rule: string;
  readonly field?: string;
  constructor(rule: string, message: string, field?: string) {
    super(message);
    this.name = 'BundleError';
    this.rule = rule;
    if (field !== undefined) this.field = field;
  }
}

/** Lower-case letters, digits and single hyphens (Agent Skills `name`), at most 64 characters. */
export const SKILL_SLUG = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}$/;

/** Plain relative paths only: no `..`, no absolute paths, no hidden files, no odd characters. */
const SAFE_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

export const Frontmatter = z.object({
  name: z.string().regex(SKILL_SLUG, 'lower-case letters, digits and single hyphens, at most 64 characters'),
  description: z.string().trim().min(1).max(1024),
  license: z.string().max(100).optional(),
  metadata: z
    .object({
      title: z.string().trim().min(1).max(100).optional(),
      author: z.string().trim().min(1).max(100).optional(),
      version: z.union([z.string(), z.number()]).transform(String).optional(),
      category: CategoryId.optional(),
    })
    .passthrough()
    .optional(),
});
export type Frontmatter = z.infer<typeof Frontmatter>;

export interface ParsedBundle {
  slug: string;
  /** Display name: `metadata.title`, else the slug. */
  name: string;
  description: string;
  category: Category;
  author: string;
  version: string;
  license: string | null;
  prompt: string;
  files: BundleFile[];
  /** Its eval cases (`evals/evals.json`), when it carries them. */
  evals: EvalsFile | null;
}

const FRONTMATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** Splits SKILL.md into frontmatter (parsed as data only: no aliases, no custom tags) and body. */
export function parseSkillMd(text: string): { frontmatter: Frontmatter; body: string } {
  const match = FRONTMATTER.exec(text.replace(/^\uFEFF/, ''));
  if (!match) throw new BundleError('frontmatter', 'SKILL.md must start with YAML frontmatter between --- lines');
  let data: unknown;
  try {
    data = parseYaml(match[1]!, { schema: 'core', maxAliasCount: 0, uniqueKeys: true, logLevel: 'silent' });
  } catch (error) {
    throw new BundleError('frontmatter', `SKILL.md frontmatter is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = Frontmatter.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BundleError('frontmatter', `SKILL.md frontmatter ${issue.path.join('.') || 'root'}: ${issue.message}`);
  }
  return { frontmatter: parsed.data, body: match[2]!.trim() };
}

function checkPath(path: string): void {
  const segments = path.split('/');
  if (path.length > BUNDLE_LIMITS.pathLength || segments.length > BUNDLE_LIMITS.depth || !segments.every((s) => SAFE_SEGMENT.test(s))) {
    throw new BundleError('unsafe_path', `Unsafe or unsupported path in bundle: ${JSON.stringify(path)}`);
  }
}

/** Validates every rule of a bundle and returns its parsed form. */
export function validateBundle(files: BundleFile[], expectedSlug?: string): ParsedBundle {
  if (files.length === 0) throw new BundleError('empty', 'The bundle has no files');
  if (files.length > BUNDLE_LIMITS.files) throw new BundleError('too_many_files', `A bundle holds at most ${BUNDLE_LIMITS.files} files`);
  const seen = new Set<string>();
  let total = 0;
  for (const file of files) {
    checkPath(file.path);
    if (seen.has(file.path)) throw new BundleError('duplicate_path', `Duplicate path in bundle: ${file.path}`);
    seen.add(file.path);
    if (file.bytes.length > BUNDLE_LIMITS.fileBytes) {
      throw new BundleError('file_too_large', `${file.path} exceeds ${BUNDLE_LIMITS.fileBytes} bytes`);
    }
    total += file.bytes.length;
  }
  if (total > BUNDLE_LIMITS.totalBytes) throw new BundleError('bundle_too_large', `The bundle exceeds ${BUNDLE_LIMITS.totalBytes} bytes`);

  const skillMd = files.find((f) => f.path === 'SKILL.md');
  if (!skillMd) throw new BundleError('missing_skill_md', 'The bundle has no SKILL.md at its root');
  if (skillMd.bytes.length > BUNDLE_LIMITS.skillMdBytes) {
    throw new BundleError('file_too_large', `SKILL.md exceeds ${BUNDLE_LIMITS.skillMdBytes} bytes`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(skillMd.bytes);
  } catch {
    throw new BundleError('encoding', 'SKILL.md is not valid UTF-8');
  }
  const { frontmatter, body } = parseSkillMd(text);
  if (!body) throw new BundleError('empty_prompt', 'SKILL.md has no prompt after its frontmatter');
  if (expectedSlug !== undefined && frontmatter.name !== expectedSlug) {
    throw new BundleError('name_mismatch', `SKILL.md names the skill "${frontmatter.name}", expected "${expectedSlug}"`);
  }
  const meta = frontmatter.metadata ?? {};
  const evals = readEvals(files, frontmatter.name);
  return {
    slug: frontmatter.name,
    name: meta.title ?? frontmatter.name,
    description: frontmatter.description,
    category: meta.category ?? 'general',
    author: meta.author ?? 'unknown',
    version: meta.version ?? '1.0.0',
    license: frontmatter.license ?? null,
    prompt: body,
    files: [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    evals,
  };
}

/** The bundle's eval cases, validated (a problem names the field inside evals.json), or null without the file. */
function readEvals(files: BundleFile[], slug: string): EvalsFile | null {
  const file = files.find((f) => f.path === EVALS_PATH);
  if (!file) return null;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(file.bytes);
  } catch {
    throw new BundleError('encoding', `${EVALS_PATH} is not valid UTF-8`);
  }
  const parsed = parseEvalsFile(text, slug, new Set(files.map((f) => f.path)));
  if (!parsed.ok) throw new BundleError(`evals_${parsed.problem.rule}`, `${EVALS_PATH}: ${parsed.problem.message}`, parsed.problem.field);
  return parsed.file;
}

export interface ManifestEntry {
  path: string;
  sha256: string;
  size: number;
}

export interface BundleManifest {
  format: typeof BUNDLE_TYPE;
  checksum: string;
  files: ManifestEntry[];
}

/**
 * The content checksum: SHA-256 over the sorted file list, one `path`, newline, file SHA-256,
 * newline per file. Same files, same checksum, wherever the bundle came from.
 */
export async function bundleManifest(files: BundleFile[]): Promise<BundleManifest> {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const entries = await Promise.all(sorted.map(async (f) => ({ path: f.path, sha256: await sha256HexBytes(f.bytes), size: f.bytes.length })));
  const listing = entries.map((e) => `${e.path}\n${e.sha256}\n`).join('');
  return { format: BUNDLE_TYPE, checksum: await sha256HexBytes(new TextEncoder().encode(listing)), files: entries };
}

/** R2 layout: content-addressed blobs, one manifest per distinct bundle. */
export const blobKey = (sha256: string) => `blobs/${sha256}`;
export const MANIFEST_PREFIX = 'manifests/';
export const manifestKey = (checksum: string) => `${MANIFEST_PREFIX}${checksum}.json`;

/** Writes SKILL.md text for an authored skill, so authored and imported skills share one format. */
export function renderSkillMd(input: { slug: string; name: string; description: string; category: string; prompt: string; author: string }): string {
  const yamlString = (s: string) => JSON.stringify(s);
  return [
    '---',
    `name: ${yamlString(input.slug)}`,
    `description: ${yamlString(input.description)}`,
    'metadata:',
    `  title: ${yamlString(input.name)}`,
    `  author: ${yamlString(input.author)}`,
    `  category: ${yamlString(input.category)}`,
    '---',
    input.prompt.trim(),
    '',
  ].join('\n');
}
