import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startService } from './helpers';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Local state `npm start` prepared once for the whole black-box run (see ./prepared.ts). */
    preparedState: string;
    /** That `npm start` as a person saw it: how soon it was ready, what it printed, the key it printed. */
    npmStart: { readyAfterMs: number; output: string; apiKey: string };
  }
}

/**
 * One `npm start` for the whole suite, on fresh state as on a first run (migrations, catalog,
 * seed): start.test.ts checks what it printed, and files that do not test `npm start` itself
 * start `wrangler dev` on a copy of its state, ready in ~7 s instead of ~24.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), 'wss-e2e-prepared-'));
  const service = await startService(120_000, { stateDir: dir });
  await service.stop();
  project.provide('preparedState', dir);
  project.provide('npmStart', { readyAfterMs: service.readyAfterMs, output: service.output(), apiKey: service.apiKey });
  return () => rmSync(dir, { recursive: true, force: true });
}
