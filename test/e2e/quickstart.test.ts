import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sseEvents } from '../helpers/sse';
import { startService, type RunningService } from './helpers';

/**
 * The README's quickstart, run as a person would paste it: its `sh` blocks in order, in one bash
 * session against `npm start`, with the printed address and key in place of the README's. Each
 * block's output is checked, so the README cannot drift from the service.
 */
const START = 'npm ci && npm start';

function quickstartBlocks(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.split('\n## Quickstart\n')[1]!.split('\n## ')[0]!;
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

const json = (line: string | undefined) => JSON.parse(line ?? 'null');

/** SSE frames as `{id, type}`. */
const frames = (text: string) => sseEvents<{ type: string }>(text).map(({ id, type }) => ({ id, type }));

/** What each block must print, in the README's order (the first, `npm start`, is the service itself). */
const checks: ((out: string) => void)[] = [
  (out) => expect(json(out.trim())).toMatchObject({ email: 'dev@localhost.test', scopes: ['*'] }),
  (out) => {
    const [slug, installed] = out.trim().split('\n');
    expect(slug).toBe('meeting-notes-summarizer');
    expect(json(installed)).toMatchObject({ slug: 'meeting-notes-summarizer', source: 'catalog', versionNumber: 1 });
  },
  (out) => expect(out.trim()).toMatch(/^exec_\d+$/),
  (out) => {
    const events = frames(out);
    expect(events[0]).toEqual({ id: 1, type: 'user.message' });
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.type)).toContain('agent.message');
    expect(events.at(-1)!.type).toBe('session.status_idle');
  },
  (out) => {
    // Two resumed streams, each from sequence 4 to the end, the same events.
    const ids = frames(out).map((e) => e.id);
    const half = ids.length / 2;
    expect(ids[0]).toBe(4);
    expect(ids.slice(0, half)).toEqual(ids.slice(half));
    expect(ids.slice(0, half)).toEqual(ids.slice(0, half).map((_, i) => i + 4));
  },
  (out) => {
    const [list, , ...download] = out.trim().split('\n');
    expect(json(list).data.map((a: { name: string }) => a.name)).toContain('output.md');
    expect(download.join('\n')).toContain('Ana ships the release on Friday.');
  },
  (out) => {
    const [written, read] = out.trim().split('\n').map(json);
    expect(written).toMatchObject({ content: 'Release owner: Ana. Notes: Ben.' });
    expect(read).toEqual(written);
  },
  (out) => expect(out.trim().split('\n')).toEqual(['stakeholder-update-writer', 'publish-with-approval', 'Send this summary as a stakeholder update?']),
  (out) => {
    const [resumed, status, updateStatus] = out.trim().split('\n');
    expect(json(resumed)).toMatchObject({ status: 'running' });
    expect([status, updateStatus]).toEqual(['success', 'completed']);
  },
  (out) => {
    const answer = json(out.trim());
    expect(answer.result.isError).toBeUndefined();
    expect(answer.result.structuredContent.skills.map((s: { slug: string }) => s.slug)).toEqual(['meeting-notes-summarizer', 'stakeholder-update-writer']);
  },
];

describe('the README quickstart', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('starts with npm start, then every block runs in order and prints what the README says', () => {
    const blocks = quickstartBlocks();
    expect(blocks[0]!.trim()).toBe(START);
    expect(blocks.length - 1, 'a quickstart block was added or removed: give it a check here').toBe(checks.length);

    const script = blocks
      .slice(1)
      .map((block, i) => `echo '@@@ ${i}'\n${block.replaceAll('http://localhost:8787', service.base).replaceAll('sk_live_…', service.apiKey)}`)
      .join('\n');
    const run = spawnSync('bash', ['-c', `set -euo pipefail\n${script}`], { encoding: 'utf8', timeout: 240_000 });
    expect(run.status, `the quickstart stopped:\n${run.stderr}\n${run.stdout.slice(-3000)}`).toBe(0);

    const outputs = run.stdout.split(/^@@@ \d+\n/m).slice(1);
    expect(outputs).toHaveLength(checks.length);
    checks.forEach((check, i) => check(outputs[i]!));
  }, 300_000);
});
