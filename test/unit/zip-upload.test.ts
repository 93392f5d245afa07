import { env } from 'cloudflare:workers';
import { unzipSync } from 'fflate';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PART_BYTES, ZipUpload } from '../../workers/lib/zip-upload';

const digest = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const text = (value: string) => new TextEncoder().encode(value);
const stored = async (key: string) => new Uint8Array(await (await env.BUCKET.get(key))!.arrayBuffer());

/** The end of central directory record's fields, and whether the Zip64 end records precede it. */
function endOf(archive: Uint8Array) {
  const view = new DataView(archive.buffer, archive.byteOffset, archive.byteLength);
  const at = archive.length - 22;
  expect(view.getUint32(at, true)).toBe(0x06054b50);
  const locator = at - 20;
  const zip64 = view.getUint32(locator, true) === 0x07064b50;
  return {
    entries: view.getUint16(at + 10, true),
    zip64,
    entries64: zip64 ? Number(view.getBigUint64(Number(view.getBigUint64(locator + 8, true)) + 32, true)) : null,
  };
}

describe('ZipUpload', () => {
  it('writes an archive larger than a part in equal parts, each file whole and with its SHA-256', async () => {
    const key = `tests/zip-upload/${crypto.randomUUID()}.zip`;
    const upload = await env.BUCKET.createMultipartUpload(key);
    const partSizes: number[] = [];
    const recording = Object.assign(Object.create(upload) as R2MultipartUpload, {
      uploadPart: (n: number, bytes: Uint8Array) => {
        partSizes.push(bytes.length);
        return upload.uploadPart(n, bytes);
      },
      complete: (parts: R2UploadedPart[]) => upload.complete(parts),
    });
    // Random bytes do not compress: 20 MiB of them make an archive of three parts.
    const chunks = Array.from({ length: 320 }, () => crypto.getRandomValues(new Uint8Array(64 * 1024)));
    const zip = new ZipUpload(recording, Date.UTC(2026, 0, 2));
    const big = await zip.file('big.bin', async (push) => {
      for (const chunk of chunks) await push(chunk);
    });
    const small = await zip.file('dir/small.txt', (push) => push(text('small')));
    const size = await zip.finish([big.entry, small.entry]);

    expect(partSizes.slice(0, -1)).toEqual([PART_BYTES, PART_BYTES]);
    expect(partSizes.at(-1)).toBeLessThanOrEqual(PART_BYTES);
    const archive = await stored(key);
    expect(archive.length).toBe(size);
    const files = unzipSync(archive);
    const whole = new Uint8Array(chunks.length * 64 * 1024);
    chunks.forEach((chunk, i) => whole.set(chunk, i * 64 * 1024));
    expect(digest(files['big.bin']!)).toBe(digest(whole));
    expect(big.written).toEqual({ bytes: whole.length, sha256: digest(whole) });
    expect(small.written).toEqual({ bytes: 5, sha256: digest(text('small')) });
    expect(new TextDecoder().decode(files['dir/small.txt'])).toBe('small');
    expect(endOf(archive).zip64).toBe(false);
  });

  it('goes on from a state kept between two files, in a new writer, as if it had never stopped', async () => {
    const key = `tests/zip-upload/${crypto.randomUUID()}.zip`;
    const upload = await env.BUCKET.createMultipartUpload(key);
    const first = new ZipUpload(upload, Date.UTC(2026, 0, 2));
    const noise = crypto.getRandomValues(new Uint8Array(60_000));
    const a = await first.file('a.bin', async (push) => {
      // 9 MiB of incompressible bytes: one part is uploaded, the rest is the state's tail.
      for (let i = 0; i < 160; i++) await push(noise);
    });
    const state = first.state();
    expect(state.parts).toHaveLength(1);
    expect(state.tail.length).toBe(state.offset - PART_BYTES);

    const second = new ZipUpload(env.BUCKET.resumeMultipartUpload(key, upload.uploadId), Date.UTC(2026, 0, 2), state);
    const b = await second.file('b.txt', (push) => push(text('after the restart')));
    await second.finish([a.entry, b.entry]);

    const files = unzipSync(await stored(key));
    expect(Object.keys(files)).toEqual(['a.bin', 'b.txt']);
    expect(files['a.bin']!.length).toBe(160 * noise.length);
    expect(digest(files['a.bin']!)).toBe(a.written.sha256);
    expect(new TextDecoder().decode(files['b.txt'])).toBe('after the restart');
  });

  it('writes Zip64 end records for more than 65,535 files, which an unzip reads whole', async () => {
    const key = `tests/zip-upload/${crypto.randomUUID()}.zip`;
    const upload = await env.BUCKET.createMultipartUpload(key);
    const zip = new ZipUpload(upload, Date.UTC(2026, 0, 2));
    // Writing 65,540 files takes minutes: the central directory lists one file under as many names.
    const { entry } = await zip.file('f/0', (push) => push(text('same bytes')));
    const count = 65_540;
    await zip.finish(Array.from({ length: count }, (_, i) => ({ ...entry, path: `f/${i}` })));

    const archive = await stored(key);
    expect(endOf(archive)).toEqual({ entries: 0xffff, zip64: true, entries64: count });
    const files = unzipSync(archive);
    expect(Object.keys(files)).toHaveLength(count);
    expect(new TextDecoder().decode(files[`f/${count - 1}`])).toBe('same bytes');
  });
});
