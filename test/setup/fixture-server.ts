/**
 * Vitest global setup (runs in Node, not workerd): a local HTTP server standing in for the
 * outside world the Worker fetches from: another instance's marketplace (registry installs),
 * a git host serving archives of a commit (POST /api/v1/install), and the model providers'
 * streaming APIs (`/model/anthropic/<scenario>`, `/model/openai/<scenario>` as base URLs), and
 * GitHub's REST API under `/github` (./fake-github.ts), and OAuth client metadata documents
 * under `/oauth-client/` (./client-metadata.ts), and hostile answers to outbound fetches under
 * `/outbound/` (./outbound-fixtures.ts).
 * Anything not listed answers 404, so an unexpected request fails its test.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { TestProject } from 'vitest/node';
import { serveClientMetadata } from './client-metadata';
import { serveGithub } from './fake-github';
import { serveOutbound } from './outbound-fixtures';
import { evalAnswer } from './eval-model';
import { toolCallingAnswer } from './tool-calling-model';
import { FIXTURE_PORT } from './fixture-port';
import { MODEL_KEYS } from './provided';

export const COMMIT = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';

const skillMd = (slug: string, title: string) =>
  `---\nname: ${slug}\ndescription: Fixture skill ${slug}.\nmetadata:\n  title: ${title}\n  author: Fixture Registry\n  category: research\n---\nYou are the ${title} fixture.\n`;

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** Same checksum rule as workers/lib/bundle.ts: SHA-256 over sorted `path\nsha256\n` lines. */
function checksum(files: { path: string; data: Buffer }[]) {
  const listing = [...files]
    .sort((a, b) => (a.path < b.path ? -1 : 1))
    .map((f) => `${f.path}\n${sha(f.data)}\n`)
    .join('');
  return sha(listing);
}

function registryRoutes(): Map<string, unknown> {
  const routes = new Map<string, unknown>();
  const add = (slug: string, files: { path: string; data: Buffer }[], advertised = checksum(files)) => {
    const base = `/api/v1/marketplace/skills/${slug}`;
    routes.set(base, {
      slug,
      name: slug,
      description: 'fixture',
      category: 'research',
      repository: 'https://git.example.test/fixtures/skills',
      prompt: 'fixture',
      author: 'Fixture Registry',
      version: '2.0.0',
      commitHash: COMMIT,
      license: null,
      contentChecksum: advertised,
      filesCount: files.length,
    });
    routes.set(`${base}/bundle`, {
      slug,
      contentChecksum: advertised,
      files: files.map((f) => ({ path: f.path, base64: f.data.toString('base64') })),
    });
  };
  add('remote-skill', [
    { path: 'SKILL.md', data: Buffer.from(skillMd('remote-skill', 'Remote Skill')) },
    { path: 'references/guide.md', data: Buffer.from('# Guide\n') },
  ]);
  const tampered = [{ path: 'SKILL.md', data: Buffer.from(skillMd('tampered-skill', 'Tampered')) }];
  add('tampered-skill', tampered, '0'.repeat(64));
  return routes;
}

/** Archives laid out like a git host's: one top folder `skills-<commit>/` holding the repository. */
function buildArchives(): Map<string, Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'skill-archives-'));
  const top = join(dir, `skills-${COMMIT}`);
  const skill = join(top, 'skills', 'archived-skill');
  mkdirSync(join(skill, 'assets'), { recursive: true });
  writeFileSync(join(skill, 'SKILL.md'), skillMd('archived-skill', 'Archived Skill'));
  writeFileSync(join(skill, 'assets', 'template.md'), '# Template\n');
  writeFileSync(join(top, 'README.md'), '# fixture repository\n');
  const unsafe = join(dir, 'unsafe');
  mkdirSync(unsafe);
  writeFileSync(join(unsafe, 'SKILL.md'), skillMd('unsafe', 'Unsafe'));
  execFileSync('ln', ['-s', '/etc/passwd', join(unsafe, 'passwd')]);

  const archives = new Map<string, Buffer>();
  execFileSync('tar', ['--format=pax', '-czf', join(dir, 'repo.tar.gz'), '-C', dir, `skills-${COMMIT}`]);
  archives.set(`/fixtures/skills/archive/${COMMIT}.tar.gz`, readFileSync(join(dir, 'repo.tar.gz')));
  execFileSync('tar', ['--format=pax', '-czf', join(dir, 'unsafe.tar.gz'), '-C', dir, 'unsafe']);
  archives.set('/fixtures/unsafe.tar.gz', readFileSync(join(dir, 'unsafe.tar.gz')));
  rmSync(dir, { recursive: true, force: true });
  return archives;
}

