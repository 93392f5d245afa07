// `npm run workspace:move -- <workspaceId> <shard> [--url <service origin>] [--drain-ms <ms>]`:
// moves a workspace to another shard through the service's operator route (docs/operations.md,
// Moving a workspace). The secret is OPERATOR_SECRET from the environment, else from .dev.vars.
// Run it again after any failure: it finishes the move from where it stopped.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { url: { type: 'string', default: 'http://localhost:8787' }, 'drain-ms': { type: 'string' } },
});
const [workspaceId, shard] = positionals;
if (!workspaceId || !shard || !/^[1-9][0-9]*$/.test(shard)) {
  console.error('usage: npm run workspace:move -- <workspaceId> <shard> [--url <service origin>] [--drain-ms <ms>]');
  process.exit(2);
}

const fromDevVars = () => (existsSync('.dev.vars') ? /^OPERATOR_SECRET=(.*)$/m.exec(readFileSync('.dev.vars', 'utf8'))?.[1]?.trim() : undefined);
const secret = process.env.OPERATOR_SECRET || fromDevVars();
if (!secret) {
  console.error('Set OPERATOR_SECRET (the secret the service was given; locally it is in .dev.vars).');
  process.exit(2);
}

const body = { shard: Number(shard), ...(values['drain-ms'] === undefined ? {} : { drainMs: Number(values['drain-ms']) }) };
const response = await fetch(new URL(`/operator/workspaces/${encodeURIComponent(workspaceId)}/move`, values.url), {
  method: 'POST',
  headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const text = await response.text();
if (!response.ok) {
  console.error(`The move failed (${response.status}): ${text}\nRun the command again to finish it.`);
  process.exit(1);
}
const report = JSON.parse(text) as { from: number; to: number; copied: { beforeFence: number; underFence: number }; removed: number; deleted: number };
console.log(
  `Workspace ${workspaceId} is on shard ${report.to} (was ${report.from}): ${report.copied.beforeFence} rows copied, ${report.copied.underFence} under the fence, ${report.removed} stale copies removed, ${report.deleted} rows deleted from other shards.`,
);
