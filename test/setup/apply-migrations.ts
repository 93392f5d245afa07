import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { resetClock } from '../../workers/lib/clock';
import { boundShards, shardBinding } from '../../workers/lib/db';
import { stampShard } from '../../workers/lib/shard-identity';
import { useFreshAddress } from '../helpers/api';

// Setup files run outside per-file storage isolation and may run more than once;
// applyD1Migrations applies only what is not applied yet, and a shard is stamped once.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
for (const shard of boundShards(env)) {
  await applyD1Migrations(shardBinding(env, shard), env.TEST_SHARD_MIGRATIONS);
  await stampShard(shardBinding(env, shard), shard);
}

// A pool worker runs test files one after another (vitest.config.ts, isolate: false): each file
// starts on the real clock and counts its unauthenticated requests from zero, whatever the file
// before it did.
resetClock();
useFreshAddress();
