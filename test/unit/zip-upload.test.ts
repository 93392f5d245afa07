import { env } from 'cloudflare:workers';
import { unzipSync } from 'fflate';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PART_BYTES, ZipUpload } from '../../workers/lib/zip-upload';

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
    const small = await zip.file('dir/small.txt', (push) => push(new TextEncoder().encode('small')));
    const size = await zip.finish();

    expect(partSizes.slice(0, -1)).toEqual([PART_BYTES, PART_BYTES]);
    expect(partSizes.at(-1)).toBeLessThanOrEqual(PART_BYTES);
    const stored = new Uint8Array(await (await env.BUCKET.get(key))!.arrayBuffer());
    expect(stored.length).toBe(size);
    const files = unzipSync(stored);
    const whole = new Uint8Array(chunks.length * 64 * 1024);
    chunks.forEach((chunk, i) => whole.set(chunk, i * 64 * 1024));
    const digest = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
    expect(digest(files['big.bin']!)).toBe(digest(whole));
    expect(big).toEqual({ bytes: whole.length, sha256: digest(whole) });
    expect(small).toEqual({ bytes: 5, sha256: createHash('sha256').update('small').digest('hex') });
    expect(new TextDecoder().decode(files['dir/small.txt'])).toBe('small');
  });
});
