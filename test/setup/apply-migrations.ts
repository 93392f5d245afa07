import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { boundShards, shardBinding } from '../../workers/lib/db';
import { stampShard } from '../../workers/lib/shard-identity';

// Setup files run outside per-file storage isolation and may run more than once;
// applyD1Migrations applies only what is not applied yet, and a shard is stamped once.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
for (const shard of boundShards(env)) {
  await applyD1Migrations(shardBinding(env, shard), env.TEST_SHARD_MIGRATIONS);
  await stampShard(shardBinding(env, shard), shard);
}
