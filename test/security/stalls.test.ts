import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { inlines, parseMarkdown } from '../../console/src/markdown';
import { createApp } from '../../workers/app';
import { MAX_BODY_DEPTH } from '../../workers/middleware/body';
import { SCHEMA_LIMITS } from '../../workers/workflows/json-schema';
import { BASE, call, expectError, signUp, type TestUser } from '../helpers/api';
import { definition, install, launch, mapping, waitForRun } from '../helpers/workflows';

/**
 * Hostile input cannot stall the isolate: one request that makes the Worker compute for seconds
 * holds up every other request on the same isolate, and one that fails half-way must not answer
 * 500. Each case here answers a clear 4xx (or the right answer) at once, where it used to take
 * seconds, minutes or a 500.
 */

const step = mapping('m', { ok: { value: true } });

describe('request bodies arrive whole and in time', () => {
  /** The app called in this isolate, so the body stream reaches it as the test made it (a real connection would buffer or cut it). */
  async function send(user: TestUser, body: ReadableStream<Uint8Array>, overrides: Record<string, string> = {}, headers: Record<string, string> = {}) {
    const request = new Request(`${BASE}/api/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': user.token, ...headers },
      body,
      duplex: 'half',
    } as RequestInit);
    const response = await createApp().fetch(request, { ...env, ...overrides });
    return { status: response.status, headers: response.headers, body: (await response.json()) as any };
  }
  const encoder = new TextEncoder();
  const keysOf = async (user: TestUser) => (await call('/api/v1/api-keys', { token: user.token })).body.data.length;

  it(`answers 400 for a JSON body nested more than ${MAX_BODY_DEPTH} levels deep, before any route reads it`, async () => {
    const user = await signUp();
    await install(user, 'open', definition('open', [step]));
    const launchRaw = (rawBody: string) => call('/api/v1/workflows/open/launch', { token: user.token, rawBody });
    const deep = `{"inputs":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    expect(expectError(await launchRaw(deep), 400, 'INVALID_INPUT').details).toMatchObject({ field: 'body', rule: 'max_depth', limit: MAX_BODY_DEPTH });
    // Brackets inside strings are text, not nesting.
    expect((await launchRaw(JSON.stringify({ inputs: { text: '\\"['.repeat(1_000) } }))).status).toBe(201);
  });

  it('answers 400 for a body that breaks off, and creates nothing', async () => {
    const user = await signUp();
    const before = await keysOf(user);
    const broken = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"name":"half'));
        controller.error(new Error('connection reset'));
      },
    });
    const error = expectError(await send(user, broken), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'incomplete' });
    expect(await keysOf(user)).toBe(before);
  });

  it('answers 408 for a body that stops arriving, and creates nothing', async () => {
    const user = await signUp();
    const before = await keysOf(user);
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"name":"slow'));
      },
    });
    const error = expectError(await send(user, stalled, { BODY_TIMEOUT_MS: '200' }), 408, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'timeout', limit: 200 });
    expect(await keysOf(user)).toBe(before);
  });

  it('still takes a body that arrives in pieces within the time', async () => {
    const user = await signUp();
    const pieces = ['{"name":', '"in pieces"', '}'];
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const piece = pieces.shift();
        if (piece === undefined) controller.close();
        else controller.enqueue(encoder.encode(piece));
      },
    });
    const answer = await send(user, trickle);
    expect(answer.status).toBe(201);
    expect(answer.body.name).toBe('in pieces');
  });

  it('counts the bytes that arrive, not the ones content-length announces', async () => {
    const user = await signUp();
    const max = Number(env.MAX_BODY_BYTES);
    const oversized = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(`{"name":"${'x'.repeat(max)}"}`));
        controller.close();
      },
    });
    const error = expectError(await send(user, oversized, {}, { 'content-length': '16' }), 413, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'body', rule: 'max_size' });
  });
});

