import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** Cloudflare's compressed Worker size limit on the Free plan (the Paid plan allows 10 MiB). */
const FREE_PLAN_LIMIT_KIB = 3 * 1024;

describe('wrangler deploy --dry-run', () => {
  it('bundles the Worker with every binding, under the Free plan size limit', async () => {
    const outdir = mkdtempSync(join(tmpdir(), 'wss-dry-run-'));
    try {
      const { stdout } = await promisify(execFile)('npx', ['wrangler', 'deploy', '--dry-run', '--outdir', outdir], {
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
      });
      const size = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(stdout);
      expect(size, stdout).not.toBeNull();
      const gzipKiB = Number(size![2]);
      console.log(`Worker bundle: ${size![1]} KiB, ${gzipKiB} KiB gzipped (limit ${FREE_PLAN_LIMIT_KIB} KiB on the Free plan)`);
      expect(gzipKiB).toBeLessThan(FREE_PLAN_LIMIT_KIB);
      for (const binding of ['env.DB', 'env.SHARD_1', 'env.SHARD_2', 'env.BUCKET', 'env.EXECUTION_SESSION', 'env.RATE_LIMITER', 'env.WORKFLOW_STEPS'])
        expect(stdout).toContain(binding);
      // Tests and local development only: a deployed service never reaches loopback or private addresses for its users.
      expect(stdout).not.toContain('LOCAL_DEVELOPMENT');
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('npm run deploy refuses a configuration that turns on local development', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wss-deploy-check-'));
    const check = join(process.cwd(), 'scripts/deploy-check.mjs');
    try {
      const config = readFileSync('wrangler.toml', 'utf8');
      writeFileSync(join(dir, 'wrangler.toml'), config);
      await promisify(execFile)(process.execPath, [check], { cwd: dir });
      writeFileSync(join(dir, 'wrangler.toml'), config.replace('[vars]\n', '[vars]\nLOCAL_DEVELOPMENT = "true"\n'));
      const refused = await promisify(execFile)(process.execPath, [check], { cwd: dir }).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(refused?.code).toBe(1);
      expect(refused?.stderr).toContain('LOCAL_DEVELOPMENT');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
