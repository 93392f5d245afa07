import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { Deflate } from 'fflate';

/** R2 multipart parts must all have one size, but the last, of at least 5 MiB. */
export const PART_BYTES = 8 * 1024 * 1024;
/** R2 takes at most 10,000 parts in one upload. */
const MAX_PARTS = 10_000;
export const MAX_ARCHIVE_BYTES = PART_BYTES * MAX_PARTS;

export class ArchiveTooLarge extends Error {
  constructor() {
    super(`The archive would exceed ${MAX_ARCHIVE_BYTES / 2 ** 30} GiB`);
  }
}

/** What one file of the archive held, before compression. */
export interface WrittenFile {
  bytes: number;
  sha256: string;
}

/** A file as the central directory lists it. */
export interface ZipEntry {
  path: string;
  crc: number;
  compressed: number;
  size: number;
  /** Where its local header starts in the archive. */
  offset: number;
}

/**
 * How far an upload got, between two files: the parts uploaded, the archive's length, and its
 * last bytes not yet in a part (less than a part). A writer made from it goes on from there.
 */
export interface UploadState {
  parts: R2UploadedPart[];
  offset: number;
  tail: Uint8Array;
}

/** Hands a file's bytes to the archive, in order; resolves once they are compressed and any full part is uploaded. */
export type Push = (bytes: Uint8Array) => Promise<void>;

const U32 = 0xffff_ffff;
const U16 = 0xffff;
/** General purpose flags: sizes follow the data (bit 3), names are UTF-8 (bit 11). */
const FLAGS = 0x0808;
const DEFLATED = 8;
const encoder = new TextEncoder();

/** Little-endian fields, as zip records are laid out. */
function record(fields: readonly (readonly [bytes: 2 | 4 | 8, value: number])[], tail: Uint8Array = new Uint8Array(0)): Uint8Array {
  const length = fields.reduce((sum, [bytes]) => sum + bytes, 0);
  const out = new Uint8Array(length + tail.length);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const [bytes, value] of fields) {
    if (bytes === 2) view.setUint16(at, value, true);
    else if (bytes === 4) view.setUint32(at, value, true);
    else view.setBigUint64(at, BigInt(value), true);
    at += bytes;
  }
  out.set(tail, length);
  return out;
}

/** MS-DOS time and date (two-second resolution, from 1980). */
function dosTime(at: Date): { time: number; date: number } {
  return {
    time: (at.getUTCHours() << 11) | (at.getUTCMinutes() << 5) | (at.getUTCSeconds() >> 1),
    date: (Math.max(at.getUTCFullYear() - 1980, 0) << 9) | ((at.getUTCMonth() + 1) << 5) | at.getUTCDate(),
  };
}

const needsZip64 = (entry: ZipEntry) => entry.size >= U32 || entry.compressed >= U32 || entry.offset >= U32;

/** A central directory header; with Zip64 (any size or offset past 32 bits) all three live in its extra field. */
function centralHeader(entry: ZipEntry, when: { time: number; date: number }): Uint8Array {
  const name = encoder.encode(entry.path);
  const zip64 = needsZip64(entry);
  const extra = zip64
    ? record([
        [2, 0x0001],
        [2, 24],
        [8, entry.size],
        [8, entry.compressed],
        [8, entry.offset],
      ])
    : new Uint8Array(0);
  const version = zip64 ? 45 : 20;
  const head = record([
    [4, 0x02014b50],
    [2, version],
    [2, version],
    [2, FLAGS],
    [2, DEFLATED],
    [2, when.time],
    [2, when.date],
    [4, entry.crc],
    [4, zip64 ? U32 : entry.compressed],
    [4, zip64 ? U32 : entry.size],
    [2, name.length],
    [2, extra.length],
    [2, 0],
    [2, 0],
    [2, 0],
    [4, 0],
    [4, zip64 ? U32 : entry.offset],
  ]);
  const out = new Uint8Array(head.length + name.length + extra.length);
  out.set(head);
  out.set(name, head.length);
  out.set(extra, head.length + name.length);
  return out;
}

/** The end of the archive: Zip64 end records when the count, size or offset of the directory outgrow the classic ones, then the classic one. */
function endRecords(count: number, directoryBytes: number, directoryOffset: number): Uint8Array[] {
  const zip64 = count >= U16 || directoryBytes >= U32 || directoryOffset >= U32;
  const classic = record([
    [4, 0x06054b50],
    [2, 0],
    [2, 0],
    [2, zip64 ? U16 : count],
    [2, zip64 ? U16 : count],
    [4, zip64 ? U32 : directoryBytes],
    [4, zip64 ? U32 : directoryOffset],
    [2, 0],
  ]);
  if (!zip64) return [classic];
  const end64Offset = directoryOffset + directoryBytes;
  return [
    record([
      [4, 0x06064b50],
      [8, 44],
      [2, 45],
      [2, 45],
      [4, 0],
      [4, 0],
      [8, count],
      [8, count],
      [8, directoryBytes],
      [8, directoryOffset],
    ]),
    record([
      [4, 0x07064b50],
      [4, 0],
      [8, end64Offset],
      [4, 1],
    ]),
    classic,
  ];
}

