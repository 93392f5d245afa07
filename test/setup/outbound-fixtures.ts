import type { IncomingMessage, ServerResponse } from 'node:http';
import { deflateRawSync, gzipSync } from 'node:zlib';

/**
 * Hostile answers under `/outbound/` for test/security/outbound.test.ts: a redirect to any
 * `?to=` URL, a 500 whose body carries MARKER, a body shaped like a tar header that carries
 * MARKER where a file name would be, and archives whose headers understate what they expand
 * to (a gzip with a false size trailer, a zip with false declared sizes). Built on first
 * request: the large archives are small compressed but take a moment to make.
 */
export const OUTBOUND_MARKER = 'fixture-internal-body-9f3a';

/** More than the service's 64 MiB expansion cap (workers/lib/archive.ts). */
const EXPANDED = 65 * 1024 * 1024;

const SKILL_MD = Buffer.from('---\nname: lying-archive\ndescription: Understates its size.\n---\nYou should never be installed.\n');

/** One ustar header block for a regular file. */
function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0);
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136);
  header.write('        ', 148);
  header.write('0', 156);
  header.write('ustar\x0000', 257);
  const sum = header.reduce((n: number, b: number) => n + b, 0);
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
}

const padded = (data: Buffer) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);

/**
 * A tar.gz holding a valid skill, then 65 MiB of zeros (which a tar reader takes for the end of
 * the archive), whose trailer claims it expands to 4 KiB: read only as far as the trailer says,
 * it is a harmless one-file skill.
 */
function lyingGzip(): Buffer {
  const gz = gzipSync(Buffer.concat([tarHeader('SKILL.md', SKILL_MD.length), padded(SKILL_MD), Buffer.alloc(EXPANDED)]), { level: 9 });
  gz.writeUInt32LE(4096, gz.length - 4);
  return gz;
}

/** A zip of SKILL.md and `assets/zeros.bin`, whose 65 MiB of zeros both headers declare as 16 bytes. */
function lyingZip(): Buffer {
  const entries = [
    { name: 'SKILL.md', data: SKILL_MD, declared: SKILL_MD.length },
    { name: 'assets/zeros.bin', data: Buffer.alloc(EXPANDED), declared: 16 },
  ];
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name);
    const compressed = deflateRawSync(entry.data, { level: 9 });
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(entry.declared, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(compressed.length, 20);
    central.writeUInt32LE(entry.declared, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, compressed);
    centrals.push(central, name);
    offset += local.length + name.length + compressed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** What an internal service might answer: text where a tar reader looks for a file name, and an unknown entry type. */
function leakyBody(): Buffer {
  const body = Buffer.alloc(1024, ' ');
  body.write(`${OUTBOUND_MARKER} secret=1`, 0);
  body.write('Z', 156);
  return body;
}

const built = new Map<string, Buffer>();
const once = (name: string, build: () => Buffer) => built.get(name) ?? built.set(name, build()).get(name)!;

export function serveOutbound(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  switch (url.pathname) {
    case '/outbound/redirect':
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
      return;
    case '/outbound/status-500':
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`${OUTBOUND_MARKER}: internal error`);
      return;
    case '/outbound/leaky.tar':
      res.writeHead(200, { 'content-type': 'application/x-tar' }).end(leakyBody());
      return;
    case '/outbound/lying.tar.gz':
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(once('gz', lyingGzip));
      return;
    case '/outbound/lying.zip':
      res.writeHead(200, { 'content-type': 'application/zip' }).end(once('zip', lyingZip));
      return;
    default:
      res.writeHead(404).end();
  }
}
