import { z } from 'zod';
import { CATEGORIES } from '../../../schema';
import { listMarketplace, MarketplaceItem, MarketplaceQuery } from '../../services/catalog';
import { READ_ONLY } from '../../capabilities/capability';
import { defineTool } from '../tool';

export const marketplaceTools = [
  defineTool({
    name: 'search-marketplace',
    title: 'Search the skill marketplace',
    description:
      'Searches the public skill catalog by words in a skill’s name or description, optionally within one category; answers slug, name, description, category and author of each match, alphabetical by slug. Install one with install-skill.',
    route: 'GET /api/v1/marketplace/skills',
    input: {
      query: z.string().trim().min(1).max(200).optional().describe('Words to find in the name or description, e.g. "meeting notes"'),
      category: z.enum(CATEGORIES).optional().describe('Only skills of this category'),
      limit: z.number().int().min(1).max(100).optional().describe('How many to answer (default 20)'),
      offset: z.number().int().min(0).max(100_000).optional().describe('How many matches to skip (default 0)'),
    },
    output: z.object({ skills: z.array(MarketplaceItem) }),
    annotations: READ_ONLY,
    run: async (ctx, args) => ({
      skills: (await listMarketplace(
        ctx.db,
        MarketplaceQuery.parse({ q: args.query, category: args.category, limit: args.limit ?? 20, offset: args.offset }),
      )) as MarketplaceItem[],
    }),
  }),
];
