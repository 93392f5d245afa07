import { defineConfig } from 'vitest/config';

/** Black-box tests: Node drives `npm start` (wrangler dev) over real HTTP. */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Three files at a time, each with its own wrangler dev: most of an e2e test is waiting (on a
    // restart, a queue, a browser), so three keep the machines' 2 cores busy.
    maxWorkers: 3,
  },
});
