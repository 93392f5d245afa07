import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';
import { FIXTURE_PORT } from './test/setup/fixture-port';

export default defineConfig(async () => {
  // The console's bundle is generated (wrangler builds it for dev and deploy; the pool does not).
  execFileSync(process.execPath, ['scripts/console-build.mjs'], { stdio: 'ignore' });
  const migrations = await readD1Migrations(path.join(import.meta.dirname, 'schema/migrations/global'));
  const shardMigrations = await readD1Migrations(path.join(import.meta.dirname, 'schema/migrations/shard'));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: './wrangler.toml' },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            TEST_SHARD_MIGRATIONS: shardMigrations,
            SIGNING_SECRET: 'test-signing-secret-0123456789abcdef',
            ENCRYPTION_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
            OPERATOR_SECRET: 'test-operator-secret-0123456789abcdef',
            // Slow enough that a test can interrupt a run mid-stream, fast enough to keep runs short.
            LOCAL_MODEL_DELAY_MS: '5',
            // Empty, even if .dev.vars sets one: purchase must never reach Stripe from a test
            // (checkout is tested on a fake fetch).
            STRIPE_SECRET_KEY: '',
            STRIPE_WEBHOOK_SECRET: 'whsec_test_0123456789abcdef0123456789abcdef',
            STRIPE_PUBLISHABLE_KEY: 'pk_test_0123456789abcdef',
            // No service key is set, so runs use the local model; a user's own OpenAI key (BYOK)
            // reaches the fixture server's recorded stream instead of the real API.
            OPENAI_BASE_URL: `http://127.0.0.1:${FIXTURE_PORT}/model/openai/byok/`,
            // The GitHub connector talks to the fixture server's fake GitHub REST API.
            GITHUB_API_BASE_URL: `http://127.0.0.1:${FIXTURE_PORT}/github`,
            // The tests' base URL is the service's public origin (browsers on it may call /mcp).
            PUBLIC_ORIGIN: 'https://service.test',
            // The fixture server is on http://127.0.0.1 (client metadata documents, http_request targets).
            LOCAL_DEVELOPMENT: 'true',
          },
        },
      }),
    ],
    test: {
      include: ['test/**/*.test.ts'],
      exclude: ['test/e2e/**'],
      setupFiles: ['./test/setup/apply-migrations.ts'],
      globalSetup: ['./test/setup/fixture-server.ts'],
      // The machines have 2 cores; wider only thrashes.
      maxWorkers: 2,
      // A worker runs file after file instead of starting a runtime for each (about half the
      // suite's time). Each worker is its own runtime, so files share storage only with the files
      // before them: every test makes its own users and workspaces, a test that breaks a table
      // puts it back, and each file starts on the real clock and a fresh client address (test/setup).
      isolate: false,
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
