/**
 * npm run db:migrate [-- --remote | --persist-to <dir>] [--config <wrangler config>]
 *
 * Applies the global migrations (schema/migrations/global) to the DB database and the shard
 * migrations (schema/migrations/shard) to every SHARD_<n> database of wrangler.toml, and stamps
 * each shard with its number: locally (`--persist-to`, default `.wrangler/state`, as `wrangler
 * dev` reads it) or, with `--remote`, on the deployed databases (needs `wrangler login` or
 * CLOUDFLARE_API_TOKEN). `npm run deploy` runs it with `--remote` before `wrangler deploy`.
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { getPlatformProxy } from 'wrangler';
import { migrateDatabases, proxyConfig } from './databases';

const { values } = parseArgs({
  options: {
    remote: { type: 'boolean', default: false },
    'persist-to': { type: 'string', default: '.wrangler/state' },
    config: { type: 'string', default: 'wrangler.toml' },
  },
});
const remote = values.remote!;
const proxy = await getPlatformProxy({
  configPath: proxyConfig('migrate', remote, values.config!),
  persist: remote ? false : { path: join(resolve(values['persist-to']!), 'v3') },
  remoteBindings: remote,
});
try {
  await migrateDatabases(proxy.env, values.config!);
} finally {
  await proxy.dispose();
}
