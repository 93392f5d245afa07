import { z } from 'zod';
import { cursorEnvelope } from '../lib/pagination';
import {
  BundleDownload,
  CategoryItem,
  CurrentEval,
  currentEvals,
  getMarketplaceBundle,
  getMarketplaceSkill,
  listCategories,
  listMarketplace,
  MarketplaceDetail,
  MarketplaceInput,
  MarketplaceItem,
  MarketplaceQuery,
} from '../services/catalog';
import { SkillSlug } from '../services/skills';
import { defineCapability, READ_ONLY, type Area } from './capability';

const PUBLIC = { auth: 'public' } as const;
const BySlug = z.object({ slug: SkillSlug.describe('The catalog skill’s slug') });

/** The public catalog: no credential needed. */
export const marketplaceArea: Area = {
  mount: '/api/v1/marketplace/skills',
  tag: 'Marketplace',
  capabilities: [
    defineCapability({
      name: 'search-marketplace',
      title: 'Search the skill marketplace',
      description:
        'Searches the public skill catalog by words in a skill’s name or description, optionally within one category; answers slug, name, description, category and repository of each match, alphabetical by slug, and the eval the catalog ships for its current version (pass rate with and without the skill, model, date; `local` marks the built-in local model) or null. Install one with install-skill.',
      access: PUBLIC,
      input: MarketplaceInput,
      output: z.union([z.array(MarketplaceItem), cursorEnvelope(MarketplaceItem)]),
      annotations: READ_ONLY,
      http: {
        method: 'GET',
        path: '/',
        query: MarketplaceQuery,
        summary: 'Catalog skills, alphabetical. A bare array (limit/offset/category/q); with after_id or before_id, the cursor envelope',
      },
      // The tool keeps to the offset form with a small default page, so its answer has one shape.
      mcp: {
        args: MarketplaceInput.pick({ query: true, category: true, offset: true }).extend({
          limit: z.number().int().min(1).max(100).default(20).describe('How many to answer (default 20)'),
        }),
        output: z.object({ skills: z.array(MarketplaceItem.extend({ eval: CurrentEval })) }),
        present: async (ctx, answer) => {
          const skills = Array.isArray(answer) ? answer : answer.data;
          const evals = await currentEvals(
            ctx.globalDb,
            skills.map((s) => s.slug),
          );
          return { skills: skills.map((s) => ({ ...s, eval: evals.get(s.slug) ?? null })) };
        },
      },
      run: (ctx, query) => listMarketplace(ctx.globalDb, query),
    }),
    defineCapability({
      name: 'list-marketplace-categories',
      title: 'List marketplace categories',
      description: 'Every category with its number of skills.',
      access: PUBLIC,
      input: z.object({}),
      output: z.array(CategoryItem),
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/categories', summary: 'Every category with its number of skills' },
      mcp: false,
      run: (ctx) => listCategories(ctx.globalDb),
    }),
    defineCapability({
      name: 'get-marketplace-skill',
      title: 'Get a catalog skill',
      description: 'One catalog skill with its prompt.',
      access: PUBLIC,
      input: BySlug,
      output: MarketplaceDetail,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:slug', summary: 'One catalog skill with its prompt' },
      mcp: false,
      run: (ctx, { slug }) => getMarketplaceSkill(ctx.globalDb, slug),
    }),
    defineCapability({
      name: 'get-marketplace-bundle',
      title: 'Get a catalog skill’s files',
      description: 'The skill’s files (base64), for installing from this instance as a registry.',
      access: PUBLIC,
      input: BySlug,
      output: BundleDownload,
      annotations: READ_ONLY,
      http: { method: 'GET', path: '/:slug/bundle', summary: "The skill's files (base64), for installing from this instance as a registry" },
      mcp: false,
      run: (ctx, { slug }) => getMarketplaceBundle(ctx.globalDb, ctx.env.BUCKET, slug),
    }),
  ],
};
