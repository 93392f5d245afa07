// Local secrets for `wrangler dev`: written once, from .dev.vars.example with fresh random values.
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * Writes .dev.vars unless it exists; answers whether it wrote it. An existing one that lacks a
 * secret a newer release needs gets it appended, with a fresh value; nothing it has is changed.
 */
export function ensureDevVars() {
  const values = {
    SIGNING_SECRET: randomBytes(32).toString('base64url'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    OPERATOR_SECRET: randomBytes(32).toString('base64url'),
  };
  if (existsSync('.dev.vars')) {
    const present = readFileSync('.dev.vars', 'utf8');
    const missing = Object.entries(values).filter(([name]) => !new RegExp(`^${name}=`, 'm').test(present));
    if (missing.length) appendFileSync('.dev.vars', `${present.endsWith('\n') ? '' : '\n'}${missing.map(([name, value]) => `${name}=${value}`).join('\n')}\n`);
    return false;
  }
  const text = readFileSync('.dev.vars.example', 'utf8').replace(/^([A-Z_]+)=.*$/gm, (line, name) => (name in values ? `${name}=${values[name]}` : line));
  writeFileSync('.dev.vars', text, { mode: 0o600 });
  return true;
}
