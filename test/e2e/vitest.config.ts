import { defineConfig } from 'vitest/config';

/** Black-box tests: Node drives `npm start` (wrangler dev) over real HTTP. */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // One wrangler dev at a time: the machines have 2 cores.
    fileParallelism: false,
  },
});
