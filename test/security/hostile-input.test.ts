import { env } from 'cloudflare:workers';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_ACCESS, type RouteKey } from '../../workers/auth/route-scopes';
import { advanceClock, now, resetClock } from '../../workers/lib/clock';
import { boundShards, globalDbOf, shardBinding } from '../../workers/lib/db';
import { deliverAllChanges } from '../../workers/services/audit';
import { call, createKey, FLAT_ERRORS, signUp, type ApiResponse, type CallOptions, type TestUser } from '../helpers/api';
import { definition, install, mapping } from '../helpers/workflows';

/**
 * Hostile input (issue 11, part 2). Every write route and every paginated list route, taken from
 * ROUTE_ACCESS and the OpenAPI document (generated from the zod schemas that validate the
 * requests), gets malformed JSON, wrong types, oversized strings and arrays, prototype-pollution
 * keys, unicode edge cases, bad path ids and bad pagination. Every answer must be a 4xx in the
 * spec's error envelope (never a 5xx), D1 and R2 must be exactly as they were before each route's
 * battery, and Object.prototype must stay clean.
 */

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  exclusiveMinimum?: number;
};
type Operation = { parameters?: { in: string; name: string; schema: Schema }[]; requestBody?: { content: Record<string, { schema: Schema }> } };

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Query parameters that page a list (spec 8; lib/pagination.ts and the services' query schemas). */
const PAGINATION_PARAMS = new Set(['limit', 'cursor', 'after_id', 'before_id', 'page', 'offset']);

/** Write routes that read no body: their path parameters are the whole input. */
const NO_BODY: Record<string, string> = {
  'POST /api/v1/api-keys/:id/revoke': 'no body; the key id is the input',
  'POST /api/v1/oauth-grants/:id/revoke': 'no body; the grant id is the input',
  'POST /api/v1/agents/consents/:consentId/deny': 'no body; the consent id is the input',
  'POST /api/v1/agents/permission-requests/:requestId/deny': 'no body; the request id is the input',
  'DELETE /api/v1/agents/:keyId/scopes/:scope': 'no body; key id and scope are the input',
  'POST /api/v1/skills/:slug/uninstall': 'no body; the slug is the input',
  'POST /api/v1/skills/:slug/versions/:versionNumber/restore': 'no body; slug and version are the input',
  'POST /api/v1/skills/:slug/versions/:versionNumber/promote': 'no body; slug and version are the input',
  'DELETE /api/v1/skills/:slug/secrets/:id': 'no body; slug and binding id are the input',
  'DELETE /api/v1/secrets/:id': 'no body; the secret id is the input',
  'POST /api/v1/executions/:id/cancel': 'no body; the execution id is the input',
  'DELETE /api/v1/artifacts/:id': 'no body; the artifact id is the input',
  'POST /api/v1/workflows/runs/:runId/cancel': 'no body; the run id is the input',
  'DELETE /api/v1/workflows/queue/:runId': 'no body; the run id is the input',
  'POST /api/v1/workflows/:slug/uninstall': 'no body; the slug is the input',
  'DELETE /api/v1/workflows/:slug': 'no body; the slug is the input',
  'POST /api/v1/workflows/:slug/triggers/:triggerId/rotate-secret': 'no body; slug and trigger id are the input',
  'DELETE /api/v1/workflows/:slug/triggers/:triggerId': 'no body; slug and trigger id are the input',
  'POST /api/v1/connectors/:type/disconnect': 'no body; the connector type is the input',
  'POST /api/v1/traces/:id/continue': 'no body; the trace id is the input',
  'POST /api/v1/workspaces/:id/export': 'no body; the workspace id is the input',
  'POST /api/v1/workflows/:slug/schedules/:scheduleId/pause': 'no body; slug and schedule id are the input',
  'POST /api/v1/workflows/:slug/schedules/:scheduleId/resume': 'no body; slug and schedule id are the input',
  'DELETE /api/v1/workflows/:slug/schedules/:scheduleId': 'no body; slug and schedule id are the input',
  'DELETE /api/v1/webhooks/:id': 'no body; the endpoint id is the input',
  'POST /api/v1/webhooks/:id/rotate-secret': 'no body; the endpoint id is the input',
  'POST /api/v1/webhooks/:id/deliveries/:deliveryId/redeliver': 'no body; endpoint and delivery ids are the input',
};

/** Write routes left out of the batteries, each for a reason. */
const EXCLUDED: Record<string, string> = {
  'DELETE /api/v1/byok': 'no body and no path parameter: there is no input to make hostile',
  'POST /api/v1/billing/webhook': 'a raw body verified by stripe-signature: its own test at the end of this file',
};

/**
 * Write routes that read their JSON body themselves (no validator); they get the generic body
 * cases. One may document the shapes it tells apart (a `oneOf`), never a validated object.
 */
const SELF_PARSED_BODY: Record<string, string> = {
  'POST /api/v1/workflows/:slug/install': 'one of three definition shapes, told apart by definitionFromBody',
};

const splitKey = (key: string) => key.split(' ') as [method: string, path: string];
const paramNames = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);

