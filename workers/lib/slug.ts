import { randomBytes } from './crypto';

/** Spec 4.6: workspace slugs. Lower-case letters, digits and single hyphens, 2..48 characters. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){1,47}$/;

const suffix = () => Array.from(randomBytes(4), (b) => (b % 36).toString(36)).join('');

/** A slug derived from a display name, with a random tail so it is almost surely free. */
export const slugFrom = (name: string): string => {
  const base = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${base || 'workspace'}-${suffix()}`;
};
