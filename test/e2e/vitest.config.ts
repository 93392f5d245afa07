import { defineConfig } from 'vitest/config';

/** Black-box tests: Node drives `npm start` (wrangler dev) over real HTTP. */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two files at a time, each with its own wrangler dev: much of an e2e test is waiting (on a
    // restart, a queue, a browser), and the machines have 2 cores.
    maxWorkers: 2,
  },
});