const withInputSchema = (inputSchema: unknown) => definition('guarded', [step], { inputSchema });
const installAnswer = (user: TestUser, def: unknown) => call('/api/v1/workflows/guarded/install', { token: user.token, body: def });
const launchAnswer = (user: TestUser, inputs: unknown) => call('/api/v1/workflows/guarded/launch', { token: user.token, body: { inputs } });

/** `^(a+)+$` backtracks through every way to split the a's before it can fail on the b. */
const CATASTROPHIC = '^(a+)+$';
const HOSTILE_TEXT = `${'a'.repeat(5_000)}b`;

/** Elapsed wall time of `work`; the clock moves across the awaited I/O, so this measures the request. */
async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = Date.now();
  const result = await work();
  return [result, Date.now() - started];
}

describe('JSON Schema patterns run in linear time (RE2)', () => {
  it('checks a catastrophic pattern in an input schema at once, with the right answer', async () => {
    const user = await signUp();
    await install(user, 'guarded', withInputSchema({ type: 'object', properties: { name: { type: 'string', pattern: CATASTROPHIC } } }));

    // Backtracking took 7 s at 29 characters (in workerd) and doubles with each one more.
    const [refused, ms] = await timed(() => launchAnswer(user, { name: HOSTILE_TEXT }));
    expect(ms).toBeLessThan(5_000);
    const error = expectError(refused, 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'inputs.name', rule: 'input_schema' });
    expect((await launchAnswer(user, { name: 'a'.repeat(5_000) })).status).toBe(201);
  });

  it('runs patternProperties on RE2 too', async () => {
    const user = await signUp();
    const schema = { type: 'object', patternProperties: { [CATASTROPHIC]: { type: 'integer' } } };
    await install(user, 'guarded', withInputSchema(schema));
    const [answer, ms] = await timed(() => launchAnswer(user, { [HOSTILE_TEXT]: 'not checked: the key does not match', aaa: 1 }));
    expect(ms).toBeLessThan(5_000);
    expect(answer.status).toBe(201);
    expect(expectError(await launchAnswer(user, { aaa: 'x' }), 400, 'INVALID_INPUT').details?.field).toBe('inputs.aaa');
  });

  it('checks a resume schema pattern at once', async () => {
    const user = await signUp();
    const resumeSchema = { type: 'object', properties: { code: { type: 'string', pattern: CATASTROPHIC } } };
    const approve = { type: 'tool', id: 'approve', toolId: 'human-input', options: { metadata: { prompt: 'Code?', resumeSchema } } };
    await install(user, 'guarded', definition('guarded', [approve, step]));
    const runId = await launch(user, 'guarded');
    await waitForRun(user, runId, ['suspended']);
    const resume = (code: string) => call(`/api/v1/workflows/runs/${runId}/resume`, { token: user.token, body: { resumeData: { code } } });

    const [refused, ms] = await timed(() => resume(HOSTILE_TEXT));
    expect(ms).toBeLessThan(5_000);
    expect(expectError(refused, 400, 'INVALID_INPUT').details).toMatchObject({ field: 'resumeData.code', rule: 'resume_schema' });
    expect((await resume('aaaa')).status).toBe(200);
  });

  it('counts pattern work against the check budget: a large pattern over a long text is refused at once', async () => {
    const user = await signUp();
    await install(user, 'guarded', withInputSchema({ type: 'object', properties: { text: { type: 'string', pattern: 'a[ab]{999}d' } } }));
    const [refused, ms] = await timed(() => launchAnswer(user, { text: 'ab'.repeat(50_000) }));
    expect(ms).toBeLessThan(5_000);
    expect(expectError(refused, 400, 'INVALID_INPUT').message).toBe(`inputs: takes more than ${SCHEMA_LIMITS.steps} steps to check`);
    expect((await launchAnswer(user, { text: `a${'b'.repeat(999)}d` })).status).toBe(201);
  });

  it('refuses at install what RE2 cannot run in linear time: lookaround and backreferences', async () => {
    const user = await signUp();
    for (const pattern of ['^(?=a)a+$', '^(?!b)', '(?<=a)b', '^(a)\\1$', '^(?<x>a)\\k<x>$']) {
      const error = expectError(await installAnswer(user, withInputSchema({ type: 'string', pattern })), 400, 'INVALID_INPUT');
      expect({ pattern, field: error.details?.field, message: error.message }).toEqual({
        pattern,
        field: 'inputSchema.pattern',
        message: expect.stringContaining('no lookaround, no backreferences'),
      });
    }
    const keyed = { type: 'object', patternProperties: { '^(?!x)': true } };
    expect(expectError(await installAnswer(user, withInputSchema(keyed)), 400, 'INVALID_INPUT').details?.field).toMatch(/^inputSchema\.patternProperties/);
    // What both engines read alike is kept: classes, anchors, \uXXXX escapes, named groups.
    const kept = { type: 'object', properties: { email: { type: 'string', pattern: '^(?<word>[\\w-]+)\\u0040[a-z]{2,}\\.example$' } } };
    expect((await installAnswer(user, withInputSchema(kept))).status).toBe(201);
    expect((await launchAnswer(user, { email: 'ana-1@docs.example' })).status).toBe(201);
    expect(expectError(await launchAnswer(user, { email: 'ana@docs.example.org' }), 400, 'INVALID_INPUT').details?.field).toBe('inputs.email');
  });
});