// ---------------------------------------------------------------------------------------------
// Requests. The rate limit (100 a minute per credential) is stepped past with the test clock.

let sent = 0;
function send(path: string, options: CallOptions): Promise<ApiResponse> {
  if (++sent % 80 === 0) advanceClock(60_000);
  return call(path, options);
}

// ---------------------------------------------------------------------------------------------
// Stored state: every table of every D1 database, global and shards (contents, not just counts),
// and the R2 bucket's keys.

/** Columns a refused request may still change: a session slides its expiry on use (sessions are sliding). */
const VOLATILE_COLUMNS: Record<string, string[]> = { sessions: ['expires_at'] };

/** The global database and each shard, by the name their tables are reported under. */
const databases = (): [string, D1Database][] => [
  ['global', env.DB],
  ...boundShards(env).map((n): [string, D1Database] => [`shard-${n}`, shardBinding(env, n)]),
];

async function snapshot(): Promise<Map<string, string>> {
  const state = new Map<string, string>();
  for (const [name, database] of databases()) {
    const tables = (
      await database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' ORDER BY name").all<{ name: string }>()
    ).results.map((t) => t.name);
    const results = await database.batch(tables.map((t) => database.prepare(`SELECT * FROM "${t}"`)));
    tables.forEach((table, i) => {
      const volatile = VOLATILE_COLUMNS[table] ?? [];
      const rows = (results[i]!.results as Record<string, unknown>[]).map((row) => JSON.stringify(Object.entries(row).filter(([k]) => !volatile.includes(k))));
      state.set(`${name}:${table}`, rows.sort().join('\n'));
    });
  }
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.BUCKET.list({ cursor });
    keys.push(...page.objects.map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  state.set('R2', keys.sort().join('\n'));
  return state;
}

const changedStores = (before: Map<string, string>, after: Map<string, string>) =>
  [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));

// ---------------------------------------------------------------------------------------------
// JSON Schema, as the OpenAPI document gives it.

const typesOf = (s: Schema) => (s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type]);

/** Whether `s` constrains its value at all: `{}` (resumeData, request-permission's mode) takes anything. */
const constrains = (s: Schema): boolean => typesOf(s).length > 0 || !!s.enum || 'const' in s || !!s.anyOf || !!s.oneOf;

/** A shallow type check, enough to pick values a field refuses. */
function acceptsType(s: Schema, v: unknown): boolean {
  if ('const' in s) return v === s.const;
  if (s.enum) return s.enum.includes(v);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return alternatives.some((a) => acceptsType(a, v));
  const types = typesOf(s);
  if (types.length === 0) return true;
  return types.some((t) =>
    t === 'string'
      ? typeof v === 'string'
      : t === 'integer'
        ? Number.isInteger(v)
        : t === 'number'
          ? typeof v === 'number'
          : t === 'boolean'
            ? typeof v === 'boolean'
            : t === 'array'
              ? Array.isArray(v)
              : t === 'object'
                ? typeof v === 'object' && v !== null && !Array.isArray(v)
                : t === 'null'
                  ? v === null
                  : false,
  );
}

const STRING_CANDIDATES = ['hostile', 'HOSTILE_VAR', 'Hostile', 'h1', 'x'];

/** A value `s` accepts (required properties only): the otherwise-valid body one hostile field is put into. */
function sample(s: Schema): unknown {
  if ('const' in s) return s.const;
  if (s.enum) return s.enum[0];
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return sample(alternatives[0]!);
  const type = typesOf(s)[0];
  if (type === 'string') {
    if (s.format === 'email') return 'someone@example.com';
    if (s.format === 'uri') return 'https://example.com/hostile';
    const fits = (v: string) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? Infinity) && (!s.pattern || new RegExp(s.pattern).test(v));
    const found = STRING_CANDIDATES.map((c) => c.padEnd(s.minLength ?? 0, c.at(-1))).find(fits);
    if (found === undefined) throw new Error(`No sample string for ${JSON.stringify(s)}: add a candidate`);
    return found;
  }
  if (type === 'integer' || type === 'number') return Math.max(1, s.minimum ?? 1, (s.exclusiveMinimum ?? 0) + 1);
  if (type === 'boolean') return false;
  if (type === 'array') return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items ?? {}));
  if (type === 'object') return Object.fromEntries((s.required ?? []).map((name) => [name, sample(s.properties?.[name] ?? {}) ?? 'x']));
  return undefined;
}

