/**
 * npm run bench: every bench in turn, each in its own process (each starts and stops its own
 * `wrangler dev`), so one failing does not stop the others; exits non-zero if any failed.
 */
import { spawnSync } from 'node:child_process';

const BENCHES = ['streams', 'memory', 'workflows', 'traces'];

const failed = BENCHES.filter((name) => {
  console.log(`\n== bench/${name}.ts`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${name}.ts`], { stdio: 'inherit' });
  return run.status !== 0;
});
if (failed.length) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(1);
}