/*
 * Model provider fixtures. Each scenario is one recorded exchange: the exact request body the
 * adapter must send (our messages and tools converted to the provider's format) and the answer,
 * in the provider's documented wire format. Every SSE frame is written in two pieces split
 * mid-frame (and mid-character where it is UTF-8), as a network may deliver it. A wrong path,
 * method or body answers 400 naming the first difference; a wrong key answers 401 as the real
 * APIs do.
 */

interface ModelScenario {
  body: unknown;
  status?: number;
  /** SSE frames for a 200, or the JSON error body for another status. */
  answer: string[] | unknown;
  /** Drop the connection after the frames instead of ending the response. */
  drop?: boolean;
  /** Answer any well-formed request (a whole agent run, whose prompt the test does not pin). */
  anyBody?: boolean;
  /** Where a held answer (HELD_MARKER) waits: before this frame; by default the last. */
  holdAt?: number;
}

const SYSTEM = 'You are a careful assistant.';
const USER_TEXT = 'Summarise: we ship on Friday. Ana writes the notes.';
const TOOLS = [
  {
    name: 'write_artifact',
    description: 'Save a file as an artifact.',
    schema: { type: 'object', properties: { name: { type: 'string' }, content: { type: 'string' } }, required: ['name', 'content'] },
  },
  {
    name: 'append_memory',
    description: 'Append a note to working memory.',
    schema: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
  },
];
const NOTES = { name: 'notes.md', content: '# Notes\n- We ship on Friday.\n- Ana writes the notes.' };

/** Where the first difference between what arrived and what was expected lies. */
function firstDifference(actual: unknown, expected: unknown, path = 'body'): string | null {
  if (isDeepStrictEqual(actual, expected)) return null;
  if (actual && expected && typeof actual === 'object' && typeof expected === 'object') {
    for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
      const found = firstDifference((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key], `${path}.${key}`);
      if (found) return found;
    }
  }
  return `${path} is ${JSON.stringify(actual)?.slice(0, 120)}, expected ${JSON.stringify(expected)?.slice(0, 120)}`;
}

