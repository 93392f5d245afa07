/**
 * Which hosts only the machine itself or a private network reaches. URLs that users, clients
 * and models supply must not lead the service there (server-side request forgery): cloud
 * metadata endpoints, the loopback interface, a LAN. Hosts are judged as the WHATWG URL parser
 * leaves them: IPv4 in any notation (`0x7f.1`, `2130706433`) is already dotted decimal, IPv6 is
 * bracketed and compressed, names are lower-case.
 */

const LOOPBACK_NAMES = /^(localhost|.*\.localhost)$/i;

/** `localhost`, `*.localhost`, 127.0.0.0/8 and `[::1]`: this machine. */
export const isLoopbackHost = (hostname: string) => LOOPBACK_NAMES.test(hostname) || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * Names that resolve only on this machine or inside a private network (`metadata.google.internal`
 * among them). A name without a dot resolves only through a local search domain (`metadata`).
 */
const PRIVATE_NAME = /(^|\.)(localhost|local|localdomain|internal|intranet|lan|home\.arpa)$/;

type Ipv4 = readonly [number, number, number, number];

/** Special-purpose IPv4 (RFC 6890 and successors): anything not globally reachable. */
function privateIpv4([a, b, c]: Ipv4): boolean {
  return (
    a === 0 || // "this network"
    a === 10 ||
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT (Alibaba's metadata service is 100.100.100.200)
    a === 127 ||
    (a === 169 && b === 254) || // link-local: the metadata service of most clouds
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // protocol assignments (Oracle's metadata 192.0.0.192), documentation
    (a === 192 && b === 88 && c === 99) || // 6to4 relay anycast
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224 // multicast, reserved, broadcast
  );
}

function ipv4Of(host: string): Ipv4 | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])] : null;
}

/** The eight 16-bit groups of a bracketed IPv6 literal as the URL parser writes it. */
function ipv6Of(host: string): number[] | null {
  const m = /^\[([0-9a-f:]+)\]$/.exec(host);
  if (!m) return null;
  const [head, tail] = m[1]!.split('::') as [string, string?];
  const groups = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const before = groups(head);
  const after = groups(tail);
  return tail === undefined ? before : [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
}

const embedded = (high: number, low: number): Ipv4 => [high >> 8, high & 0xff, low >> 8, low & 0xff];

/**
 * Only global unicast (2000::/3) is public, less its special blocks; addresses that carry an
 * IPv4 address (6to4, NAT64) are as private as the address they carry. Everything else,
 * IPv4-mapped and -compatible forms included, is refused.
 */
function privateIpv6(g: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return privateIpv4(embedded(g6, g7)); // NAT64 64:ff9b::/96
  if (g0 === 0x2002) return privateIpv4(embedded(g1, g2)); // 6to4
  return (
    (g0 & 0xe000) !== 0x2000 ||
    (g0 === 0x2001 && g1 < 0x200) || // 2001::/23 protocol assignments: Teredo, benchmarking, ORCHID
    (g0 === 0x2001 && g1 === 0xdb8) || // documentation
    (g0 === 0x3fff && g1 < 0x1000) // documentation (3fff::/20)
  );
}

/**
 * Whether `hostname` (a parsed URL's) is one only this machine or a private network reaches:
 * loopback, private, link-local, carrier-grade NAT, unique-local, multicast, unspecified,
 * documentation and benchmarking addresses, and local names, with or without a trailing dot.
 */
export function isPrivateHost(hostname: string): boolean {
  const ipv4 = ipv4Of(hostname);
  if (ipv4) return privateIpv4(ipv4);
  if (hostname.startsWith('[')) {
    // Anything this reading does not understand counts as private.
    const ipv6 = ipv6Of(hostname);
    return !ipv6 || ipv6.length !== 8 || ipv6.some((n) => !(n >= 0 && n <= 0xffff)) || privateIpv6(ipv6);
  }
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return !name.includes('.') || PRIVATE_NAME.test(name);
}
