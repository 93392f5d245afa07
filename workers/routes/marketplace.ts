import { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { validate } from '../middleware/validate';
import {
  BundleDownload,
  CategoryItem,
  getMarketplaceBundle,
  getMarketplaceSkill,
  listCategories,
  listMarketplace,
  MarketplaceDetail,
  MarketplaceItem,
  MarketplaceQuery,
} from '../services/catalog';
import { SkillSlug } from '../services/skills';
import { cursorEnvelope, documented } from './openapi';

const SlugParam = z.object({ slug: SkillSlug });

/** The public catalog (spec 4.1): no credential needed. */
export const marketplaceRoutes = new Hono<AppEnv>()
  .get(
    '/',
    documented(
      'Marketplace',
      'Catalog skills, alphabetical. A bare array (limit/offset/category/q); with after_id or before_id, the cursor envelope',
      200,
      z.union([z.array(MarketplaceItem), cursorEnvelope(MarketplaceItem)]),
    ),
    validate('query', MarketplaceQuery),
    async (c) => c.json(await listMarketplace(c.var.db, c.req.valid('query'))),
  )
  .get('/categories', documented('Marketplace', 'Every category with its number of skills', 200, z.array(CategoryItem)), async (c) =>
    c.json(await listCategories(c.var.db)),
  )
  .get('/:slug', documented('Marketplace', 'One catalog skill with its prompt', 200, MarketplaceDetail), validate('param', SlugParam), async (c) =>
    c.json(await getMarketplaceSkill(c.var.db, c.req.valid('param').slug)),
  )
  .get(
    '/:slug/bundle',
    documented('Marketplace', "The skill's files (base64), for installing from this instance as a registry", 200, BundleDownload),
    validate('param', SlugParam),
    async (c) => c.json(await getMarketplaceBundle(c.var.db, c.env.BUCKET, c.req.valid('param').slug)),
  );