/** Anthropic Messages API: request bodies, and SSE events as the streaming Messages API sends them. */
function anthropicScenarios(): Map<string, ModelScenario> {
  const frame = (data: { type: string; [field: string]: unknown }) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
  const start = (inputTokens: number) =>
    frame({
      type: 'message_start',
      message: {
        id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
        type: 'message',
        role: 'assistant',
        content: [],
        model: 'claude-sonnet-5',
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    });
  const blockStart = (index: number, content_block: unknown) => frame({ type: 'content_block_start', index, content_block });
  const delta = (index: number, d: unknown) => frame({ type: 'content_block_delta', index, delta: d });
  const blockStop = (index: number) => frame({ type: 'content_block_stop', index });
  const ping = 'event: ping\ndata: {"type": "ping"}\n\n';
  const end = (stop_reason: string, output_tokens: number) => [
    frame({ type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage: { output_tokens } }),
    frame({ type: 'message_stop' }),
  ];
  const text = (index: number, ...pieces: string[]) => [
    blockStart(index, { type: 'text', text: '' }),
    ...pieces.map((t) => delta(index, { type: 'text_delta', text: t })),
    blockStop(index),
  ];
  const error = (type: string, message: string) => ({ type: 'error', error: { type, message } });

  const user = { role: 'user', content: [{ type: 'text', text: USER_TEXT }] };
  const request = (messages: unknown[]) => ({
    model: 'claude-sonnet-5',
    max_tokens: 1024,
    system: SYSTEM,
    messages,
    tools: TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.schema })),
    thinking: { type: 'disabled' },
    stream: true,
  });
  const first = request([user]);
  const toolUse = { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'write_artifact', input: NOTES };
  const notesJson = JSON.stringify(NOTES);

  return new Map<string, ModelScenario>([
    ['text', { body: first, answer: [start(25), ...text(0, 'We ship on Friday; ', 'Ana writes the notes, déjà prêtes.'), ping, ...end('end_turn', 15)] }],
    [
      'tool-use',
      {
        body: first,
        answer: [
          start(472),
          ...text(0, "I'll save the notes first."),
          ping,
          blockStart(1, { type: 'tool_use', id: toolUse.id, name: toolUse.name, input: {} }),
          delta(1, { type: 'input_json_delta', partial_json: '' }),
          delta(1, { type: 'input_json_delta', partial_json: notesJson.slice(0, 9) }),
          delta(1, { type: 'input_json_delta', partial_json: notesJson.slice(9, 30) }),
          delta(1, { type: 'input_json_delta', partial_json: notesJson.slice(30) }),
          blockStop(1),
          ...end('tool_use', 89),
        ],
      },
    ],
    [
      'tool-result',
      {
        body: request([
          user,
          { role: 'assistant', content: [{ type: 'text', text: "I'll save the notes first." }, toolUse] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: toolUse.id, content: 'Saved notes.md' },
              { type: 'text', text: 'Keep it short.' },
            ],
          },
        ]),
        answer: [start(580), ...text(0, 'Saved. We ship on Friday.'), ...end('end_turn', 9)],
      },
    ],
    [
      'thinking',
      {
        body: first,
        answer: [
          start(30),
          blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
          delta(0, { type: 'thinking_delta', thinking: 'The user wants a short summary.' }),
          delta(0, { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' }),
          blockStop(0),
          blockStart(1, { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' }),
          blockStop(1),
          ...text(2, 'Friday.'),
          ...end('max_tokens', 1024),
        ],
      },
    ],
    [
      'error-overloaded',
      {
        body: first,
        answer: [
          start(25),
          blockStart(0, { type: 'text', text: '' }),
          delta(0, { type: 'text_delta', text: 'We ship' }),
          frame(error('overloaded_error', 'Overloaded')),
        ],
      },
    ],
    ['error-api', { body: first, answer: [start(25), frame(error('api_error', 'Internal server error'))] }],
    ['truncated', { body: first, answer: [start(25), ...text(0, 'We ship')] }],
    ['dropped', { body: first, answer: [start(25), blockStart(0, { type: 'text', text: '' }), delta(0, { type: 'text_delta', text: 'We ship' })], drop: true }],
    ['overloaded', { body: first, status: 529, answer: error('overloaded_error', 'Overloaded') }],
    ['invalid', { body: first, status: 400, answer: error('invalid_request_error', 'max_tokens: must be at least 1') }],
  ]);
}

/** OpenAI Chat Completions: request bodies and `data:` chunks as OpenAI streams them, then [DONE]. */
function openaiScenarios(): Map<string, ModelScenario> {
  const chunk = (choices: unknown[], usage: unknown = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-AbC123', object: 'chat.completion.chunk', created: 1731600000, model: 'gpt-4o-mini-2024-07-18', system_fingerprint: 'fp_0ba0d124f1', choices, usage })}\n\n`;
  const delta = (d: unknown, finish_reason: string | null = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason }]);
  const usage = (prompt_tokens: number, completion_tokens: number) =>
    chunk([], {
      prompt_tokens,
      completion_tokens,
      total_tokens: prompt_tokens + completion_tokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    });
  const done = 'data: [DONE]\n\n';
  const role = delta({ role: 'assistant', content: '', refusal: null });
  const call = (index: number, id: string, name: string) => delta({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] });
  const args = (index: number, piece: string) => delta({ tool_calls: [{ index, function: { arguments: piece } }] });

  const request = (messages: unknown[]) => ({
    model: 'gpt-4o-mini',
    messages: [{ role: 'system', content: SYSTEM }, ...messages],
    tools: TOOLS.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.schema } })),
    max_tokens: 1024,
    stream: true,
    stream_options: { include_usage: true },
  });
  const user = { role: 'user', content: USER_TEXT };
  const first = request([user]);
  const notesJson = JSON.stringify(NOTES);
  const memoryJson = JSON.stringify({ content: 'Release: Friday' });

  return new Map<string, ModelScenario>([
    [
      'text',
      {
        body: first,
        answer: [
          role,
          delta({ content: 'We ship on Friday; ' }),
          delta({ content: 'Ana writes the notes, déjà prêtes.' }),
          delta({}, 'stop'),
          usage(19, 12),
          done,
        ],
      },
    ],
    [
      'tool-calls',
      {
        body: first,
        answer: [
          delta({ role: 'assistant', content: null, refusal: null }),
          call(0, 'call_abc123', 'write_artifact'),
          args(0, notesJson.slice(0, 9)),
          args(0, notesJson.slice(9, 30)),
          args(0, notesJson.slice(30)),
          call(1, 'call_def456', 'append_memory'),
          args(1, memoryJson.slice(0, 12)),
          args(1, memoryJson.slice(12)),
          delta({}, 'tool_calls'),
          usage(82, 57),
          done,
        ],
      },
    ],
    [
      'tool-result',
      {
        body: request([
          user,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_abc123', type: 'function', function: { name: 'write_artifact', arguments: notesJson } },
              { id: 'call_def456', type: 'function', function: { name: 'append_memory', arguments: memoryJson } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_abc123', content: 'Saved notes.md' },
          { role: 'tool', tool_call_id: 'call_def456', content: 'Error: Working memory is full' },
        ]),
        answer: [role, delta({ content: 'Saved the notes.' }), delta({}, 'length'), usage(140, 4), done],
      },
    ],
    [
      'reasoning-no-usage',
      {
        body: first,
        answer: [
          delta({ role: 'assistant', content: null, reasoning_content: 'Short answer.' }),
          delta({ reasoning_content: ' Mention Friday.' }),
          delta({ content: 'Friday.' }),
          delta({}, 'stop'),
        ],
      },
    ],
    [
      'error',
      {
        body: first,
        answer: [
          role,
          delta({ content: 'We ship' }),
          `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', param: null, code: null } })}\n\n`,
        ],
      },
    ],
    [
      // A user's own key (BYOK) running a whole turn through the service: vitest.config.ts points OPENAI_BASE_URL here.
      'byok',
      // Its words come as three deltas in quick succession; held (HELD_MARKER), it waits right after them.
      {
        body: null,
        anyBody: true,
        answer: [role, delta({ content: 'Done ' }), delta({ content: 'on your ' }), delta({ content: 'own key.' }), delta({}, 'stop'), usage(1200, 300), done],
        holdAt: 4,
      },
    ],
    [
      'rate-limited',
      {
        body: first,
        status: 429,
        answer: {
          error: {
            message: 'Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.',
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        },
      },
    ],
  ]);
}

/** `/model/<provider>/<scenario>/<the provider's path>` → how to check the request and what to answer. */
function modelRoutes() {
  const routes = new Map<string, { scenario: ModelScenario; authorized: (req: IncomingMessage) => boolean; unauthorized: unknown }>();
  for (const [name, scenario] of anthropicScenarios()) {
    routes.set(`/model/anthropic/${name}/v1/messages`, {
      scenario,
      authorized: (req) => req.headers['x-api-key'] === MODEL_KEYS.anthropic && req.headers['anthropic-version'] === '2023-06-01',
      unauthorized: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
    });
  }
  for (const [name, scenario] of openaiScenarios()) {
    routes.set(`/model/openai/${name}/chat/completions`, {
      scenario,
      authorized: (req) => req.headers.authorization === `Bearer ${name === 'byok' ? MODEL_KEYS.byok : MODEL_KEYS.openai}`,
      unauthorized: {
        error: {
          message: 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      },
    });
  }
  return routes;
}

/**
 * Answers held open (a request whose text says `[hold the stream]`, or `[hold the stream:<name>]`):
 * their last frame (or the scenario's `holdAt`) waits until `POST /model/release?name=<name>` (as a
 * slow model keeps its stream open between tokens). Files run side by side: each names its own
 * holds, so one file's release never ends another's; a release without a name ends them all.
 */
const HELD_MARKER = /\[hold the stream(?::([\w-]+))?\]/;
const held = new Map<string, (() => void)[]>();

async function serveModel(req: IncomingMessage, res: ServerResponse, route: NonNullable<ReturnType<ReturnType<typeof modelRoutes>['get']>>) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  if (req.method !== 'POST' || req.headers['content-type'] !== 'application/json') {
    return json(400, { error: { type: 'invalid_request_error', message: `fixture: expected a JSON POST, got ${req.method} ${req.headers['content-type']}` } });
  }
  if (!route.authorized(req)) return json(401, route.unauthorized);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return json(400, { error: { type: 'invalid_request_error', message: 'fixture: the body is not JSON' } });
  }
  const difference = route.scenario.anyBody ? null : firstDifference(body, route.scenario.body);
  if (difference) return json(400, { error: { type: 'invalid_request_error', message: `fixture: ${difference}` } });
  const { status = 200, answer: scripted } = route.scenario;
  if (status !== 200) return json(status, scripted);
  const answer = ((route.scenario.anyBody && (evalAnswer(body) ?? toolCallingAnswer(body))) || scripted) as string[];
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const hold = HELD_MARKER.exec(JSON.stringify(body));
  for (const [i, frame] of answer.entries()) {
    if (hold && i === (route.scenario.holdAt ?? answer.length - 1)) {
      const name = hold[1] ?? '';
      await new Promise<void>((resolve) => held.set(name, [...(held.get(name) ?? []), resolve]));
    }
    const bytes = Buffer.from(frame, 'utf8');
    const middle = Math.ceil(bytes.length / 2);
    for (const piece of [bytes.subarray(0, middle), bytes.subarray(middle)]) {
      res.write(piece);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  if (route.scenario.drop) res.destroy();
  else res.end();
}

/** Answers what arrived (method, body, headers) as JSON: the run's http_request tool is checked against it. */
async function echo(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, body, headers: req.headers }));
}

