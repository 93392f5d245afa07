import { z } from 'zod';
import { CATEGORIES, type Category } from '../../schema/categories';

/** What people read for each category id. */
export const CATEGORY_NAMES: Readonly<Record<Category, string>> = {
  general: 'General',
  communication: 'Communication',
  creative: 'Creative',
  design: 'Design',
  development: 'Development',
  documents: 'Documents',
  marketing: 'Marketing',
  productivity: 'Productivity',
  research: 'Research',
};

/**
 * A category as callers and bundles write it: the id or its display name, in any case
 * (`general`, `General`, `GENERAL`); always the lower-case id afterwards. The first alternative
 * is there for the OpenAPI document, which then lists the ids.
 */
export const CategoryId = z
  .union([
    z.enum(CATEGORIES),
    z
      .string()
      .trim()
      .max(40)
      .transform((value) => value.toLowerCase())
      .pipe(z.enum(CATEGORIES)),
  ])
  .describe('A category id (any case; the display name works too)');
