import { blobKey, BUNDLE_TYPE, type BundleFile, bundleManifest, type BundleManifest, manifestKey } from './bundle';

export interface StoredBundle {
  contentChecksum: string;
  storagePath: string;
  bundleType: typeof BUNDLE_TYPE;
  filesCount: number;
}

/**
 * Stores a bundle in R2: each file once under its SHA-256 (identical files across skills and
 * versions share a blob), then the manifest under the bundle checksum. Idempotent.
 */
export async function storeBundle(bucket: R2Bucket, files: BundleFile[]): Promise<StoredBundle> {
  const manifest = await bundleManifest(files);
  const byPath = new Map(files.map((f) => [f.path, f]));
  const bySha = new Map(manifest.files.map((e) => [e.sha256, byPath.get(e.path)!]));
  await Promise.all(
    [...bySha].map(async ([sha, file]) => {
      if (!(await bucket.head(blobKey(sha)))) await bucket.put(blobKey(sha), file.bytes, { sha256: sha });
    }),
  );
  const storagePath = manifestKey(manifest.checksum);
  await bucket.put(storagePath, JSON.stringify(manifest), { httpMetadata: { contentType: 'application/json' } });
  return { contentChecksum: manifest.checksum, storagePath, bundleType: BUNDLE_TYPE, filesCount: manifest.files.length };
}

/** The paths of a stored bundle's files, from its manifest alone; null if it is missing. */
export async function bundlePaths(bucket: R2Bucket, storagePath: string): Promise<string[] | null> {
  const object = await bucket.get(storagePath);
  return object ? ((await object.json()) as BundleManifest).files.map((f) => f.path) : null;
}

/** Reads a stored bundle back; null if its manifest or any blob is missing. */
export async function loadBundle(bucket: R2Bucket, storagePath: string): Promise<BundleFile[] | null> {
  const object = await bucket.get(storagePath);
  if (!object) return null;
  const manifest = (await object.json()) as BundleManifest;
  const files = await Promise.all(
    manifest.files.map(async (entry) => {
      const blob = await bucket.get(blobKey(entry.sha256));
      return blob ? { path: entry.path, bytes: new Uint8Array(await blob.arrayBuffer()) } : null;
    }),
  );
  return files.every((f) => f !== null) ? (files as BundleFile[]) : null;
}
