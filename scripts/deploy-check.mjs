#!/usr/bin/env node
// Runs before `npm run deploy`: a deployment must not carry the local-development setting,
// which lets users' URLs reach loopback and private addresses (docs/operations.md).
import { readFileSync } from 'node:fs';

const config = readFileSync('wrangler.toml', 'utf8');
if (/^\s*LOCAL_DEVELOPMENT\s*=/m.test(config)) {
  console.error('wrangler.toml sets LOCAL_DEVELOPMENT: it is for a developer machine and tests only. Remove it before deploying.');
  process.exit(1);
}
