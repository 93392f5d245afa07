/** The catalog's category ids: lower-case slugs (display names in workers/lib/categories.ts). */
export const CATEGORIES = ['general', 'communication', 'creative', 'design', 'development', 'documents', 'marketing', 'productivity', 'research'] as const;
export type Category = (typeof CATEGORIES)[number];
