declare namespace Cloudflare {
  interface Env extends import('../workers/env').Env {
    /** Added by vitest.config.ts so the setup file can apply them. */
    TEST_MIGRATIONS: import('cloudflare:test').D1Migration[];
  }
}
