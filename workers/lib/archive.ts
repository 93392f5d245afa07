import { Gunzip, Inflate, strFromU8 } from 'fflate';
import { BundleError, type BundleFile } from './bundle';

/** Caps on what an archive may expand to, before a bundle is picked out of it. */
export const ARCHIVE_LIMITS = { entries: 5000, expandedBytes: 64 * 1024 * 1024 } as const;

const tooLarge = () => new BundleError('archive_too_large', `The archive expands beyond ${ARCHIVE_LIMITS.expandedBytes} bytes`);
const decoder = new TextDecoder();

const isZip = (b: Uint8Array) => b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04;
const isGzip = (b: Uint8Array) => b[0] === 0x1f && b[1] === 0x8b;

/**
 * Input goes to the inflater this much at a time: deflate expands at most about 1032 to 1, so a
 * slice yields at most about 4 MiB before it is counted (small slices also keep fflate's output
 * buffer small, which makes it several times faster than larger ones).
 */
const INFLATE_SLICE = 4 * 1024;

/**
 * What one archive has expanded to so far, across all its entries, counted as the bytes come
 * out of the inflater: the cap holds whatever sizes the archive's headers declare.
 */
class Expansion {
  #bytes = 0;
  add(length: number): void {
    this.#bytes += length;
    if (this.#bytes > ARCHIVE_LIMITS.expandedBytes) throw tooLarge();
  }
}

/** Inflates `input` through `stream` (raw deflate or gzip) a slice at a time, counting each piece as it comes. */
function inflate(input: Uint8Array, stream: Inflate | Gunzip, expansion: Expansion): Uint8Array {
  const pieces: Uint8Array[] = [];
  stream.ondata = (piece) => {
    expansion.add(piece.length);
    pieces.push(piece);
  };
  try {
    let at = 0;
    do {
      const end = at + INFLATE_SLICE;
      stream.push(input.subarray(at, end), end >= input.length);
      at = end;
    } while (at < input.length);
  } catch (error) {
    if (error instanceof BundleError) throw error;
    throw new BundleError('archive', 'The archive is corrupt: it could not be decompressed');
  }
  const out = new Uint8Array(pieces.reduce((n, piece) => n + piece.length, 0));
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.length;
  }
  return out;
}

const ZIP_CENTRAL = 0x02014b50;
const ZIP_LOCAL = 0x04034b50;
const ZIP_END = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_END = 0x06064b50;
const SATURATED = 0xffffffff;

const corruptZip = () => new BundleError('archive', 'The zip archive is corrupt');

interface ZipEntry {
  name: string;
  method: number;
  declaredSize: number;
  data: Uint8Array;
  /** Its Unix mode marks a symlink: the content is a link target, never a file to trust. */
  symlink: boolean;
}

/** A 64-bit little-endian field (exact below 2^53, far beyond any archive read here). */
const uint64 = (view: DataView, at: number) => view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32;

/** Where the Zip64 extra field (id 1) of a central directory record lies, or null. */
function zip64Extra(view: DataView, start: number, end: number): { at: number; end: number } | null {
  for (let at = start; at + 4 <= end; at += 4 + view.getUint16(at + 2, true)) {
    if (view.getUint16(at, true) === 1) return { at: at + 4, end: Math.min(end, at + 4 + view.getUint16(at + 2, true)) };
  }
  return null;
}

/**
 * The entries the central directory lists, each with its compressed data. Read here rather
 * than by fflate's unzipSync, which inflates into a buffer of the declared size and spends the
 * work of the whole entry whatever that size says.
 */
