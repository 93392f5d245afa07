import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free loopback port. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

export interface RunningService {
  base: string;
  apiKey: string;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * Runs `npm start` exactly as a person would (through scripts/start.mjs), on its own port and
 * with its own state directory, and waits for the printed API key.
 */
export async function startService(timeoutMs = 90_000): Promise<RunningService & { readyAfterMs: number }> {
  const port = await freePort();
  const stateDir = mkdtempSync(join(tmpdir(), 'wss-e2e-'));
  const started = Date.now();
  const child: ChildProcess = spawn(
    process.execPath,
    ['scripts/start.mjs', '--port', String(port), '--persist-to', stateDir, '--ip', '127.0.0.1'],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));

  const stop = async () => {
    if (child.exitCode === null) {
      process.kill(-child.pid!, 'SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(stateDir, { recursive: true, force: true });
  };

  const apiKey = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start was not ready in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = () => {
      const match = /API key \(full access\):\s+(sk_live_[A-Za-z0-9_-]+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited with ${code}:\n${out}`));
    });
  }).catch(async (error) => {
    await stop();
    throw error;
  });
  return { base: `http://127.0.0.1:${port}`, apiKey, output: () => out, stop, readyAfterMs: Date.now() - started };
}
