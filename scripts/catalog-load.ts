/**
 * npm run catalog:load [-- --remote | --persist-to <dir>] [--file <catalog.json>]
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
 * With `--migrate` (local only; `npm start` uses it), the local D1's pending migrations are
 * applied first in the same platform proxy, and recorded in `d1_migrations` as
 * `wrangler d1 migrations apply` records them (one batch each: its statements, then its name), so
 * wrangler sees them applied. Starting the proxy once instead of wrangler once per migration is
 * most of what `npm start` spends before `wrangler dev`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readD1Migrations } from '@cloudflare/vitest-plugin';
import { getPlatformProxy, unstable_readConfig } from 'wrangler';
import { openDb } from '../workers/lib/db';
import type { Env } from '../workers/env';
import { CatalogEntry, importCatalog } from '../workers/services/catalog';

const { values } = parseArgs({
  options: {
    remote: { type: 'boolean', default: false },
    'persist-to': { type: 'string', default: '.wrangler/state' },
    file: { type: 'string', default: 'catalog/dist/catalog.json' },
    migrate: { type: 'boolean', default: false },
  },
});
const remote = values.remote!;
if (remote && values.migrate) throw new Error('--migrate is for the local database; remotely, run wrangler d1 migrations apply DB --remote');

/** The DB and BUCKET bindings of wrangler.toml, alone, marked remote or not; and where DB's migrations are. */
function loaderConfig(): { path: string; migrationsDir: string } {
  const config = unstable_readConfig({ config: 'wrangler.toml' }, { hideWarnings: true });
  const db = config.d1_databases.find((d: { binding: string }) => d.binding === 'DB');
  const bucket = config.r2_buckets.find((b: { binding: string }) => b.binding === 'BUCKET');
  if (!db || !bucket) throw new Error('wrangler.toml has no DB database or BUCKET bucket');
  const dir = resolve('.wrangler/catalog-load');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'wrangler.json');
  writeFileSync(
    path,
    JSON.stringify({
      name: `${config.name}-catalog-load`,
      compatibility_date: config.compatibility_date,
      compatibility_flags: config.compatibility_flags,
      d1_databases: [{ binding: 'DB', database_name: db.database_name, database_id: db.database_id, remote }],
      r2_buckets: [{ binding: 'BUCKET', bucket_name: bucket.bucket_name, remote }],
    }),
  );
  return { path, migrationsDir: resolve(db.migrations_dir ?? 'migrations') };
}

/** The local D1's pending migrations, each in one batch with its record (wrangler's table and columns). */
async function applyMigrations(db: D1Database, migrationsDir: string) {
  await db
    .prepare(
      'CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)',
    )
    .run();
  const applied = new Set((await db.prepare('SELECT name FROM d1_migrations').all<{ name: string }>()).results.map((row) => row.name));
  const pending = (await readD1Migrations(migrationsDir)).filter((migration) => !applied.has(migration.name));
  for (const migration of pending) {
    await db.batch([...migration.queries.map((query) => db.prepare(query)), db.prepare('INSERT INTO d1_migrations (name) VALUES (?)').bind(migration.name)]);
  }
  console.log(`migrations: ${pending.length} applied, ${applied.size} already`);
}

const entries = CatalogEntry.array().parse(JSON.parse(readFileSync(values.file!, 'utf8')));
const config = loaderConfig();
const proxy = await getPlatformProxy<Env>({
  configPath: config.path,
  persist: remote ? false : { path: join(resolve(values['persist-to']!), 'v3') },
  remoteBindings: remote,
});
try {
  if (values.migrate) await applyMigrations(proxy.env.DB, config.migrationsDir);
  const load = await importCatalog(openDb(proxy.env.DB), proxy.env.BUCKET, entries);
  const where = remote ? 'the deployed marketplace' : 'the local marketplace';
  console.log(
    `catalog:load: ${entries.length} skills in ${where}: ${load.added.length} added, ${load.updated.length} updated, ${load.unchanged.length} unchanged`,
  );
  if (load.updated.length) console.log(`  updated: ${load.updated.join(', ')}`);
} finally {
  await proxy.dispose();
}
