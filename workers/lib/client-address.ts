/**
 * The key per-address limits count under. An IPv4 address is one key; an IPv6 address counts
 * as its /64, the smallest block a provider hands to one customer (RFC 6177), so whoever holds
 * one cannot step past a limit by moving to another address of the same block. An
 * IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address.
 */
export function addressKey(ip: string | null): string {
  if (ip === null || ip === '') return 'unknown';
  const hextets = ipv6Hextets(ip);
  if (!hextets) return ip.slice(0, 64);
  if (hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff) {
    return [hextets[6]! >> 8, hextets[6]! & 0xff, hextets[7]! >> 8, hextets[7]! & 0xff].join('.');
  }
  return `${hextets
    .slice(0, 4)
    .map((h) => h.toString(16))
    .join(':')}::/64`;
}

const HEXTET = /^[0-9a-f]{1,4}$/i;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The eight 16-bit groups of an IPv6 address in text form (with `::` and a dotted IPv4 tail), or null. */
function ipv6Hextets(text: string): number[] | null {
  if (!text.includes(':')) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (half: string | undefined): number[] | null => {
    if (!half) return [];
    const out: number[] = [];
    const parts = half.split(':');
    for (const [i, part] of parts.entries()) {
      const v4 = i === parts.length - 1 ? IPV4.exec(part) : null;
      if (v4) {
        const bytes = v4.slice(1).map(Number);
        if (bytes.some((b) => b > 255)) return null;
        out.push((bytes[0]! << 8) | bytes[1]!, (bytes[2]! << 8) | bytes[3]!);
      } else if (HEXTET.test(part)) out.push(parseInt(part, 16));
      else return null;
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  if (!head || !tail) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...Array<number>(missing).fill(0), ...tail] : null;
}
