// Local secrets for `wrangler dev`: written once, from .dev.vars.example with fresh random values.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/** Writes .dev.vars unless it exists; answers whether it wrote it. */
export function ensureDevVars() {
  if (existsSync('.dev.vars')) return false;
  const values = {
    SIGNING_SECRET: randomBytes(32).toString('base64url'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    OPERATOR_SECRET: randomBytes(32).toString('base64url'),
  };
  const text = readFileSync('.dev.vars.example', 'utf8').replace(/^([A-Z_]+)=.*$/gm, (line, name) => (name in values ? `${name}=${values[name]}` : line));
  writeFileSync('.dev.vars', text, { mode: 0o600 });
  return true;
}
