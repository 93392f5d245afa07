import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startService } from './helpers';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Local state `npm start` prepared once for the whole black-box run (see ./prepared.ts). */
    preparedState: string;
  }
}

/**
 * One `npm start` for the whole suite (migrations, catalog, seed): files that do not test
 * `npm start` itself start `wrangler dev` on a copy of its state, ready in ~7 s instead of ~24.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), 'wss-e2e-prepared-'));
  const service = await startService(120_000, { stateDir: dir });
  await service.stop();
  project.provide('preparedState', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
