import { invalidInput } from '../errors';
import { type BundleFile, BUNDLE_LIMITS, bundleManifest } from '../lib/bundle';
import { fetchJson, type OutboundSetting } from '../lib/outbound';
import { BundleDownload, decodeFiles, MarketplaceDetail } from './catalog';

/**
 * Installs from another instance of this API (`registry`): its marketplace detail names the
 * content checksum, its bundle route serves the files, and the files must hash to that
 * checksum, so a registry cannot serve content other than what it advertises.
 */
export async function fetchRegistryBundle(
  registry: string,
  slug: string,
  env: OutboundSetting,
): Promise<{ files: BundleFile[]; repository: string | null; commitHash: string }> {
  const base = `${registry.replace(/\/+$/, '')}/api/v1/marketplace/skills/${encodeURIComponent(slug)}`;
  // Only what installing needs: a registry that ships no eval results is still one.
  const detail = MarketplaceDetail.omit({ evals: true }).safeParse(await fetchJson(base, 'registry', 1024 * 1024, env));
  if (!detail.success) throw invalidInput('registry', 'response', 'The registry answered an unexpected skill detail');
  const download = BundleDownload.safeParse(await fetchJson(`${base}/bundle`, 'registry', BUNDLE_LIMITS.totalBytes * 2, env));
  const unexpectedBundle = () => invalidInput('registry', 'response', 'The registry answered an unexpected bundle');
  if (!download.success) throw unexpectedBundle();
  let files: BundleFile[];
  try {
    files = decodeFiles(download.data.files);
  } catch {
    // A file that is not base64.
    throw unexpectedBundle();
  }
  const { checksum } = await bundleManifest(files);
  if (checksum !== detail.data.contentChecksum) {
    throw invalidInput('registry', 'checksum_mismatch', 'The registry bundle does not match its advertised checksum');
  }
  return { files, repository: detail.data.repository, commitHash: detail.data.commitHash };
}