function zipEntries(bytes: Uint8Array): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 65_557); i--) {
    if (view.getUint32(i, true) === ZIP_END) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new BundleError('archive', 'The zip archive has no central directory');
  let count = view.getUint16(end + 10, true);
  let offset = view.getUint32(end + 16, true);
  if (end >= 20 && view.getUint32(end - 20, true) === ZIP64_LOCATOR) {
    const end64 = uint64(view, end - 12);
    if (end64 + 56 > bytes.length || view.getUint32(end64, true) !== ZIP64_END) throw corruptZip();
    count = uint64(view, end64 + 32);
    offset = uint64(view, end64 + 48);
  }
  if (count > ARCHIVE_LIMITS.entries) throw tooLarge();
  const entries: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (offset + 46 > bytes.length || view.getUint32(offset, true) !== ZIP_CENTRAL) throw corruptZip();
    const nameLength = view.getUint16(offset + 28, true);
    const extraStart = offset + 46 + nameLength;
    const extraEnd = extraStart + view.getUint16(offset + 30, true);
    if (extraEnd > bytes.length) throw corruptZip();
    // A saturated 32-bit size or offset is in the Zip64 extra field, the present ones in this order.
    const zip64 = zip64Extra(view, extraStart, extraEnd);
    const field = (at: number) => {
      const value = view.getUint32(offset + at, true);
      if (value !== SATURATED) return value;
      if (!zip64 || zip64.at + 8 > zip64.end) throw corruptZip();
      zip64.at += 8;
      return uint64(view, zip64.at - 8);
    };
    const declaredSize = field(24);
    const compressedSize = field(20);
    const local = field(42);
    if (local + 30 > bytes.length || view.getUint32(local, true) !== ZIP_LOCAL) throw corruptZip();
    const dataStart = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    if (dataStart + compressedSize > bytes.length) throw corruptZip();
    const utf8 = (view.getUint16(offset + 8, true) & 0x800) !== 0;
    const madeBy = view.getUint16(offset + 4, true) >> 8;
    const mode = view.getUint32(offset + 38, true) >>> 16;
    entries.push({
      name: strFromU8(bytes.subarray(offset + 46, extraStart), !utf8),
      method: view.getUint16(offset + 10, true),
      declaredSize,
      data: bytes.subarray(dataStart, dataStart + compressedSize),
      symlink: madeBy === 3 && (mode & 0o170000) === 0o120000,
    });
    offset = extraEnd + view.getUint16(offset + 32, true);
  }
  return entries;
}

function readZip(bytes: Uint8Array, expansion: Expansion): BundleFile[] {
  const files: BundleFile[] = [];
  let declared = 0;
  for (const entry of zipEntries(bytes)) {
    // Declared sizes over the cap are refused before any work; a false small one is caught by counting.
    declared += entry.declaredSize;
    if (declared > ARCHIVE_LIMITS.expandedBytes) throw tooLarge();
    if (entry.symlink) throw new BundleError('symlink', `Symlinks are not allowed: ${entry.name}`);
    if (entry.name.endsWith('/')) continue;
    if (entry.method === 0) {
      expansion.add(entry.data.length);
      files.push({ path: entry.name, bytes: entry.data });
    } else if (entry.method === 8) {
      files.push({ path: entry.name, bytes: inflate(entry.data, new Inflate(), expansion) });
    } else {
      throw new BundleError('archive', `Unsupported zip compression method ${entry.method}`);
    }
  }
  return files;
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

function gunzip(bytes: Uint8Array, expansion: Expansion): Uint8Array {
  // The trailer's ISIZE (size mod 2^32) refuses an honest gzip bomb before any inflation; a
  // false one is caught by counting.
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 18 || view.getUint32(bytes.length - 4, true) > ARCHIVE_LIMITS.expandedBytes) throw tooLarge();
  return inflate(bytes, new Gunzip(), expansion);
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
  const expansion = new Expansion();
  const raw = isZip(bytes) ? readZip(bytes, expansion) : readTar(isGzip(bytes) ? gunzip(bytes, expansion) : bytes);
  const files = stripCommonRoot(raw.map((f) => ({ ...f, path: f.path.replace(/^\.\//, '') })).filter((f) => f.path !== ''));
  if (!subdir) return files;
  const prefix = `${subdir.replace(/^\/+|\/+$/g, '')}/`;
  return files.filter((f) => f.path.startsWith(prefix)).map((f) => ({ ...f, path: f.path.slice(prefix.length) }));
}