/** The top-level fields of a body schema (of its first alternative, for a union body). */
const fieldsOf = (s: Schema): Record<string, Schema> => s.properties ?? (s.anyOf ?? s.oneOf)?.[0]?.properties ?? {};
const requiredOf = (s: Schema): string[] => s.required ?? (s.anyOf ?? s.oneOf)?.[0]?.required ?? [];

// ---------------------------------------------------------------------------------------------
// Hostile values: one well-chosen case per kind of trouble.

const MB = 1024 * 1024;
/** In this order, the first three a field refuses are sent: a string field gets a number, an object and an array. */
const WRONG_VALUES: unknown[] = [12345, { nested: { deep: true } }, [1, 'two', null], 'a-string', true, null];

const UNICODE: Record<string, string> = {
  'lone surrogate': '\ud800',
  NUL: 'a\u0000b',
  'RTL override': '\u202eexe.txt',
  'zero-width': '\u200b\u200c\u200d\ufeff',
  emoji: '👩‍👩‍👧‍👦🏳️‍🌈',
  'overlong combining sequence': `e${'\u0301'.repeat(20_000)}`,
};

/** Malformed JSON texts, sent with `content-type: application/json`. */
const MALFORMED_JSON: Record<string, string> = {
  truncated: '{"a": ',
  'single quotes': "{'a': 1}",
  'trailing garbage': '{"a": 1} x',
  'lone surrogate, then garbage': '{"a": "\\ud800" ,,}',
};

/** JSON texts that parse but are not an object. */
const NOT_AN_OBJECT: Record<string, string> = {
  array: '[{"a": 1}]',
  string: '"hostile"',
  null: 'null',
  'huge array': JSON.stringify(Array(100_000).fill(0)),
  'deep nesting': '['.repeat(100_000) + ']'.repeat(100_000),
};

/** Path segments no parameter may accept, percent-encoded as a client sends them. */
const BAD_IDS: Record<string, string> = {
  'dot-dot slash': encodeURIComponent('../x'),
  '10k characters': 'a'.repeat(10_000),
  'encoded NUL': '%00',
  'broken percent-encoding': '%E0%A4%A',
  'RTL override': encodeURIComponent('\u202e1'),
  emoji: encodeURIComponent('😀'),
  'SQL quote': encodeURIComponent("1' OR '1'='1"),
};
/** Also refused where the parameter is a number or an id (a slug may well be `0`). */
const BAD_NUMERIC_IDS: Record<string, string> = {
  negative: '-1',
  zero: '0',
  'beyond 2^53': '99999999999999999999',
};

// ---------------------------------------------------------------------------------------------
// The world the hostile requests point into: real resources, so a lax check would reach a write.

interface World {
  user: TestUser;
  key: { id: string; key: string };
  skill: string;
  executionId: string;
  secretId: string;
  bindingId: string;
  consentId: string;
  requestId: string;
  threadId: string;
  traceId: string;
  workflow: string;
  webhookId: string;
  scheduleId: string;
  triggerId: string;
}

let world: World;
/** The OpenAPI document's paths: the request schemas of every route. */
const operations: Record<string, Record<string, Operation>> = (await call('/api/v1/openapi.json')).body.paths;

