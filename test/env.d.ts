type WorkerEnv = import('../workers/env').Env;

declare namespace Cloudflare {
  interface Env extends WorkerEnv {
    /** Added by vitest.config.ts so the setup file can apply them. */
    TEST_MIGRATIONS: import('cloudflare:test').D1Migration[];
    TEST_SHARD_MIGRATIONS: import('cloudflare:test').D1Migration[];
  }
}
