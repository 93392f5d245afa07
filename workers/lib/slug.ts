import { randomBytes } from './crypto';

/** Spec 4.6: workspace slugs. Lower-case letters, digits and single hyphens, 2..48 characters. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){1,47}$/;

/**
 * Eight base-36 characters: 36^8 (about 2.8 × 10^12) tails, so even a name millions of people
 * share ("Test User", "My Workspace") meets a taken slug about once in a million sign-ups; four
 * met one within a few thousand.
 */
const TAIL = 8;
const suffix = () => Array.from(randomBytes(TAIL), (b) => (b % 36).toString(36)).join('');

/** A slug derived from a display name, with a random tail so it is almost surely free. */
export const slugFrom = (name: string): string => {
  const base = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48 - TAIL - 1)
    .replace(/-+$/, '');
  return `${base || 'workspace'}-${suffix()}`;
};