async function ok(res: Promise<ApiResponse>, what: string) {
  const r = await res;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function buildWorld(): Promise<World> {
  const user = await signUp('Hostile Tester');
  const token = user.token;
  const skill = 'hostile-skill';
  await ok(
    call(`/api/v1/skills/${skill}`, {
      method: 'PUT',
      token,
      body: { name: 'Hostile', description: 'A skill to aim at.', category: 'productivity', prompt: '# Hostile\nEcho.' },
    }),
    'author skill',
  );
  const execution = await ok(call('/api/v1/executions', { token, body: { skill_slug: skill, input: 'hello' } }), 'create execution');
  const secret = await ok(call('/api/v1/secrets', { token, body: { name: 'HOSTILE_SECRET', value: 'v' } }), 'create secret');
  const binding = await ok(call(`/api/v1/skills/${skill}/secrets`, { token, body: { secretId: secret.id, envVar: 'HOSTILE_ENV' } }), 'bind secret');
  const key = await createKey(user, ['profile:read']);
  const unactivated = await createKey(user, undefined, { pendingActivation: true });
  const consent = await ok(call('/api/v1/agents/connect', { apiKey: unactivated.key, body: { agentDisplayName: 'Agent', reason: 'r' } }), 'connect');
  const request = await ok(call('/api/v1/agents/request-permission', { apiKey: key.key, body: { scope: 'memory:read', reason: 'r' } }), 'request permission');
  const thread = await ok(call('/api/v1/threads', { token, body: { skill_slug: skill } }), 'create thread');
  const workflow = 'hostile-flow';
  await install(user, workflow, definition(workflow, [mapping('m', { a: { value: 1 } })]));
  const webhook = await ok(
    call('/api/v1/webhooks', { token, body: { url: 'https://hooks.example.test/hostile', events: ['execution.completed'] } }),
    'webhook',
  );
  // Next fire in January: nothing fires while routes are measured.
  const schedule = await ok(call(`/api/v1/workflows/${workflow}/schedules`, { token, body: { cron: '0 0 1 1 *', timezone: 'UTC', input: {} } }), 'schedule');
  const trigger = await ok(call(`/api/v1/workflows/${workflow}/triggers`, { token, body: {} }), 'create trigger');
  return {
    user,
    key,
    skill,
    executionId: execution.id,
    secretId: secret.id,
    bindingId: String(binding.id),
    consentId: consent.consent_id,
    requestId: request.request_id,
    threadId: thread.id,
    traceId: thread.traceId,
    workflow,
    webhookId: webhook.id,
    scheduleId: schedule.id,
    triggerId: trigger.id,
  };
}

/** A real value for path parameter `name` of `path`, named by the segment before it. */
function realParam(path: string, name: string): string {
  const segments = path.split('/');
  const before = segments[segments.indexOf(`:${name}`) - 1]!;
  if (before === 'secrets') return path.includes('/skills/') ? world.bindingId : world.secretId;
  const byResource: Record<string, string> = {
    workspaces: world.user.workspaceId,
    'api-keys': world.key.id,
    // No app signed in here: a well-formed id of none.
    'oauth-grants': crypto.randomUUID(),
    executions: world.executionId,
    // No run has made an artifact here: a well-formed id of none.
    artifacts: 'art_999999',
    traces: world.traceId,
    threads: world.threadId,
    workflows: world.workflow,
    skills: world.skill,
    consents: world.consentId,
    'permission-requests': world.requestId,
    agents: world.key.id,
    scopes: 'profile:read',
    versions: '1',
    // A run would keep writing in the background while other routes are measured: well-formed ids of none.
    runs: crypto.randomUUID(),
    queue: crypto.randomUUID(),
    connectors: 'github',
    webhooks: world.webhookId,
    schedules: world.scheduleId,
    // The endpoint has delivered nothing, and no export was made: well-formed ids of none.
    deliveries: 'dlv_999999',
    export: 'exp_999999',
    triggers: world.triggerId,
    // The skill has no eval cases, so no eval was run: a well-formed id of none.
    evals: 'eval_999999',
  };
  const value = byResource[before];
  if (value === undefined) throw new Error(`No fixture for :${name} in ${path}: add one to realParam`);
  return value;
}

const fillPath = (path: string, override: Record<string, string> = {}) =>
  path.replace(/:(\w+)/g, (_, name: string) => override[name] ?? encodeURIComponent(realParam(path, name)));

/** The credential a route takes: an API key on agent routes, the owner's session elsewhere. */
function credentialFor(route: string): CallOptions {
  const access = ROUTE_ACCESS[route as RouteKey]!;
  return access.auth === 'agent' || access.auth === 'key' ? { apiKey: world.key.key } : { token: world.user.token };
}

// ---------------------------------------------------------------------------------------------
// The verdict on one answer, and the battery around a route's cases.

interface Case {
  label: string;
  send: () => Promise<ApiResponse>;
  /** The body field or parameter the refusal should name (checked on INVALID_INPUT). */
  field?: string | string[];
  /** A 2xx is right for this case (a reason is given where the case is built). */
  allowSuccess?: boolean;
}

function verdict(route: string, c: Case, res: ApiResponse): string | null {
  const where = `${route} [${c.label}]`;
  const shown = JSON.stringify(res.body)?.slice(0, 300);
  if (res.status >= 500) return `${where}: ${res.status} ${shown}`;
  if (res.status < 400) return c.allowSuccess ? null : `${where}: accepted with ${res.status} ${shown}`;
  const body = res.body as Record<string, any> | null;
  const flat = FLAT_ERRORS.has(route) && typeof body?.error === 'string';
  const error = flat ? { code: body!.error, message: body!.message, details: body!.details } : body?.error;
  if (typeof error?.code !== 'string' || typeof error?.message !== 'string') return `${where}: ${res.status} is not the error envelope: ${shown}`;
  if (error.code === 'INVALID_INPUT' && typeof error.details?.field !== 'string') return `${where}: INVALID_INPUT without details.field: ${shown}`;
  if (c.field !== undefined && error.code === 'INVALID_INPUT') {
    const wanted = [c.field].flat();
    const named: string[] = [error.details.field, ...(error.details.issues ?? []).map((i: { field: string }) => i.field)];
    // A union body (workflow stream) is refused as a whole: `body`.
    const names = (f: string) => f === 'body' || wanted.some((w) => f === w || f.startsWith(`${w}.`));
    if (!named.some(names)) return `${where}: refused for ${named.join(', ')} instead of ${wanted.join(' or ')}: ${shown}`;
  }
  return null;
}

/** Sends a route's cases a few at a time; then nothing may be stored and nothing polluted. */
async function battery(route: string, cases: Case[]) {
  expect(cases.length, `${route} has no cases`).toBeGreaterThan(0);
  // Listing audit or activity first moves the workspace's recorded global changes to its shard
  // (earlier changes, not the request's): moved now, a refused list has none left to move, and
  // any change a refused request records still shows in the outbox.
  await deliverAllChanges(globalDbOf(env), env);
  const before = await snapshot();
  const failures: string[] = [];
  const queue = [...cases];
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const failure = verdict(route, c, await c.send());
        if (failure) failures.push(failure);
      }
    }),
  );
  const changed = changedStores(before, await snapshot());
  if (changed.length) failures.push(`${route}: wrote to ${changed.join(', ')}`);
  if (({} as Record<string, unknown>).polluted !== undefined) failures.push(`${route}: Object.prototype was polluted`);
  expect(failures, failures.join('\n')).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// The route tables.

