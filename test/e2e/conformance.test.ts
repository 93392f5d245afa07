import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningService } from './helpers';
import { startPrepared } from './prepared';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance) run against `npm start`.
 * The suite's client sends no credential, so a small local proxy adds the API key.
 *
 * Many server scenarios call fixtures of the suite's reference server by name (tools such as
 * `test_simple_text`, prompts such as `test_simple_prompt`, fixed resource URIs); this service
 * offers its own tools, prompts and resources instead, so those scenarios do not apply. The
 * list below says why for each; every other scenario must pass, including any the suite adds.
 */
const NOT_APPLICABLE: Record<string, string> = {
  'tools-call-simple-text': 'calls the reference fixture tool test_simple_text',
  'tools-call-image': 'calls the reference fixture tool test_image_content',
  'tools-call-audio': 'calls the reference fixture tool test_audio_content',
  'tools-call-embedded-resource': 'calls the reference fixture tool test_embedded_resource',
  'tools-call-mixed-content': 'calls the reference fixture tool test_multiple_content_types',
  'tools-call-with-logging': 'calls the reference fixture tool test_tool_with_logging',
  'tools-call-error': 'calls the reference fixture tool test_error_handling',
  'tools-call-with-progress': 'calls the reference fixture tool test_tool_with_progress',
  'tools-call-sampling': 'calls a fixture tool that asks the client for sampling; this server never does',
  'tools-call-elicitation': 'calls a fixture tool that asks the client for input; this server never does',
  'elicitation-sep1034-defaults': 'calls a fixture elicitation tool; this server does not elicit',
  'elicitation-sep1330-enums': 'calls a fixture elicitation tool; this server does not elicit',
  'resources-read-text': 'reads the fixture URI test://static-text',
  'resources-read-binary': 'reads the fixture URI test://static-binary',
  'resources-templates-read': 'reads the fixture template test://template/{id}/data',
  'resources-subscribe': 'a stateless server has no stream to send updates on, so it offers no subscriptions',
  'resources-unsubscribe': 'a stateless server has no stream to send updates on, so it offers no subscriptions',
  'prompts-get-simple': 'gets the fixture prompt test_simple_prompt',
  'prompts-get-with-args': 'gets the fixture prompt test_prompt_with_arguments',
  'prompts-get-embedded-resource': 'gets the fixture prompt test_prompt_with_embedded_resource',
  'prompts-get-with-image': 'gets the fixture prompt test_prompt_with_image',
};

/**
 * A request as a well-behaved client sends it: a 429 is waited out for as long as its
 * `Retry-After` says, then sent again. The suite spends about 100 requests on its one key, the
 * rate limit of a minute.
 */
async function patiently(url: string, init: RequestInit): Promise<Response> {
  for (;;) {
    const answer = await fetch(url, init);
    if (answer.status !== 429) return answer;
    await answer.body?.cancel();
    await setTimeout(Number(answer.headers.get('retry-after') ?? 1) * 1000);
  }
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

describe('the official MCP conformance suite', () => {
  let service: RunningService;
  let proxy: Server;
  let proxyUrl: string;
  const outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));

  beforeAll(async () => {
    // The suite's DNS-rebinding scenario calls from a loopback Origin (the proxy's), which only local development accepts.
    service = await startPrepared(undefined, { args: ['--var', 'LOCAL_DEVELOPMENT:true'] });
    const port = await freePort();
    proxyUrl = `http://127.0.0.1:${port}/mcp`;
    proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === 'string' && !['host', 'content-length'].includes(name)) headers.set(name, value);
      headers.set('x-api-key', service.apiKey);
      const answer = await patiently(`${service.base}${req.url}`, {
        method: req.method,
        headers,
        body: req.method === 'GET' || req.method === 'DELETE' ? undefined : Buffer.concat(chunks),
      });
      // fetch has already decoded the body: its encoding and length no longer describe it.
      const out = Object.fromEntries([...answer.headers].filter(([name]) => name !== 'content-encoding' && name !== 'content-length'));
      res.writeHead(answer.status, out);
      if (answer.body) for await (const chunk of answer.body) res.write(chunk);
      res.end();
    }).listen(port, '127.0.0.1');
  });
  afterAll(async () => {
    proxy?.close();
    await service?.stop();
    rmSync(outDir, { recursive: true, force: true });
  });

  it('passes every server scenario that applies to this service', { timeout: 300_000 }, async () => {
    const cli = join('node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
    // The CLI exits non-zero when any scenario fails, including those that do not apply: the results decide.
    await promisify(execFile)(process.execPath, [cli, 'server', '--url', proxyUrl, '--output-dir', outDir], { timeout: 280_000 }).catch(() => undefined);
    const results = new Map<string, Check[]>();
    for (const dir of readdirSync(outDir)) {
      const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(dir)?.[1];
      if (scenario) results.set(scenario, JSON.parse(readFileSync(join(outDir, dir, 'checks.json'), 'utf8')) as Check[]);
    }
    for (const expected of [
      'server-initialize',
      'ping',
      'tools-list',
      'logging-set-level',
      'completion-complete',
      'resources-list',
      'prompts-list',
      'dns-rebinding-protection',
    ]) {
      expect([...results.keys()], expected).toContain(expected);
    }
    const failures = [...results]
      .filter(([scenario]) => !(scenario in NOT_APPLICABLE))
      .flatMap(([scenario, checks]) => checks.filter((c) => c.status === 'FAILURE').map((c) => `${scenario}: ${c.id}: ${c.errorMessage ?? ''}`));
    expect(failures).toEqual([]);
  });
});
