import { defineConfig } from 'drizzle-kit';

/** `DB_KIND=global` or `shard` (npm run db:generate runs both): each kind has its own migrations. */
const kind = process.env.DB_KIND === 'shard' ? 'shard' : 'global';

export default defineConfig({
  dialect: 'sqlite',
  schema: `./schema/${kind}/index.ts`,
  out: `./schema/migrations/${kind}`,
});
