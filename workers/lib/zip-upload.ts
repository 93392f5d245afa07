import { createHash } from 'node:crypto';
import { Zip, ZipDeflate } from 'fflate';

/** R2 multipart parts must all have one size, but the last, of at least 5 MiB. */
export const PART_BYTES = 8 * 1024 * 1024;
/** fflate writes no Zip64 records: an archive's offsets and sizes must fit in 32 bits. */
export const MAX_ARCHIVE_BYTES = 2 ** 32 - 1;

export class ArchiveTooLarge extends Error {
  constructor() {
    super(`The archive would exceed ${MAX_ARCHIVE_BYTES} bytes`);
  }
}

/** What one file of the archive held, before compression. */
export interface WrittenFile {
  bytes: number;
  sha256: string;
}

/** Hands a file's bytes to the archive, in order; resolves once they are compressed and any full part is uploaded. */
export type Push = (bytes: Uint8Array) => Promise<void>;

/**
 * A zip archive (each file deflated) written into an R2 multipart upload as it is produced: at
 * most one part and one file's compressor are in memory, whatever the archive's size.
 */
export class ZipUpload {
  readonly #upload: R2MultipartUpload;
  readonly #mtime: Date;
  readonly #zip: Zip;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #parts: R2UploadedPart[] = [];
  #size = 0;
  #failure: Error | undefined;

  constructor(upload: R2MultipartUpload, mtime: number) {
    this.#upload = upload;
    this.#mtime = new Date(mtime);
    this.#zip = new Zip((error, chunk) => {
      if (error) this.#failure = error;
      else this.#take(chunk);
    });
  }

  #take(chunk: Uint8Array): void {
    this.#size += chunk.length;
    if (this.#size > MAX_ARCHIVE_BYTES) this.#failure = new ArchiveTooLarge();
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
  }

  /** Uploads every full part that is buffered; with `last`, also what remains. */
  async #drain(last: boolean): Promise<void> {
    if (this.#failure) throw this.#failure;
    while (this.#pendingBytes >= PART_BYTES || (last && this.#pendingBytes > 0)) {
      const part = new Uint8Array(Math.min(PART_BYTES, this.#pendingBytes));
      let filled = 0;
      while (filled < part.length) {
        const head = this.#pending[0]!;
        const taken = Math.min(head.length, part.length - filled);
        part.set(head.subarray(0, taken), filled);
        filled += taken;
        if (taken === head.length) this.#pending.shift();
        else this.#pending[0] = head.subarray(taken);
      }
      this.#pendingBytes -= part.length;
      this.#parts.push(await this.#upload.uploadPart(this.#parts.length + 1, part));
    }
  }

  /**
   * Adds the file at `path`, whose bytes `write` pushes; answers its size and SHA-256. Files are
   * written one after the other: fflate would buffer a second file started before the first ends.
   */
  async file(path: string, write: (push: Push) => Promise<void>): Promise<WrittenFile> {
    const entry = new ZipDeflate(path, { level: 6 });
    entry.mtime = this.#mtime;
    this.#zip.add(entry);
    const hash = createHash('sha256');
    let bytes = 0;
    await write(async (chunk) => {
      hash.update(chunk);
      bytes += chunk.length;
      entry.push(chunk);
      await this.#drain(false);
    });
    entry.push(new Uint8Array(0), true);
    await this.#drain(false);
    return { bytes, sha256: hash.digest('hex') };
  }

  /** Writes the central directory and completes the upload; answers the archive's size in bytes. */
  async finish(): Promise<number> {
    this.#zip.end();
    await this.#drain(true);
    await this.#upload.complete(this.#parts);
    return this.#size;
  }
}
