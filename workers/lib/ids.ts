import { now } from './clock';
import { randomBytes } from './crypto';

/** Public id prefixes of spec 2.1 for integer-keyed resources (and ours: `exp` workspace exports, `whk` webhook endpoints, `dlv` deliveries, `tdl` trigger deliveries, `eval` skill evals). */
export type IdPrefix = 'exec' | 'art' | 'sec' | 'key' | 'exp' | 'whk' | 'dlv' | 'tdl' | 'eval';

export const formatId = (prefix: IdPrefix, id: number): string => `${prefix}_${id}`;

/**
 * Accepts `key_12` or `12` (spec 2.1: "the prefixed form or the raw numeric form").
 * Returns null for anything else, so callers answer 404 rather than 500.
 */
export const parseId = (prefix: IdPrefix, raw: string): number | null => {
  const digits = raw.startsWith(`${prefix}_`) ? raw.slice(prefix.length + 1) : raw;
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return null;
  const id = Number(digits);
  return Number.isSafeInteger(id) ? id : null;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `raw` has the shape of the UUIDs the service makes (lowercase hex): anything else names nothing, so callers answer 404 without a query. */
export const isUuid = (raw: string): boolean => UUID.test(raw);

/** A keyset cursor over UUID ids is the id itself; anything else is no cursor of ours (null). */
export const parseUuidCursor = (raw: string): string | null => (isUuid(raw) ? raw : null);

/**
 * UUIDv7 (RFC 9562): opaque like a v4 but ordered by creation time, so cursor pagination over
 * string ids (workspaces, users) walks in creation order.
 */
export const uuidv7 = (): string => {
  const bytes = randomBytes(16);
  let ms = now();
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
