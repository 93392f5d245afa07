/**
 * npm run catalog:load [-- --persist-to <dir> --file <catalog.json>]
 *
 * Loads importer output into the local D1 and R2 that `wrangler dev` uses (through wrangler's
 * getPlatformProxy), with the same service code that validates and stores bundles.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { drizzle } from 'drizzle-orm/d1';
import { getPlatformProxy } from 'wrangler';
import * as schema from '../schema';
import type { Env } from '../workers/env';
import { CatalogEntry, importCatalog } from '../workers/services/catalog';

const { values } = parseArgs({
  options: {
    'persist-to': { type: 'string', default: '.wrangler/state' },
    file: { type: 'string', default: 'catalog/dist/catalog.json' },
  },
});

const entries = CatalogEntry.array().parse(JSON.parse(readFileSync(values.file!, 'utf8')));
const proxy = await getPlatformProxy<Env>({ persist: { path: join(values['persist-to']!, 'v3') } });
try {
  const slugs = await importCatalog(drizzle(proxy.env.DB, { schema }), proxy.env.BUCKET, entries);
  console.log(`catalog:load: ${slugs.length} skills in the local marketplace`);
} finally {
  await proxy.dispose();
}