describe('JSON Schema checks have a step budget and a depth cap', () => {
  /** Each definition applies the next one twice: 2^n subschemas for any value. */
  const doubling = (n: number) => ({
    $ref: '#/definitions/d0',
    definitions: Object.fromEntries([
      ...Array.from({ length: n }, (_, i) => [`d${i}`, { allOf: [{ $ref: `#/definitions/d${i + 1}` }, { $ref: `#/definitions/d${i + 1}` }] }]),
      [`d${n}`, {}],
    ]),
  });

  it('refuses a schema whose references multiply the work past the budget', async () => {
    const user = await signUp();
    const [answer, ms] = await timed(() => installAnswer(user, withInputSchema(doubling(20))));
    expect(ms).toBeLessThan(5_000);
    const error = expectError(answer, 400, 'INVALID_INPUT');
    expect(error.details?.field).toBe('inputSchema');
    expect(error.message).toContain(`more than ${SCHEMA_LIMITS.steps} steps`);
    expect((await installAnswer(user, withInputSchema(doubling(8)))).status).toBe(201);
  });

  it(`refuses schemas nested more than ${SCHEMA_LIMITS.depth} levels deep, whatever keyword nests them`, async () => {
    const user = await signUp();
    const chains: Record<string, (inner: unknown) => unknown> = {
      properties: (inner) => ({ type: 'object', properties: { a: inner } }),
      items: (inner) => ({ type: 'array', items: inner }),
      allOf: (inner) => ({ allOf: [inner] }),
      anyOf: (inner) => ({ anyOf: [{ type: 'null' }, inner] }),
    };
    const nested = (wrap: (inner: unknown) => unknown, times: number) => {
      let schema: unknown = { type: 'string' };
      for (let i = 0; i < times; i++) schema = wrap(schema);
      return schema;
    };
    for (const [keyword, wrap] of Object.entries(chains)) {
      const error = expectError(await installAnswer(user, withInputSchema(nested(wrap, 100))), 400, 'INVALID_INPUT');
      expect({ keyword, field: error.details?.field, message: error.message }).toEqual({
        keyword,
        field: 'inputSchema',
        message: `inputSchema: is not a valid JSON Schema: nests more than ${SCHEMA_LIMITS.depth} levels deep`,
      });
      // Deeper still, the body is refused before the compiler sees it.
      const body = expectError(await installAnswer(user, withInputSchema(nested(wrap, 200))), 400, 'INVALID_INPUT');
      expect(body.details).toMatchObject({ field: keyword === 'items' ? 'inputSchema' : 'body' });
    }
    expect((await installAnswer(user, withInputSchema(nested(chains.properties!, 30)))).status).toBe(201);
  });

  it('refuses a $ref that names no schema at install, not at launch', async () => {
    const user = await signUp();
    const schema = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };
    const error = expectError(await installAnswer(user, withInputSchema(schema)), 400, 'INVALID_INPUT');
    expect(error.message).toContain('names no schema');
  });

  it('refuses deeply nested inputs with 400, also under a recursive schema', async () => {
    const user = await signUp();
    const tree = { $ref: '#/definitions/node', definitions: { node: { type: 'object', additionalProperties: { $ref: '#/definitions/node' } } } };
    await install(user, 'guarded', withInputSchema(tree));
    const nested = (depth: number) => {
      let value: unknown = {};
      for (let i = 0; i < depth; i++) value = { a: value };
      return value;
    };
    expect((await launchAnswer(user, nested(SCHEMA_LIMITS.valueDepth - 2))).status).toBe(201);
    const error = expectError(await launchAnswer(user, nested(SCHEMA_LIMITS.valueDepth + 1)), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ field: 'inputs', rule: 'input_schema' });
  });
});

