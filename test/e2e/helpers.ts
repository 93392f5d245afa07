import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';

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
  /** Ends the process group (SIGTERM unless told; SIGKILL is a crash) and deletes the state directory if it made it. */
  stop: (signal?: NodeJS.Signals) => Promise<void>;
}

export interface StartOptions {
  /** The local state to run on; the caller owns it, so stop() leaves it. Default: a fresh directory. */
  stateDir?: string;
  /** More arguments for `wrangler dev`, e.g. `['--var', 'LOCAL_MODEL_DELAY_MS:100']`. */
  args?: string[];
  /**
   * `wrangler dev` alone on a `stateDir` that `npm start` already prepared (migrations, catalog,
   * seed), as after a crash: ready when it answers, with the key saved in the state's dev-seed.json.
   */
  restart?: boolean;
  /** A prepared state to copy into the state directory first; then as `restart`. */
  from?: string;
}

/**
 * Runs `npm start` exactly as a person would (through scripts/start.mjs), on its own port and
 * with its own state directory (or `options.stateDir`), and waits for the printed API key.
 */
export async function startService(timeoutMs = 90_000, options: StartOptions = {}): Promise<RunningService & { readyAfterMs: number }> {
  // A free port can be taken between being found and being bound (another file's service, a
  // helper program): the start is tried again on a new one.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(timeoutMs, options);
    } catch (error) {
      if (attempt === 3 || !(error instanceof Error) || !error.message.includes('Address already in use')) throw error;
    }
  }
}

async function startOnce(timeoutMs: number, options: StartOptions): Promise<RunningService & { readyAfterMs: number }> {
  const port = await freePort();
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'wss-e2e-'));
  const base = `http://127.0.0.1:${port}`;
  const started = Date.now();
  if (options.from) cpSync(options.from, stateDir, { recursive: true });
  const alone = options.restart || options.from !== undefined;
  const args = ['--port', String(port), '--persist-to', stateDir, '--ip', '127.0.0.1', ...(options.args ?? [])];
  const child: ChildProcess = spawn(process.execPath, alone ? ['node_modules/wrangler/bin/wrangler.js', 'dev', ...args] : ['scripts/start.mjs', ...args], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));

  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, signal);
      await exited;
    }
    if (!options.stateDir) rmSync(stateDir, { recursive: true, force: true });
  };

  const name = alone ? 'wrangler dev' : 'npm start';
  let settled = false;
  const apiKey = await new Promise<string>((resolve, reject) => {
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`${name} was not ready in ${timeoutMs} ms:\n${out}`))), timeoutMs);
    child.once('exit', (code) => settle(() => reject(new Error(`${name} exited with ${code}:\n${out}`))));
    if (alone) {
      const { apiKey: saved } = JSON.parse(readFileSync(join(stateDir, 'dev-seed.json'), 'utf8')) as { apiKey: string };
      const poll = (): unknown =>
        !settled &&
        fetch(`${base}/api/v1/openapi.json`)
          .then((res) => (res.ok ? settle(() => resolve(saved)) : setTimeout(poll, 250)))
          .catch(() => setTimeout(poll, 250));
      poll();
      return;
    }
    child.stdout!.on('data', () => {
      const match = /API key \(full access\):\s+(sk_live_[A-Za-z0-9_-]+)/.exec(out);
      if (match) settle(() => resolve(match[1]!));
    });
  }).catch(async (error) => {
    await stop();
    throw error;
  });
  return { base, apiKey, output: () => out, stop, readyAfterMs: Date.now() - started };
}

/** A new account through the API: its credentials (for a browser to sign in with) and its session token. */
export async function newAccount(base: string, name: string) {
  const email = `e2e-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const password = 'e2e password long enough';
  const res = await fetch(`${base}/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, name }),
  });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status}`);
  const { token } = (await res.json()) as { token: string };
  return { email, password, token };
}

/** The first value `read` gives that is not undefined, read every 200 ms for up to `timeoutMs`. */
export async function until<T>(what: string, read: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** POSTs `payload` to `url` as a Standard Webhooks sender does, signed with `secret`: the answer's status and JSON body. */
export async function signedDelivery(url: string, secret: string, messageId: string, payload: unknown) {
  const body = JSON.stringify(payload);
  const at = new Date();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': messageId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(messageId, at, body),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}
