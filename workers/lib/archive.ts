import { gunzipSync, unzipSync } from 'fflate';
import { BundleError, type BundleFile } from './bundle';

/** Caps on what an archive may expand to, before a bundle is picked out of it. */
export const ARCHIVE_LIMITS = { entries: 5000, expandedBytes: 64 * 1024 * 1024 } as const;

const tooLarge = () => new BundleError('archive_too_large', `The archive expands beyond ${ARCHIVE_LIMITS.expandedBytes} bytes`);
const decoder = new TextDecoder();

const isZip = (b: Uint8Array) => b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04;
const isGzip = (b: Uint8Array) => b[0] === 0x1f && b[1] === 0x8b;

/**
 * Zip entries whose Unix mode marks a symlink, from the central directory (fflate does not
 * expose file attributes): such an entry's content is a link target, never a file to trust.
 */
function zipSymlinks(bytes: Uint8Array): Set<string> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const links = new Set<string>();
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 65_557); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new BundleError('archive', 'The zip archive has no central directory');
  let offset = view.getUint32(end + 16, true);
  const entries = view.getUint16(end + 10, true);
  for (let n = 0; n < entries && offset + 46 <= bytes.length; n++) {
    if (view.getUint32(offset, true) !== 0x02014b50) break;
    const madeBy = view.getUint16(offset + 4, true) >> 8;
    const nameLength = view.getUint16(offset + 28, true);
    const extraLength = view.getUint16(offset + 30, true);
    const commentLength = view.getUint16(offset + 32, true);
    const mode = view.getUint32(offset + 38, true) >>> 16;
    const name = decoder.decode(bytes.subarray(offset + 46, offset + 46 + nameLength));
    if (madeBy === 3 && (mode & 0o170000) === 0o120000) links.add(name);
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return links;
}

function readZip(bytes: Uint8Array): BundleFile[] {
  const links = zipSymlinks(bytes);
  let expanded = 0;
  let count = 0;
  const entries = unzipSync(bytes, {
    filter: (file) => {
      count += 1;
      expanded += file.originalSize;
      if (count > ARCHIVE_LIMITS.entries || expanded > ARCHIVE_LIMITS.expandedBytes) throw tooLarge();
      if (links.has(file.name)) throw new BundleError('symlink', `Symlinks are not allowed: ${file.name}`);
      return !file.name.endsWith('/');
    },
  });
  return Object.entries(entries).map(([path, data]) => ({ path, bytes: data }));
}

const octal = (field: Uint8Array) => parseInt(decoder.decode(field).replace(/\0.*$/s, '').trim() || '0', 8);
const text = (field: Uint8Array) => decoder.decode(field).replace(/\0.*$/s, '');

/** pax extended header records: `<length> <key>=<value>\n`. */
function paxPath(data: Uint8Array): string | undefined {
  for (const line of decoder.decode(data).split('\n')) {
    const match = /^\d+ path=(.*)$/s.exec(line);
    if (match) return match[1];
  }
  return undefined;
}

/** POSIX ustar with pax headers (what git hosts serve): regular files only, links refused. */
function readTar(bytes: Uint8Array): BundleFile[] {
  const files: BundleFile[] = [];
  let offset = 0;
  let nextPath: string | undefined;
  while (offset + 512 <= bytes.length) {
    const header = bytes.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const size = octal(header.subarray(124, 136));
    const type = String.fromCharCode(header[156]!);
    const prefix = text(header.subarray(345, 500));
    const name = nextPath ?? (prefix ? `${prefix}/${text(header.subarray(0, 100))}` : text(header.subarray(0, 100)));
    const data = bytes.subarray(offset + 512, offset + 512 + size);
    if (data.length < size) throw new BundleError('archive', 'The tar archive is truncated');
    offset += 512 + Math.ceil(size / 512) * 512;
    nextPath = undefined;
    if (type === 'x') nextPath = paxPath(data);
    else if (type === 'g' || type === '5') continue;
    else if (type === '0' || type === '\0' || type === '7') {
      if (files.length >= ARCHIVE_LIMITS.entries) throw tooLarge();
      files.push({ path: name, bytes: data });
    } else if (type === '1' || type === '2') throw new BundleError('symlink', `Links are not allowed: ${name}`);
    else throw new BundleError('unsafe_path', `Unsupported tar entry type ${JSON.stringify(type)}: ${name}`);
  }
  return files;
}

function gunzip(bytes: Uint8Array): Uint8Array {
  // The trailer's ISIZE (size mod 2^32) refuses a gzip bomb before any inflation.
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 18 || view.getUint32(bytes.length - 4, true) > ARCHIVE_LIMITS.expandedBytes) throw tooLarge();
  return gunzipSync(bytes);
}

/** Drops the single folder every entry sits in (`owner-repo-sha/` in git host archives). */
function stripCommonRoot(files: BundleFile[]): BundleFile[] {
  const first = files[0]?.path.split('/')[0];
  if (!first || !files.every((f) => f.path.startsWith(`${first}/`))) return files;
  return files.map((f) => ({ ...f, path: f.path.slice(first.length + 1) }));
}

/**
 * The files of a zip, tar or tar.gz archive, with one common top folder removed; with
 * `subdir`, only the files below that folder (a skill inside a larger repository).
 */
export function readArchive(bytes: Uint8Array, subdir?: string): BundleFile[] {
  const raw = isZip(bytes) ? readZip(bytes) : readTar(isGzip(bytes) ? gunzip(bytes) : bytes);
  const files = stripCommonRoot(raw.map((f) => ({ ...f, path: f.path.replace(/^\.\//, '') })).filter((f) => f.path !== ''));
  if (!subdir) return files;
  const prefix = `${subdir.replace(/^\/+|\/+$/g, '')}/`;
  return files.filter((f) => f.path.startsWith(prefix)).map((f) => ({ ...f, path: f.path.slice(prefix.length) }));
}