const operationOf = (key: string): Operation | undefined => {
  const [method, path] = splitKey(key);
  return operations[path.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];
};
const bodySchemaOf = (key: string): Schema | undefined => operationOf(key)?.requestBody?.content['application/json']?.schema;
const queryOf = (key: string) => (operationOf(key)?.parameters ?? []).filter((p) => p.in === 'query');

const routeKeys = Object.keys(ROUTE_ACCESS);
const writeRoutes = routeKeys.filter((key) => WRITE_METHODS.has(splitKey(key)[0]));
const bodyRoutes = writeRoutes.filter((key) => !(key in EXCLUDED) && !(key in NO_BODY));
const idRoutes = writeRoutes.filter((key) => !(key in EXCLUDED) && paramNames(splitKey(key)[1]).length > 0);
const listRoutes = routeKeys.filter((key) => splitKey(key)[0] === 'GET' && queryOf(key).some((p) => PAGINATION_PARAMS.has(p.name)));

beforeAll(async () => {
  world = await buildWorld();
});

afterAll(() => resetClock());

describe('the hostile-input tables', () => {
  it('classify every write route: a declared body, a self-parsed body, no body, or excluded with a reason', () => {
    const unclassified = writeRoutes.filter((key) => !bodySchemaOf(key) && !(key in NO_BODY) && !(key in SELF_PARSED_BODY) && !(key in EXCLUDED));
    expect(unclassified, 'write routes without a declared body: add each to NO_BODY, SELF_PARSED_BODY or EXCLUDED').toEqual([]);
    const listed = [...Object.keys(NO_BODY), ...Object.keys(SELF_PARSED_BODY), ...Object.keys(EXCLUDED)];
    expect(
      listed.filter((key) => !(key in ROUTE_ACCESS)),
      'entries for routes that no longer exist',
    ).toEqual([]);
    expect(
      Object.keys(NO_BODY).filter((key) => bodySchemaOf(key)),
      'listed as body-less, but they declare a body now',
    ).toEqual([]);
    expect(
      Object.keys(SELF_PARSED_BODY).filter((key) => bodySchemaOf(key) && !bodySchemaOf(key)!.oneOf),
      'listed as self-parsed, but they validate a body now',
    ).toEqual([]);
    expect(
      Object.keys(NO_BODY).filter((key) => paramNames(splitKey(key)[1]).length === 0),
      'body-less routes without a path parameter have no input: exclude them',
    ).toEqual([]);
  });

  it('find the paginated list routes in the query schemas', () => {
    expect(listRoutes).toEqual(
      expect.arrayContaining(['GET /api/v1/executions', 'GET /api/v1/traces', 'GET /api/v1/secrets', 'GET /api/v1/marketplace/skills']),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Write routes with a body.

function bodyCases(route: string): Case[] {
  const [method, path] = splitKey(route);
  const url = fillPath(path);
  const auth = credentialFor(route);
  const raw =
    (rawBody: string, headers: Record<string, string> = {}) =>
    () =>
      send(url, { method, rawBody, headers, ...auth });
  const json = (body: unknown) => () => send(url, { method, body, ...auth });
  const cases: Case[] = [
    ...Object.entries(MALFORMED_JSON).map(([name, text]) => ({ label: `malformed JSON: ${name}`, send: raw(text), field: 'body' })),
    ...Object.entries(NOT_AN_OBJECT).map(([name, text]) => ({ label: `not an object: ${name}`, send: raw(text) })),
    { label: 'body over the 1 MB cap', send: json({ x: 'a'.repeat(MB) }), field: 'body' },
  ];

  const schema = route in SELF_PARSED_BODY ? undefined : bodySchemaOf(route);
  if (!schema) {
    // A self-parsed body has no declared fields: the object cases stand alone.
    return [
      ...cases,
      { label: '__proto__ key', send: raw('{"__proto__": {"polluted": 1}}') },
      { label: 'constructor.prototype keys', send: raw('{"constructor": {"prototype": {"polluted": 1}}}') },
      { label: '__proto__ holding the fields', send: raw('{"__proto__": {"id": "x", "graph": [], "artifactId": "art_1", "polluted": 1}}') },
      { label: 'JSON sent as text/plain', send: raw('{"__proto__": {"polluted": 1}}', { 'content-type': 'text/plain' }) },
    ];
  }

  const valid = (sample(schema) ?? {}) as Record<string, unknown>;
  const typed = Object.entries(fieldsOf(schema)).filter(([, s]) => constrains(s));
  // Where every field is optional, `{}` is a valid body: the object cases then carry one refused field.
  const [forcedField, forcedSchema] = requiredOf(schema).length === 0 && typed[0] ? typed[0] : [];
  const forced = forcedField ? { [forcedField]: WRONG_VALUES.find((v) => !acceptsType(forcedSchema!, v)) } : {};
  const withKey = (key: string) => raw(`{${key}${Object.keys(forced).length ? `, ${JSON.stringify(forced).slice(1, -1)}` : ''}}`);
  cases.push(
    { label: '__proto__ key', send: withKey('"__proto__": {"polluted": 1}'), field: forcedField },
    { label: 'constructor.prototype keys', send: withKey('"constructor": {"prototype": {"polluted": 1}}'), field: forcedField },
    // A valid body only on the prototype: whatever read inherited properties would accept it.
    ...(forcedField ? [] : [{ label: '__proto__ holding a valid body', send: raw(`{"__proto__": ${JSON.stringify({ ...valid, polluted: 1 })}}`) }]),
    // Hono reads a body of another content type as `{}`: with all fields optional that was a silent success.
    {
      label: 'valid JSON sent as text/plain',
      send: raw(JSON.stringify({ ...valid, ...forced }), { 'content-type': 'text/plain' }),
      field: ['content-type', ...(forcedField ? [forcedField] : [])],
    },
  );

  let unicodeTurn = 0;
  for (const [field, s] of typed) {
    for (const wrong of WRONG_VALUES.filter((v) => !acceptsType(s, v)).slice(0, 3)) {
      cases.push({ label: `${field} = ${JSON.stringify(wrong)}`, send: json({ ...valid, [field]: wrong }), field });
    }
    const isString = typesOf(s).includes('string') || !!s.anyOf || !!s.oneOf;
    if (isString && s.maxLength !== undefined) {
      cases.push({ label: `${field} one over maxLength ${s.maxLength}`, send: json({ ...valid, [field]: 'a'.repeat(s.maxLength + 1) }), field });
    }
    // Unicode where the field is constrained (pattern, enum, format, a long minimum); free text may hold any of it.
    if (isString && (s.pattern || s.enum || s.format || (s.minLength ?? 0) > 1)) {
      const entries = Object.entries(UNICODE);
      // The first constrained field of a route gets every case, the others one each in turn.
      const picked = unicodeTurn++ === 0 ? entries : [entries[unicodeTurn % entries.length]!];
      for (const [name, value] of picked) cases.push({ label: `${field} ${name}`, send: json({ ...valid, [field]: value }), field });
    }
    if (typesOf(s).includes('array') && s.maxItems !== undefined) {
      cases.push({
        label: `${field} one over maxItems ${s.maxItems}`,
        send: json({ ...valid, [field]: Array(s.maxItems + 1).fill(sample(s.items ?? {}) ?? 'x') }),
        field,
      });
    }
  }
  return cases;
}

describe('write routes refuse hostile bodies: a 4xx envelope, nothing stored', () => {
  it.each(bodyRoutes)('%s', async (route) => {
    await battery(route, bodyCases(route));
  });
});

// ---------------------------------------------------------------------------------------------
// Bad path ids, on every write route with a path parameter.

/** Parameters that are names rather than ids: a number is a legitimate slug. */
const NAME_PARAMS = new Set(['slug', 'scope', 'type']);

function badIdCases(route: string): Case[] {
  const [method, path] = splitKey(route);
  const schema = bodySchemaOf(route);
  // An otherwise-valid body, so the path parameter is what decides.
  const body = schema ? (sample(schema) ?? {}) : undefined;
  return paramNames(path).flatMap((param) =>
    Object.entries({ ...BAD_IDS, ...(NAME_PARAMS.has(param) ? {} : BAD_NUMERIC_IDS) }).map(([name, bad]) => ({
      label: `:${param} ${name}`,
      send: () => send(fillPath(path, { [param]: bad }), { method, ...(body === undefined ? {} : { body }), ...credentialFor(route) }),
      field: param,
    })),
  );
}

describe('write routes refuse bad path ids: a 4xx envelope, nothing stored', () => {
  it.each(idRoutes)('%s', async (route) => {
    await battery(route, badIdCases(route));
  });
});

// ---------------------------------------------------------------------------------------------
// Bad pagination, on every list route.

const base64url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

const BAD_PAGINATION: Record<string, [label: string, query: string][]> = {
  limit: [
    ['limit=-1', 'limit=-1'],
    ['limit=0', 'limit=0'],
    ['limit=1e9', 'limit=1e9'],
    ['limit=abc', 'limit=abc'],
    ['limit=1.5', 'limit=1.5'],
    ['limit repeated', 'limit=1&limit=2'],
  ],
  offset: [
    ['offset=-1', 'offset=-1'],
    ['offset=abc', 'offset=abc'],
    ['offset=1e12', 'offset=1e12'],
  ],
  after_id: [
    ['after_id=abc', 'after_id=abc'],
    ['after_id 10k', `after_id=${'a'.repeat(10_000)}`],
    ['after_id NUL', 'after_id=%00'],
    ['after_id RTL', `after_id=${encodeURIComponent('\u202e1')}`],
    ['after_id and before_id', 'after_id=1&before_id=2'],
    ['after_id repeated', 'after_id=1&after_id=2'],
  ],
  before_id: [['before_id=abc', 'before_id=abc']],
  cursor: [
    ['cursor garbage', 'cursor=%25%25garbage'],
    ['cursor base64 of broken JSON', `cursor=${base64url('{"a":')}`],
    ['cursor base64 of null', `cursor=${base64url('null')}`],
    ['cursor base64 of __proto__', `cursor=${base64url('{"__proto__":{"polluted":1},"id":"x","t":"y"}')}`],
    ['cursor base64 of wrong types', `cursor=${base64url('{"at":"yesterday","id":42,"lastActivityAt":{},"k":[]}')}`],
    ['cursor 10k', `cursor=${'a'.repeat(10_000)}`],
    ['cursor repeated', 'cursor=a&cursor=b'],
  ],
  page: [
    ['page=-1', 'page=-1'],
    ['page=abc', 'page=abc'],
  ],
};

/** Cases a route accepts by design, each with its reason. */
function acceptedByDesign(route: string, param: string, label: string, schema: Schema): boolean {
  // Spec 8: the trace list and its turns clamp `limit` (to 1..200) instead of refusing it.
  if (param === 'limit' && (schema.minimum ?? 0) < 0) return ['limit=-1', 'limit=0', 'limit=1e9'].includes(label);
  // The marketplace pages alphabetically by slug: any short string is a position in that order.
  if (route === 'GET /api/v1/marketplace/skills' && (param === 'after_id' || param === 'before_id'))
    return !label.includes('10k') && !label.includes('repeated') && !label.includes('and');
  return false;
}

function paginationCases(route: string): Case[] {
  const url = fillPath(splitKey(route)[1]);
  const auth = credentialFor(route);
  return queryOf(route)
    .filter((q) => PAGINATION_PARAMS.has(q.name))
    .flatMap((p) =>
      (BAD_PAGINATION[p.name] ?? []).map(([label, query]) => ({
        label,
        send: () => send(`${url}?${query}`, { method: 'GET', ...auth }),
        // Both cursors at once: either may be named.
        field: label === 'after_id and before_id' ? ['after_id', 'before_id'] : p.name,
        allowSuccess: acceptedByDesign(route, p.name, label, p.schema),
      })),
    );
}

describe('list routes refuse bad pagination: a 4xx envelope, nothing stored', () => {
  it.each(listRoutes)('%s', async (route) => {
    await battery(route, paginationCases(route));
  });
});

// ---------------------------------------------------------------------------------------------
// Read routes of one execution: bad path ids, and bad execution filters on the artifacts list.

const FILTERS: Record<string, [label: string, query: string][]> = {
  'GET /api/v1/artifacts': [
    ...Object.entries({ ...BAD_IDS, ...BAD_NUMERIC_IDS }).map(([name, bad]): [string, string] => [`executionId ${name}`, `executionId=${bad}`]),
    ['executionId repeated', 'executionId=1&executionId=2'],
    ['executionId of another prefix', 'executionId=art_1'],
  ],
};

describe('execution reads refuse bad ids and filters: a 4xx envelope, nothing stored', () => {
  it('GET /api/v1/executions/:id', async () => {
    await battery('GET /api/v1/executions/:id', badIdCases('GET /api/v1/executions/:id'));
  });

  it.each(Object.keys(FILTERS))('%s', async (route) => {
    const auth = credentialFor(route);
    await battery(
      route,
      FILTERS[route]!.map(([label, query]) => ({
        label,
        send: () => send(`${splitKey(route)[1]}?${query}`, { method: 'GET', ...auth }),
        field: 'executionId',
      })),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// The Stripe webhook: its body is raw and signed. Bad signatures are refused in
// test/routes/billing-stripe.test.ts; here the signature is good and the body is hostile.

describe('POST /api/v1/billing/webhook with a valid signature over a hostile body', () => {
  it('answers 4xx or an ignored 200, never a 5xx, grants nothing and pollutes nothing', async () => {
    const userId = world.user.user.id;
    const event = (object: unknown) =>
      JSON.stringify({ id: `evt_${crypto.randomUUID().replaceAll('-', '')}`, object: 'event', type: 'checkout.session.completed', data: { object } });
    const bodies: Record<string, string> = {
      ...MALFORMED_JSON,
      ...NOT_AN_OBJECT,
      'event without data': '{"id": "evt_1", "type": "checkout.session.completed"}',
      'data.object a string': event('hostile'),
      'metadata of wrong types': event({
        id: 'cs_1',
        payment_status: 'paid',
        client_reference_id: 42,
        metadata: { userId: { id: userId }, packId: ['regular'] },
      }),
      'metadata through __proto__': event({
        id: 'cs_2',
        payment_status: 'paid',
        metadata: JSON.parse(`{"__proto__": {"userId": "${userId}", "packId": "regular", "polluted": 1}}`),
      }),
      'unknown pack, unicode user': event({ id: 'cs_3', payment_status: 'paid', metadata: { userId: `${userId}\u0000`, packId: '\u202eregular' } }),
    };
    const cases: Case[] = Object.entries(bodies).map(([label, payload]) => ({
      label,
      allowSuccess: true,
      send: async () => {
        const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
          payload,
          secret: env.STRIPE_WEBHOOK_SECRET!,
          timestamp: Math.floor(now() / 1000),
        });
        return send('/api/v1/billing/webhook', { method: 'POST', rawBody: payload, headers: { 'stripe-signature': signature } });
      },
    }));
    await battery('POST /api/v1/billing/webhook', cases);
  });
});