/**
 * A zip archive (each file deflated, Zip64 records where the classic fields are too small)
 * written into an R2 multipart upload as it is produced: at most one part and one file's
 * compressor are in memory, whatever the archive's size. Between two files its `state()` can be
 * kept, and a writer made from it (with the same upload) goes on where this one stopped.
 */
export class ZipUpload {
  readonly #upload: R2MultipartUpload;
  readonly #when: { time: number; date: number };
  #pending: Uint8Array[];
  #pendingBytes: number;
  #parts: R2UploadedPart[];
  #size: number;

  constructor(upload: R2MultipartUpload, mtime: number, from: UploadState = { parts: [], offset: 0, tail: new Uint8Array(0) }) {
    this.#upload = upload;
    this.#when = dosTime(new Date(mtime));
    this.#parts = [...from.parts];
    this.#size = from.offset;
    this.#pending = from.tail.length > 0 ? [from.tail] : [];
    this.#pendingBytes = from.tail.length;
  }

  #emit(chunk: Uint8Array): void {
    this.#size += chunk.length;
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
  }

  #take(bytes: number): Uint8Array {
    const out = new Uint8Array(bytes);
    let filled = 0;
    while (filled < bytes) {
      const head = this.#pending[0]!;
      const taken = Math.min(head.length, bytes - filled);
      out.set(head.subarray(0, taken), filled);
      filled += taken;
      if (taken === head.length) this.#pending.shift();
      else this.#pending[0] = head.subarray(taken);
    }
    this.#pendingBytes -= bytes;
    return out;
  }

  /** Uploads every full part that is buffered; with `last`, also what remains. */
  async #drain(last: boolean): Promise<void> {
    while (this.#pendingBytes >= PART_BYTES || (last && this.#pendingBytes > 0)) {
      if (this.#parts.length >= MAX_PARTS) throw new ArchiveTooLarge();
      const part = this.#take(Math.min(PART_BYTES, this.#pendingBytes));
      this.#parts.push(await this.#upload.uploadPart(this.#parts.length + 1, part));
    }
  }

  /**
   * Adds the file at `path`, whose bytes `write` pushes; answers its size and SHA-256, and its
   * entry for the central directory. Files are written one after the other.
   */
  async file(path: string, write: (push: Push) => Promise<void>): Promise<{ written: WrittenFile; entry: ZipEntry }> {
    const offset = this.#size;
    const name = encoder.encode(path);
    this.#emit(
      record(
        [
          [4, 0x04034b50],
          [2, 20],
          [2, FLAGS],
          [2, DEFLATED],
          [2, this.#when.time],
          [2, this.#when.date],
          [4, 0],
          [4, 0],
          [4, 0],
          [2, name.length],
          [2, 0],
        ],
        name,
      ),
    );
    const hash = createHash('sha256');
    let crc = 0;
    let size = 0;
    let compressed = 0;
    const deflate = new Deflate({ level: 6 }, (chunk) => {
      compressed += chunk.length;
      this.#emit(chunk);
    });
    await write(async (chunk) => {
      hash.update(chunk);
      crc = crc32(chunk, crc);
      size += chunk.length;
      deflate.push(chunk);
      await this.#drain(false);
    });
    deflate.push(new Uint8Array(0), true);
    const wide = size >= U32 || compressed >= U32;
    this.#emit(
      record([
        [4, 0x08074b50],
        [4, crc],
        [wide ? 8 : 4, compressed],
        [wide ? 8 : 4, size],
      ]),
    );
    await this.#drain(false);
    return { written: { bytes: size, sha256: hash.digest('hex') }, entry: { path, crc, compressed, size, offset } };
  }

  /** Where the upload stands between two files. */
  state(): UploadState {
    const tail = this.#take(this.#pendingBytes);
    this.#pending = tail.length > 0 ? [tail] : [];
    this.#pendingBytes = tail.length;
    return { parts: [...this.#parts], offset: this.#size, tail };
  }

  /** Writes the central directory of `entries` (every file, in order) and completes the upload; answers the archive's size in bytes. */
  async finish(entries: readonly ZipEntry[]): Promise<number> {
    const directoryOffset = this.#size;
    for (const entry of entries) {
      this.#emit(centralHeader(entry, this.#when));
      await this.#drain(false);
    }
    for (const end of endRecords(entries.length, this.#size - directoryOffset, directoryOffset)) this.#emit(end);
    await this.#drain(true);
    await this.#upload.complete(this.#parts);
    return this.#size;
  }
}
