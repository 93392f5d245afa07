import { and, asc, count, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { CATEGORIES, catalogSkills, type CatalogSkillRow } from '../../schema';
import { CATEGORY_NAMES, CategoryId } from '../lib/categories';
import type { GlobalDb } from '../env';
import { invalidInput, notFound } from '../errors';
import { fromBase64, toBase64 } from '../lib/base64';
import { ShippedEval, ShippedEvals } from '../lib/catalog-evals';
import { type BundleFile, bundleManifest, validateBundle } from '../lib/bundle';
import { loadBundle, storeBundle } from '../lib/bundle-store';
import { now } from '../lib/clock';
import { CursorQuery, cursorPage, DEFAULT_PAGE, mapPage, MAX_PAGE } from '../lib/pagination';

/**
 * The `repository` of a catalog built where no public repository is known (no public git remote
 * and no `repository` in package.json): a stable name, since the spec's list item has a string
 * there, and never a local path.
 */
export const BUILT_IN_REPOSITORY = 'built-in';

/** One skill as the importer emits it (catalog/dist/catalog.json): metadata plus its files. */
export const CatalogEntry = z.object({
  slug: z.string(),
  /** The repository's public URL, or BUILT_IN_REPOSITORY. */
  repository: z.union([z.url({ protocol: /^https?$/ }).max(500), z.literal(BUILT_IN_REPOSITORY)]),
  commitHash: z.string().min(1).max(64),
  files: z.array(z.object({ path: z.string(), base64: z.string() })),
  /** The eval results shipped with the skill (catalog/evals/<slug>.json). */
  evals: ShippedEvals.optional(),
});
export type CatalogEntry = z.infer<typeof CatalogEntry>;

export const decodeFiles = (files: { path: string; base64: string }[]): BundleFile[] => files.map((f) => ({ path: f.path, bytes: fromBase64(f.base64) }));

/** What a catalog load did, by slug. */
export interface CatalogLoad {
  added: string[];
  updated: string[];
  unchanged: string[];
}

/**
 * Loads importer output into the marketplace: validates each bundle again (the file may have
 * been edited by hand), and stores the bundle in R2 and upserts its row only when something
 * changed (content, repository, commit or shipped eval results). Loading the same catalog again writes nothing; a
 * skill whose content changed gets the new content, which installs as a new version.
 */
export async function importCatalog(db: GlobalDb, bucket: R2Bucket, entries: CatalogEntry[]): Promise<CatalogLoad> {
  const known = new Map(
    (
      await db
        .select({
          slug: catalogSkills.slug,
          contentChecksum: catalogSkills.contentChecksum,
          repository: catalogSkills.repository,
          commitHash: catalogSkills.commitHash,
          evals: catalogSkills.evals,
        })
        .from(catalogSkills)
    ).map((row) => [row.slug, row]),
  );
  const load: CatalogLoad = { added: [], updated: [], unchanged: [] };
  const rows = (
    await Promise.all(
      entries.map(async (entry) => {
        const bundle = validateBundle(decodeFiles(entry.files), entry.slug);
        const before = known.get(bundle.slug);
        const { checksum } = await bundleManifest(bundle.files);
        const evals = JSON.stringify(entry.evals ?? []);
        if (
          before &&
          before.contentChecksum === checksum &&
          before.repository === entry.repository &&
          before.commitHash === entry.commitHash &&
          before.evals === evals
        ) {
          load.unchanged.push(bundle.slug);
          return null;
        }
        (before ? load.updated : load.added).push(bundle.slug);
        const stored = await storeBundle(bucket, bundle.files);
        return {
          slug: bundle.slug,
          name: bundle.name,
          description: bundle.description,
          category: bundle.category,
          prompt: bundle.prompt,
          author: bundle.author,
          version: bundle.version,
          license: bundle.license,
          repository: entry.repository,
          commitHash: entry.commitHash,
          contentChecksum: stored.contentChecksum,
          storagePath: stored.storagePath,
          filesCount: stored.filesCount,
          evals,
          updatedAt: now(),
        };
      }),
    )
  ).filter((row) => row !== null);
  // D1 caps bound parameters per statement, so upsert one row per statement, all in one batch.
  const statements = rows.map((row) =>
    db
      .insert(catalogSkills)
      .values(row)
      .onConflictDoUpdate({ target: catalogSkills.slug, set: { ...row, slug: undefined } }),
  );
  if (statements.length) await db.batch(statements as [(typeof statements)[number], ...typeof statements]);
  for (const list of Object.values(load)) list.sort();
  return load;
}

export const MarketplaceItem = z.object({
  slug: z.string(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  repository: z.string(),
});
export type MarketplaceItem = z.infer<typeof MarketplaceItem>;

export const MarketplaceDetail = MarketplaceItem.extend({
  prompt: z.string(),
  author: z.string(),
  version: z.string(),
  commitHash: z.string(),
  license: z.string().nullable(),
  contentChecksum: z.string(),
  filesCount: z.number().int(),
  evals: ShippedEvals.describe(
    'The eval results the catalog ships: the latest eval of each version its deployer ran, newest first; the one whose contentChecksum is this detail’s is of the current version',
  ),
});
export type MarketplaceDetail = z.infer<typeof MarketplaceDetail>;

export const CategoryItem = z.object({ id: z.string(), name: z.string(), count: z.number().int() });

const presentItem = (row: CatalogSkillRow): MarketplaceItem => ({
  slug: row.slug,
  name: row.name,
  description: row.description,
  category: row.category,
  // The column is nullable for skills' provenance; every catalog load writes a string.
  repository: row.repository ?? BUILT_IN_REPOSITORY,
});

/** The eval results a catalog skill ships, from its stored column (JSON text). */
export const shippedEvalsOf = (row: Pick<CatalogSkillRow, 'evals'>) => ShippedEvals.parse(JSON.parse(row.evals));

const presentDetail = (row: CatalogSkillRow): MarketplaceDetail => ({
  ...presentItem(row),
  prompt: row.prompt,
  author: row.author,
  version: row.version,
  commitHash: row.commitHash,
  license: row.license,
  contentChecksum: row.contentChecksum,
  filesCount: row.filesCount,
  evals: shippedEvalsOf(row),
});

/** The bare-array form lists the whole catalog unless `limit` says otherwise. */
const MAX_MARKETPLACE_PAGE = 1000;

/** A search of the catalog: words, a category, and an offset page (a bare array) or a cursor. */
export const MarketplaceInput = CursorQuery.extend({
  /** Case-insensitive search in name and description (our addition). */
  query: z.string().trim().min(1).max(200).optional().describe('Words to find in the name or description, e.g. "meeting notes"'),
  category: z.enum(CATEGORIES).optional().describe('Only skills of this category'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_MARKETPLACE_PAGE)
    .optional()
    .describe(`How many to answer (default up to ${MAX_MARKETPLACE_PAGE}; ${DEFAULT_PAGE} in the cursor form)`),
  offset: z.number().int().min(0).max(100_000).default(0).describe('How many matches to skip (default 0)'),
});
export type MarketplaceInput = z.infer<typeof MarketplaceInput>;

/** The REST query: the words as `q`, numbers as strings, and a category's id or display name in any case. */
export const MarketplaceQuery = CursorQuery.extend({
  limit: z.coerce.number().int().min(1).max(MAX_MARKETPLACE_PAGE).optional(),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
  category: CategoryId.optional(),
  q: z.string().trim().min(1).max(200).optional(),
}).transform(({ q, ...query }): MarketplaceInput => ({ ...query, query: q }));

function marketplaceFilter(query: MarketplaceInput): SQL | undefined {
  // instr() rather than LIKE: no wildcard escaping, and no cap on the pattern's length.
  const needle = query.query?.toLowerCase();
  return and(
    query.category === undefined ? undefined : eq(catalogSkills.category, query.category),
    needle === undefined ? undefined : sql`(instr(lower(${catalogSkills.name}), ${needle}) > 0 OR instr(lower(${catalogSkills.description}), ${needle}) > 0)`,
  );
}

/** Alphabetical by slug. A cursor (`after_id`/`before_id`, a slug) gives the envelope; otherwise a bare array. */
export async function listMarketplace(db: GlobalDb, query: MarketplaceInput) {
  const where = marketplaceFilter(query);
  if (query.after_id === undefined && query.before_id === undefined) {
    const rows = await db
      .select()
      .from(catalogSkills)
      .where(where)
      .orderBy(asc(catalogSkills.slug))
      .limit(query.limit ?? MAX_MARKETPLACE_PAGE)
      .offset(query.offset);
    return rows.map(presentItem);
  }
  if (query.limit !== undefined && query.limit > MAX_PAGE) {
    throw invalidInput('limit', 'too_big', `limit is at most ${MAX_PAGE} in the cursor form`);
  }
  const page = await cursorPage(
    { ...query, limit: query.limit ?? DEFAULT_PAGE },
    {
      column: catalogSkills.slug,
      order: 'asc',
      parseCursor: (raw) => raw,
      fetch: (w, orderBy, limit) => db.select().from(catalogSkills).where(w).orderBy(orderBy).limit(limit),
      publicId: (row) => row.slug,
    },
    where,
  );
  return mapPage(page, presentItem);
}

export async function listCategories(db: GlobalDb) {
  const counts = await db.select({ category: catalogSkills.category, n: count() }).from(catalogSkills).groupBy(catalogSkills.category);
  const byId = new Map(counts.map((c) => [c.category, c.n]));
  return CATEGORIES.map((id) => ({ id, name: CATEGORY_NAMES[id], count: byId.get(id) ?? 0 }));
}

export async function findCatalogSkill(db: GlobalDb, slug: string): Promise<CatalogSkillRow | null> {
  const [row] = await db.select().from(catalogSkills).where(eq(catalogSkills.slug, slug)).limit(1);
  return row ?? null;
}

/** What a search result shows of a skill's shipped evals: the one of its current content, if any. */
export const CurrentEval = ShippedEval.omit({ cases: true, contentChecksum: true, provider: true, repetitions: true })
  .nullable()
  .describe('The shipped eval of the current version (pass rates with and without the skill, model, date; `local` for the built-in model), or null');

/** The shipped eval of each skill's current content, by slug (null where the catalog ships none). */
export async function currentEvals(db: GlobalDb, slugs: string[]): Promise<Map<string, z.infer<typeof CurrentEval>>> {
  const rows = slugs.length
    ? await db
        .select({ slug: catalogSkills.slug, contentChecksum: catalogSkills.contentChecksum, evals: catalogSkills.evals })
        .from(catalogSkills)
        .where(inArray(catalogSkills.slug, slugs))
    : [];
  return new Map(
    rows.map((row) => {
      const current = shippedEvalsOf(row).find((e) => e.contentChecksum === row.contentChecksum);
      return [row.slug, current ? CurrentEval.unwrap().parse(current) : null];
    }),
  );
}

export async function getMarketplaceSkill(db: GlobalDb, slug: string): Promise<MarketplaceDetail> {
  const row = await findCatalogSkill(db, slug);
  if (!row) throw notFound(`Skill "${slug}"`);
  return presentDetail(row);
}

export const BundleDownload = z.object({
  slug: z.string(),
  contentChecksum: z.string(),
  files: z.array(z.object({ path: z.string(), base64: z.string() })),
});

/** The bundle's files, so another instance can install from this one and verify the checksum. */
export async function getMarketplaceBundle(db: GlobalDb, bucket: R2Bucket, slug: string) {
  const row = await findCatalogSkill(db, slug);
  const files = row && (await loadBundle(bucket, row.storagePath));
  if (!row || !files) throw notFound(`Skill "${slug}"`);
  return { slug, contentChecksum: row.contentChecksum, files: files.map((f) => ({ path: f.path, base64: toBase64(f.bytes) })) };
}
