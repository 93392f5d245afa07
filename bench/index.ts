/**
 * npm run bench: every bench in turn, each in its own process (each starts and stops its own
 * `wrangler dev`), so one failing does not stop the others; then every target's verdict in one
 * table. Exits non-zero if a bench failed (a target not met is a reading, not a failure).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Verdict } from './lib';

const BENCHES = ['streams', 'memory', 'workflows', 'traces'];

const verdictsDir = mkdtempSync(join(tmpdir(), 'wss-verdicts-'));
const verdictsFile = join(verdictsDir, 'verdicts.jsonl');
const failed = BENCHES.filter((name) => {
  console.log(`\n== bench/${name}.ts`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${name}.ts`], { stdio: 'inherit', env: { ...process.env, BENCH_VERDICTS: verdictsFile } });
  return run.status !== 0;
});

const verdicts = (() => {
  try {
    return readFileSync(verdictsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Verdict);
  } catch {
    return [];
  } finally {
    rmSync(verdictsDir, { recursive: true, force: true });
  }
})();
console.log(`\n== targets (${verdicts.filter((v) => v.met).length} of ${verdicts.length} met)`);
const width = Math.max(0, ...verdicts.map((v) => v.line.length));
for (const v of verdicts) console.log(`  ${v.line.padEnd(width)}  ${v.ratio.padStart(6)}  ${v.target.padEnd(7)}  ${v.met ? 'met' : 'NOT MET'}`);
if (failed.length) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(1);
}
