/**
 * How deeply JSON nests, measured without recursion: code that walks a value recursively (the
 * JSON Schema validator, JSON.stringify, structured clone to a Durable Object) overflows the
 * stack on a value a few thousand levels deep, so limits are checked before any of it runs.
 * Each object or array is one level; a scalar is level 0.
 */

const OPEN = [0x7b, 0x5b]; // { [
const CLOSE = [0x7d, 0x5d]; // } ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether the JSON text in `bytes` (UTF-8) opens more than `max` objects and arrays inside one another. */
export function jsonTextDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (OPEN.includes(byte)) {
      if (++depth > max) return true;
    } else if (CLOSE.includes(byte)) depth--;
  }
  return false;
}

/** Whether `value` holds objects and arrays more than `max` levels inside one another. */
export function valueDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item !== 'object' || item === null) continue;
    if (depth + 1 > max) return true;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return false;
}
