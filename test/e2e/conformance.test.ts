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
  'json-schema-2020-12': 'lists and calls the reference fixture tool json_schema_2020_12_tool',
  'http-custom-header-server-validation': 'needs a tool whose input schema declares x-mcp-header parameters; no tool of this service does',
  'input-required-result-basic-elicitation': 'calls the reference fixture tool test_input_required_result_elicitation',
  'input-required-result-basic-sampling': 'calls a fixture tool that asks for sampling; this server never does',
  'input-required-result-basic-list-roots': 'calls a fixture tool that asks for roots; this server never does',
  'input-required-result-request-state': 'calls the reference fixture tool test_input_required_result_request_state',
  'input-required-result-multiple-input-requests': 'calls the reference fixture tool test_input_required_result_multiple_inputs',
  'input-required-result-multi-round': 'calls the reference fixture tool test_input_required_result_multi_round',
  'input-required-result-missing-input-response': 'calls the reference fixture tool test_input_required_result_elicitation',
  'input-required-result-non-tool-request': 'gets the fixture prompt test_input_required_result_prompt',
  'input-required-result-result-type': 'calls the reference fixture tool test_input_required_result_elicitation',
  'input-required-result-tampered-state': 'calls the reference fixture tool test_input_required_result_request_state',
  'input-required-result-capability-check': 'calls the reference fixture tool test_input_required_result_capabilities',
  'input-required-result-ignore-extra-params': 'calls the reference fixture tool test_input_required_result_elicitation',
  'tasks-dispatch-and-envelope': 'calls the reference fixture tools greet, slow_compute and failing_job',
  'tasks-lifecycle': 'calls the reference fixture tools greet and slow_compute',
  'tasks-mrtr-composition': 'calls the reference fixture tool test_tool_with_task',
  'tasks-mrtr-input': 'calls the reference fixture tools confirm_delete and multi_input',
  'tasks-request-state-removal': 'calls the reference fixture tool slow_compute',
  'tasks-required-task-error': 'calls the reference fixture tool failing_job',
  'tasks-wire-fields': 'calls the reference fixture tool slow_compute',
};

/**
 * Single checks of scenarios that otherwise apply, which call a fixture of the reference server
 * (the suite reports them "Not testable"); every other check of those scenarios must pass.
 */
const CHECKS_NOT_APPLICABLE: Record<string, string> = {
  'sep-2575-server-rejects-undeclared-capability': 'calls the diagnostic fixture tool test_missing_capability',
  'sep-2575-missing-capability-http-400': 'calls the diagnostic fixture tool test_missing_capability',
  'sep-2575-http-server-no-independent-requests-on-stream': 'calls the diagnostic fixture tool test_streaming_elicitation',
  'sep-2575-server-no-log-without-loglevel': 'calls the diagnostic fixture tool test_logging_tool',
  'sep-2663-server-rejects-undeclared-client': 'calls the reference fixture tool slow_compute',
  'tasks-per-request-meta-opt-in': 'calls the reference fixture tool slow_compute',
  'sep-2663-routing-headers-accepted-on-tasks-get': 'calls the reference fixture tool slow_compute',
  'tasks-headers-tolerate-mcp-method-on-tools-call': 'calls the reference fixture tool greet',
  'sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get': 'needs the task the fixture tool slow_compute creates',
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
  /** The keys the proxy sends, in turn: a 2026-07-28 client holds no session, so its requests may spread over several. */
  let keys: string[] = [];
  let turn = 0;
  const outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));

  beforeAll(async () => {
    // The suite's DNS-rebinding scenario calls from a loopback Origin (the proxy's), which only local development accepts.
    service = await startPrepared(undefined, { args: ['--var', 'LOCAL_DEVELOPMENT:true'] });
    const port = await freePort();
    proxyUrl = `http://127.0.0.1:${port}/mcp`;
    proxy = createServer(async (req, res) => {
      // A stream the suite closes (a subscription it is done with) ends the upstream request too.
      const upstream = new AbortController();
      res.on('close', () => upstream.abort());
      try {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers))
          if (typeof value === 'string' && !['host', 'content-length'].includes(name)) headers.set(name, value);
        headers.set('x-api-key', keys[turn++ % keys.length]!);
        const answer = await patiently(`${service.base}${req.url}`, {
          method: req.method,
          headers,
          body: req.method === 'GET' || req.method === 'DELETE' ? undefined : Buffer.concat(chunks),
          signal: upstream.signal,
        });
        // fetch has already decoded the body: its encoding and length no longer describe it.
        const out = Object.fromEntries([...answer.headers].filter(([name]) => name !== 'content-encoding' && name !== 'content-length'));
        res.writeHead(answer.status, out);
        if (answer.body) for await (const chunk of answer.body) res.write(chunk);
      } catch (error) {
        if (!upstream.signal.aborted) throw error;
      } finally {
        res.end();
      }
    }).listen(port, '127.0.0.1');
  });
  afterAll(async () => {
    proxy?.close();
    await service?.stop();
    rmSync(outDir, { recursive: true, force: true });
  });

  /** API keys with every scope of the printed key, each with its own rate limit. */
  async function newKeys(count: number): Promise<string[]> {
    const made: string[] = [];
    for (let i = 0; i < count; i++) {
      const answer = await fetch(`${service.base}/api/v1/api-keys`, {
        method: 'POST',
        headers: { 'x-api-key': service.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `conformance ${i + 1}`, scopes: ['*'] }),
      });
      expect(answer.status).toBe(201);
      made.push(((await answer.json()) as { key: string }).key);
    }
    return made;
  }

  // The 2025 era holds a session on the one key that opened it; the stateless era's requests take turns over three keys, as three clients would.
  const revisions = [
    {
      revision: '2025-11-25',
      keyCount: 1,
      expected: [
        'server-initialize',
        'ping',
        'tools-list',
        'logging-set-level',
        'completion-complete',
        'resources-list',
        'prompts-list',
        'dns-rebinding-protection',
      ],
    },
    {
      revision: '2026-07-28',
      keyCount: 3,
      expected: [
        'server-stateless',
        'caching',
        'http-header-validation',
        'tools-list',
        'completion-complete',
        'resources-list',
        'prompts-list',
        'sep-2164-resource-not-found',
        'tasks-capability-negotiation',
        'dns-rebinding-protection',
      ],
    },
  ];
  for (const { revision, keyCount, expected } of revisions)
    it(`passes every server scenario ${revision} requires that applies to this service`, { timeout: 300_000 }, async () => {
      keys = keyCount === 1 ? [service.apiKey] : await newKeys(keyCount);
      const cli = join('node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
      const dir = join(outDir, revision);
      // The CLI exits non-zero when any scenario fails, including those that do not apply: the results decide.
      await promisify(execFile)(process.execPath, [cli, 'server', '--url', proxyUrl, '--requirements', revision, '--output-dir', dir], {
        timeout: 280_000,
      }).catch(() => undefined);
      const results = new Map<string, Check[]>();
      for (const run of readdirSync(dir)) {
        const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(run)?.[1];
        if (scenario) results.set(scenario, JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8')) as Check[]);
      }
      for (const scenario of expected) expect([...results.keys()], scenario).toContain(scenario);
      const failures = [...results]
        .filter(([scenario]) => !(scenario in NOT_APPLICABLE))
        .flatMap(([scenario, checks]) =>
          checks.filter((c) => c.status === 'FAILURE' && !(c.id in CHECKS_NOT_APPLICABLE)).map((c) => `${scenario}: ${c.id}: ${c.errorMessage ?? ''}`),
        );
      expect(failures).toEqual([]);
    });
});