describe('console and reference assets are looked up among their own files only', () => {
  it('answers 404 for names every object inherits', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      for (const path of [`/console/assets/${name}`, `/docs/assets/${name}`]) {
        const res = await call(path);
        expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' });
      }
    }
  });
});

describe('the console Markdown preview reads hostile documents in linear time', () => {
  // Sizes where the old cubic heading and quadratic links took hours: the test timeout is the judge.
  const RUN = 20_000;
  const LONG_RUN = 1_000_000;

  it('reads a heading with a long run of spaces, hashes or both', () => {
    expect(parseMarkdown(`# a${' '.repeat(RUN)}x`)).toEqual([{ kind: 'heading', level: 1, inlines: [{ kind: 'text', text: `a${' '.repeat(RUN)}x` }] }]);
    expect(parseMarkdown(`## Title${' #'.repeat(RUN / 2)}`)).toEqual([
      { kind: 'heading', level: 2, inlines: [{ kind: 'text', text: `Title${' #'.repeat(RUN / 2 - 1)}` }] },
    ]);
    expect(parseMarkdown(`# a${'#'.repeat(RUN)}`)).toEqual([{ kind: 'heading', level: 1, inlines: [{ kind: 'text', text: 'a' }] }]);
    expect(parseMarkdown('#'.repeat(RUN))).toEqual([{ kind: 'paragraph', inlines: [{ kind: 'text', text: '#'.repeat(RUN) }] }]);
    expect(parseMarkdown('## Notes #1 ##')).toEqual([{ kind: 'heading', level: 2, inlines: [{ kind: 'text', text: 'Notes #1' }] }]);
  });

  it('reads long runs of brackets, link openings, stars, underscores and backticks', () => {
    for (const run of ['[', '[](', '![a', '[a](', '*', '_', '`']) {
      const text = run.repeat(LONG_RUN / run.length);
      expect(inlines(text)).toEqual([{ kind: 'text', text }]);
    }
    for (const [run, kind] of [
      ['**a', 'strong'],
      ['*a', 'em'],
      ['`a', 'code'],
    ] as const) {
      expect(inlines(run.repeat(LONG_RUN / run.length)).filter((inline) => inline.kind === kind).length).toBeGreaterThan(LONG_RUN / 10);
    }
    expect(inlines(`[a](${'['.repeat(LONG_RUN)}`)).toEqual([{ kind: 'text', text: `[a](${'['.repeat(LONG_RUN)}` }]);
    expect(inlines('[a [b](https://example.com/b) c](x)')).toEqual([
      { kind: 'text', text: '[a ' },
      { kind: 'link', text: 'b', href: 'https://example.com/b' },
      { kind: 'text', text: ' c](x)' },
    ]);
  });
});