/** What each `/inbox/<name>` received (method, URL, headers, body), as the receiving site saw it, unmasked. */
const inboxes = new Map<string, { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[]>();

/**
 * Records a request to `/inbox/<name>`; `GET /inbox/<name>/__read` answers the records instead.
 * An inbox named `fail<n>-…` answers 500 to its first n requests (a receiver that is down, then recovers).
 */
async function inbox(req: IncomingMessage, res: ServerResponse, path: string) {
  const read = /^\/inbox\/([^/]+)\/__read$/.exec(path);
  if (read && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(inboxes.get(read[1]!) ?? []));
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const name = path.split('/')[2]!;
  const received = [...(inboxes.get(name) ?? []), { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }];
  inboxes.set(name, received);
  const failures = Number(/^fail(\d+)-/.exec(name)?.[1] ?? 0);
  if (received.length <= failures) res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
  else res.writeHead(200, { 'content-type': 'text/plain' }).end('received');
}

export default async function setup(project: TestProject) {
  const json = registryRoutes();
  const binary = buildArchives();
  const models = modelRoutes();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const model = models.get(path);
    if (path.startsWith('/github/')) {
      serveGithub(req, res, `http://127.0.0.1:${FIXTURE_PORT}`).catch(() => res.destroy());
    } else if (model) {
      serveModel(req, res, model).catch(() => res.destroy());
    } else if (path.startsWith('/oauth-client')) {
      serveClientMetadata(req, res, `http://127.0.0.1:${FIXTURE_PORT}`);
    } else if (path === '/model/release' && req.method === 'POST') {
      const name = new URL(req.url ?? '/', 'http://fixture').searchParams.get('name');
      for (const key of name === null ? [...held.keys()] : [name]) {
        for (const release of held.get(key) ?? []) release();
        held.delete(key);
      }
      res.writeHead(204).end();
    } else if (path.startsWith('/outbound/')) {
      serveOutbound(req, res);
    } else if (path === '/echo') {
      echo(req, res).catch(() => res.destroy());
    } else if (path.startsWith('/inbox/')) {
      inbox(req, res, path).catch(() => res.destroy());
    } else if (json.has(path)) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json.get(path)));
    } else if (binary.has(path)) {
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(binary.get(path));
    } else {
      res.writeHead(404).end();
    }
  });
  // A fixed port, because the Worker's own settings (vitest.config.ts) name it as a model base URL.
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(FIXTURE_PORT, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  project.provide('fixtureOrigin', `http://127.0.0.1:${port}`);
  project.provide('fixtureCommit', COMMIT);
  project.provide('modelKeys', MODEL_KEYS);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
