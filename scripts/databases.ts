/**
 * The service's D1 databases as wrangler.toml declares them (the global `DB` and every shard
 * `SHARD_<n>`), a platform-proxy config naming them (local or remote), and their migrations:
 * each kind's pending migrations applied to every database of that kind, recorded in
 * `d1_migrations` as `wrangler d1 migrations apply` records them, and each shard stamped with its
 * number (workers/lib/shard-identity.ts). Used by `npm start` (through catalog-load --migrate),
 * `npm run db:migrate` and `npm run deploy`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { readD1Migrations } from '@cloudflare/vitest-plugin';
import { unstable_readConfig } from 'wrangler';
import { shardOfBinding } from '../workers/lib/db';
import { stampShard } from '../workers/lib/shard-identity';

export interface Database {
  binding: string;
  database_name: string;
  database_id: string;
  migrationsDir: string;
  /** The shard's number, for a SHARD_<n> binding; undefined for the global database. */
  shard?: number;
}

/** The D1 databases of the wrangler config (default wrangler.toml), global first, and the rest of what a proxy config needs. */
export function readDatabases(configPath = 'wrangler.toml') {
  const config = unstable_readConfig({ config: configPath }, { hideWarnings: true });
  const databases: Database[] = config.d1_databases.map((d: { binding: string; database_name?: string; database_id?: string; migrations_dir?: string }) => {
    const shard = shardOfBinding(d.binding);
    if (d.binding !== 'DB' && shard === undefined) throw new Error(`wrangler.toml binds D1 database ${d.binding}: name it DB or SHARD_<n>`);
    return {
      binding: d.binding,
      database_name: d.database_name ?? d.binding,
      database_id: d.database_id ?? '',
      migrationsDir: resolve(dirname(configPath), d.migrations_dir ?? 'migrations'),
      ...(shard === undefined ? {} : { shard }),
    };
  });
  if (!databases.some((d) => d.binding === 'DB')) throw new Error('wrangler.toml has no DB database');
  return { config, databases };
}

/**
 * A wrangler config for `getPlatformProxy` with only the databases (and `extra` bindings), marked
 * remote or not, written under .wrangler/<name>/; answers its path.
 */
export function proxyConfig(name: string, remote: boolean, configPath: string, extra: Record<string, unknown> = {}): string {
  const { config, databases } = readDatabases(configPath);
  const dir = resolve('.wrangler', name);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'wrangler.json');
  writeFileSync(
    path,
    JSON.stringify({
      name: `${config.name}-${name}`,
      compatibility_date: config.compatibility_date,
      compatibility_flags: config.compatibility_flags,
      d1_databases: databases.map((d) => ({ binding: d.binding, database_name: d.database_name, database_id: d.database_id, remote })),
      ...extra,
    }),
  );
  return path;
}

/** A database's pending migrations, each in one batch with its record (wrangler's table and columns); answers how many. */
async function applyPending(db: D1Database, migrationsDir: string): Promise<number> {
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
  return pending.length;
}

/** Every database migrated with its kind's migrations, and every shard stamped; prints a line each. */
export async function migrateDatabases(env: Record<string, unknown>, configPath: string): Promise<void> {
  for (const database of readDatabases(configPath).databases) {
    const db = env[database.binding] as D1Database;
    const applied = await applyPending(db, database.migrationsDir);
    if (database.shard !== undefined) await stampShard(db, database.shard);
    console.log(`migrations: ${database.binding}: ${applied} applied`);
  }
}
