/**
 * npm run catalog:load [-- --remote | --persist-to <dir>] [--file <catalog.json>] [--config <wrangler config>]
 *
 * Loads importer output (`npm run catalog:build`) into the marketplace, with the same service
 * code that validates and stores bundles, through wrangler's platform proxy:
 * - by default into the local D1 and R2 that `wrangler dev` uses (`--persist-to`, default
 *   `.wrangler/state`);
 * - with `--remote`, into the deployed D1 database and R2 bucket that wrangler.toml names
 *   (wrangler's remote bindings; needs `wrangler login` or CLOUDFLARE_API_TOKEN).
 * Both go through one generated config, which differs only in the bindings' `remote` flag.
 * Idempotent: an unchanged skill is not written again; a changed one is updated.
 *
 * With `--migrate` (local only; `npm start` uses it), every local database's pending migrations
 * are applied first in the same platform proxy, as `npm run db:migrate` applies them
 * (scripts/databases.ts). Starting the proxy once instead of wrangler once per migration is most
 * of what `npm start` spends before `wrangler dev`.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { getPlatformProxy, unstable_readConfig } from 'wrangler';
import { globalDbOf } from '../workers/lib/db';
import type { Env } from '../workers/env';
import { CatalogEntry, importCatalog } from '../workers/services/catalog';
import { migrateDatabases, proxyConfig } from './databases';

const { values } = parseArgs({
  options: {
    remote: { type: 'boolean', default: false },
    'persist-to': { type: 'string', default: '.wrangler/state' },
    file: { type: 'string', default: 'catalog/dist/catalog.json' },
    migrate: { type: 'boolean', default: false },
    config: { type: 'string', default: 'wrangler.toml' },
  },
});
const remote = values.remote!;
if (remote && values.migrate) throw new Error('--migrate is for the local databases; remotely, run npm run db:migrate -- --remote');

/** The databases and the BUCKET bucket of wrangler.toml, alone, marked remote or not. */
function loaderConfig(): string {
  const config = unstable_readConfig({ config: values.config! }, { hideWarnings: true });
  const bucket = config.r2_buckets.find((b: { binding: string }) => b.binding === 'BUCKET');
  if (!bucket) throw new Error('wrangler.toml has no BUCKET bucket');
  return proxyConfig('catalog-load', remote, values.config!, { r2_buckets: [{ binding: 'BUCKET', bucket_name: bucket.bucket_name, remote }] });
}

const entries = CatalogEntry.array().parse(JSON.parse(readFileSync(values.file!, 'utf8')));
const proxy = await getPlatformProxy<Env>({
  configPath: loaderConfig(),
  persist: remote ? false : { path: join(resolve(values['persist-to']!), 'v3') },
  remoteBindings: remote,
});
try {
  if (values.migrate) await migrateDatabases(proxy.env as unknown as Record<string, unknown>, values.config!);
  const load = await importCatalog(globalDbOf(proxy.env), proxy.env.BUCKET, entries);
  const where = remote ? 'the deployed marketplace' : 'the local marketplace';
  console.log(
    `catalog:load: ${entries.length} skills in ${where}: ${load.added.length} added, ${load.updated.length} updated, ${load.unchanged.length} unchanged`,
  );
  if (load.updated.length) console.log(`  updated: ${load.updated.join(', ')}`);
} finally {
  await proxy.dispose();
}
