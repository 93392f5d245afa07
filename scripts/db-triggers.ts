/**
 * npm run db:triggers (and the end of npm run db:generate)
 *
 * Drizzle cannot declare triggers, so each `schema/<kind>/<name>.sql` (the credit totals'
 * triggers: schema/global/credit-totals.sql) is their one source, and a custom migration
 * `NNNN_<name>.sql` of that kind carries it. The file must be applied after every migration
 * drizzle-kit generated (a migration that rebuilds a table drops its triggers): when it is not,
 * or its text changed, this registers a new custom migration (`drizzle-kit generate --custom`)
 * and writes the file into it. The file drops its triggers before it creates them, so applying
 * it again is harmless. Run it after regenerating a kind's baseline from scratch.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const KINDS = ['global', 'shard'] as const;
const drizzleKit = join('node_modules', 'drizzle-kit', 'bin.cjs');

interface Journal {
  entries: { tag: string }[];
}

const journalOf = (kind: string): Journal => JSON.parse(readFileSync(join('schema', 'migrations', kind, 'meta', '_journal.json'), 'utf8')) as Journal;
/** A migration's name without its `NNNN_` number. */
const nameOf = (tag: string) => tag.replace(/^\d+_/, '');

for (const kind of KINDS) {
  const names = readdirSync(join('schema', kind))
    .filter((file) => file.endsWith('.sql'))
    .map((file) => file.slice(0, -'.sql'.length));
  for (const name of names) {
    const text = readFileSync(join('schema', kind, `${name}.sql`), 'utf8');
    const { entries } = journalOf(kind);
    const lastGenerated = entries.findLastIndex((entry) => !names.includes(nameOf(entry.tag)));
    const current = entries
      .slice(lastGenerated + 1)
      .some((entry) => nameOf(entry.tag) === name && readFileSync(join('schema', 'migrations', kind, `${entry.tag}.sql`), 'utf8') === text);
    if (current) continue;
    execFileSync(process.execPath, [drizzleKit, 'generate', '--config', 'schema/drizzle.config.ts', '--custom', '--name', name], {
      env: { ...process.env, DB_KIND: kind },
      stdio: 'inherit',
    });
    const added = journalOf(kind).entries.at(-1)!.tag;
    writeFileSync(join('schema', 'migrations', kind, `${added}.sql`), text);
    console.log(`db:triggers: schema/${kind}/${name}.sql -> schema/migrations/${kind}/${added}.sql`);
  }
}
