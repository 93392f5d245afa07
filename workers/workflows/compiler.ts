import { invalidInput } from '../errors';
import { Credits, hundredthsOf } from '../lib/money';
import { schemaProblem } from './json-schema';
import { checkTriggerDeclarations } from './trigger-declarations';
import { COMPARISON_OPS, PATH_ROOTS, PLACEHOLDER, PREDICATE_OPS, TEMPLATE_PATH, segmentsOf, type Operand, type Predicate } from './predicates';

/**
 * The workflow compiler (docs/workflows.md): definition JSON in, executable
 * graph out, or 400 INVALID_INPUT whose `details.field` is the offending path (`graph.2.toolId`)
 * and whose message starts with it. Pure: the only outside knowledge is the resolvers it is
 * handed (which agents the workspace has, which tools the deployment offers). It runs at
 * install and again at every launch.
 */

/** Definition ids and install slugs: kebab-case (spec 2.6). */
export const WORKFLOW_SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_SLUG_LENGTH = 64;

/** Limits of ours (docs/workflows.md, Limits). */
export const LIMITS = {
  topLevelEntries: 200,
  totalEntries: 500,
  /** Loops default to and are capped at 1000 iterations. */
  maxIterations: 1000,
  foreachConcurrency: 10,
  /** A concurrency key lets at most this many runs go at once, and its template is at most this long. */
  concurrencyLimit: 100,
  concurrencyKeyLength: 500,
  retries: 10,
  /** A retry waits at most a day, and a policy names at most 20 errors that never retry. */
  retryIntervalMs: 24 * 3600_000,
  nonRetryable: 20,
  /** A year, in milliseconds. */
  sleepMs: 365 * 24 * 3600_000,
  mappingFields: 100,
} as const;

/**
 * When a failed tool step is tried again (docs/workflows.md, Retry policy): up to `attempts` in
 * all, the first wait `initialIntervalMs`, each next one `backoffCoefficient` times longer up to
 * `maximumIntervalMs`; a failure whose message contains one of `nonRetryable` (an error code such
 * as `NOT_FOUND`, or any text) fails the step at once.
 */
export interface RetryPolicy {
  attempts: number;
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  nonRetryable: string[];
}

/** The policy of `options.retries: n`, and of a step without options: n retries after 1, 2, 4... s, at most 60 s apart. */
export const retryPolicyOf = (retries: number): RetryPolicy => ({
  attempts: retries + 1,
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maximumIntervalMs: 60_000,
  nonRetryable: [],
});

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type MapSource =
  | { kind: 'value'; value: Json }
  | { kind: 'template'; template: string }
  | { kind: 'requestContext'; path: string }
  | { kind: 'initData'; path: string }
  | { kind: 'step'; step: string; path: string };

/** A single-step entry: what a container may hold, plus mapping at the top level. */
export type LeafStep =
  | { type: 'agent'; id: string; agentSlug: string; outputSchema?: Json; budget?: number }
  | { type: 'tool'; id: string; toolId: string; retry: RetryPolicy; metadata: Record<string, Json> }
  | { type: 'sleep'; id: string; duration: number }
  | { type: 'sleepUntil'; id: string; date: string };

export type MappingStep = { type: 'mapping'; id: string; fields: Record<string, MapSource> };

export type GraphNode =
  | LeafStep
  | MappingStep
  | { type: 'parallel'; id: string; steps: LeafStep[] }
  | { type: 'conditional'; id: string; branches: { step: LeafStep; predicate: Predicate }[] }
  | { type: 'loop'; id: string; step: LeafStep; loopType: 'dowhile' | 'dountil'; predicate: Predicate; maxIterations: number }
  | { type: 'foreach'; id: string; step: LeafStep; concurrency: number };

export interface CompiledWorkflow {
  id: string;
  description: string;
  inputSchema: Json;
  outputSchema: Json;
  stateSchema: Json | null;
  metadata: Record<string, Json>;
  nodes: GraphNode[];
  /** At most `limit` unfinished runs per key, the key filled from the launch inputs (docs/workflows.md, Concurrency keys). */
  concurrency?: Concurrency;
}

export interface Concurrency {
  key: string;
  limit: number;
}

export interface Resolvers {
  workspaceId: string;
  /** Whether the workspace has an agent with this slug. */
  hasAgent(slug: string): boolean;
  /** The tool ids the deployment can resolve. */
  tools: ReadonlySet<string>;
}

const LEAF_TYPES = ['agent', 'tool', 'sleep', 'sleepUntil'] as const;
const CONTAINER_TYPES = ['parallel', 'conditional', 'loop', 'foreach'] as const;
const ENTRY_TYPES = [...LEAF_TYPES, 'mapping', ...CONTAINER_TYPES] as const;

const TOP_KEYS = ['id', 'graph', 'inputSchema', 'outputSchema', 'description', 'metadata', 'stateSchema', 'concurrency'];

/** Which keys each entry type may carry (a tool has no `args`: rule 2). */
const ENTRY_KEYS: Record<(typeof ENTRY_TYPES)[number], string[]> = {
  agent: ['type', 'id', 'agentId', 'description', 'outputSchema', 'budget'],
  tool: ['type', 'id', 'toolId', 'description', 'options'],
  mapping: ['type', 'id', 'mapConfig', 'description'],
  sleep: ['type', 'id', 'duration', 'description'],
  sleepUntil: ['type', 'id', 'date', 'description'],
  parallel: ['type', 'id', 'steps', 'description'],
  conditional: ['type', 'id', 'steps', 'predicates', 'description'],
  loop: ['type', 'id', 'step', 'loopType', 'predicate', 'maxIterations', 'description'],
  foreach: ['type', 'id', 'step', 'opts', 'description'],
};

class Path {
  constructor(private readonly parts: (string | number)[] = []) {}
  at(part: string | number) {
    return new Path([...this.parts, part]);
  }
  get field() {
    return this.parts.length ? this.parts.join('.') : 'definition';
  }
  fail(rule: string, problem: string): never {
    throw invalidInput(this.field, rule, `${this.field}: ${problem}`);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

function requireRecord(v: unknown, at: Path): Record<string, unknown> {
  if (!isRecord(v)) at.fail('type', `must be an object, got ${describe(v)}`);
  return v;
}

function requireString(v: unknown, at: Path): string {
  if (typeof v !== 'string') at.fail('type', `must be a string, got ${describe(v)}`);
  return v;
}

function requireArray(v: unknown, at: Path, what: string): unknown[] {
  if (!Array.isArray(v) || v.length === 0) at.fail('type', `must be a non-empty array of ${what}`);
  return v;
}

/** An agent step's budget: Ds, positive, at most two decimals; answered in hundredths. */
function runBudget(v: unknown, at: Path): number {
  if (!Credits.safeParse(v).success) at.fail('range', 'must be a positive number of Ds with at most two decimals');
  return hundredthsOf(v as number);
}

/** `options.retries`: a count of retries (the default policy's intervals), or a whole policy. */
function retryPolicy(v: unknown, at: Path): RetryPolicy {
  if (v === undefined || typeof v === 'number') return retryPolicyOf(requireInt(v, at, 0, 0, LIMITS.retries));
  const policy = requireRecord(v, at);
  onlyKeys(policy, ['attempts', 'initialIntervalMs', 'backoffCoefficient', 'maximumIntervalMs', 'nonRetryable'], at);
  const defaults = retryPolicyOf(0);
  const attempts = requireInt(policy.attempts, at.at('attempts'), 1, 1, LIMITS.retries + 1);
  const initialIntervalMs = requireInt(policy.initialIntervalMs, at.at('initialIntervalMs'), defaults.initialIntervalMs, 0, LIMITS.retryIntervalMs);
  const maximumIntervalMs = requireInt(
    policy.maximumIntervalMs,
    at.at('maximumIntervalMs'),
    Math.max(defaults.maximumIntervalMs, initialIntervalMs),
    0,
    LIMITS.retryIntervalMs,
  );
  if (maximumIntervalMs < initialIntervalMs) at.at('maximumIntervalMs').fail('range', `must be at least initialIntervalMs (${initialIntervalMs})`);
  const backoffCoefficient = policy.backoffCoefficient ?? defaults.backoffCoefficient;
  if (typeof backoffCoefficient !== 'number' || !Number.isFinite(backoffCoefficient) || backoffCoefficient < 1 || backoffCoefficient > 10)
    at.at('backoffCoefficient').fail('range', 'must be a number 1..10');
  const nonRetryable = policy.nonRetryable === undefined ? [] : requireArray(policy.nonRetryable, at.at('nonRetryable'), 'error codes or texts');
  if (nonRetryable.length > LIMITS.nonRetryable) at.at('nonRetryable').fail('range', `at most ${LIMITS.nonRetryable} entries`);
  nonRetryable.forEach((entry, i) => {
    if (typeof entry !== 'string' || entry.length === 0 || entry.length > 200)
      at.at('nonRetryable').at(String(i)).fail('type', 'must be a non-empty string of at most 200 characters');
  });
  return { attempts, initialIntervalMs, backoffCoefficient: backoffCoefficient as number, maximumIntervalMs, nonRetryable: nonRetryable as string[] };
}

function requireInt(v: unknown, at: Path, fallback: number, min: number, max: number): number {
  const n = v ?? fallback;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) at.fail('range', `must be an integer ${min}..${max}`);
  return n;
}

function onlyKeys(entry: Record<string, unknown>, allowed: string[], at: Path) {
  for (const key of Object.keys(entry)) {
    if (allowed.includes(key)) continue;
    if (key === 'args') at.at(key).fail('no_args', 'a tool entry has no args; put a mapping entry before it to shape its input');
    at.at(key).fail('unknown_key', `unknown key "${key}" (allowed: ${allowed.join(', ')})`);
  }
}

/** Rule 9: `${workspaceId}` replaced in every string of the graph, before anything else looks at it. */
function interpolate(value: unknown, workspaceId: string): unknown {
  if (typeof value === 'string') return value.split('${workspaceId}').join(workspaceId);
  if (Array.isArray(value)) return value.map((v) => interpolate(v, workspaceId));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, workspaceId)]));
  return value;
}

function jsonSchema(v: unknown, at: Path): Json {
  if (!isRecord(v) && typeof v !== 'boolean') at.fail('type', `must be a JSON Schema (an object), got ${describe(v)}`);
  const problem = schemaProblem(v);
  if (problem)
    (problem.pointer ? at.at(problem.pointer.slice(1).replaceAll('/', '.')) : at).fail('json_schema', `is not a valid JSON Schema: ${problem.message}`);
  return v as Json;
}

/** `concurrency`: a template of launch inputs only (`${initData.<field>}`, nothing runs before launch) and a limit. */
function concurrencyOf(v: unknown, at: Path): Concurrency {
  const raw = requireRecord(v, at);
  onlyKeys(raw, ['key', 'limit'], at);
  if (raw.key === undefined) at.at('key').fail('required', 'is required');
  const key = requireString(raw.key, at.at('key'));
  if (key.length === 0 || key.length > LIMITS.concurrencyKeyLength) at.at('key').fail('length', `must be 1..${LIMITS.concurrencyKeyLength} characters`);
  for (const [, inner] of key.matchAll(PLACEHOLDER)) {
    if (!TEMPLATE_PATH.test(inner!) || !inner!.startsWith('initData'))
      at.at('key').fail('template', `"\${${inner}}" is not \${initData} or \${initData.<field>}: a key is filled from the launch inputs`);
  }
  if (raw.limit === undefined) at.at('limit').fail('required', 'is required');
  const limit = requireInt(raw.limit, at.at('limit'), 1, 1, LIMITS.concurrencyLimit);
  return { key, limit };
}

/** Everything that reads step results must name a step that ran before. */
class Compilation {
  readonly ids = new Set<string>();
  /** Ids whose results exist when the entry being compiled runs. */
  readonly earlier = new Set<string>();
  count = 0;

  constructor(readonly resolvers: Resolvers) {}

  claimId(v: unknown, at: Path): string {
    const id = requireString(v, at);
    if (!STEP_ID.test(id)) at.fail('format', 'must be 1..64 letters, digits, "_" or "-"');
    if (this.ids.has(id)) at.fail('unique', `duplicate step id "${id}"`);
    this.ids.add(id);
    if (++this.count > LIMITS.totalEntries) at.fail('max_entries', `a workflow holds at most ${LIMITS.totalEntries} entries`);
    return id;
  }

  stepRef(id: string, at: Path, visible: ReadonlySet<string> = this.earlier) {
    if (!visible.has(id)) at.fail('step_reference', `step "${id}" is not an earlier step`);
  }

  path(v: unknown, at: Path, visible?: ReadonlySet<string>): string {
    const path = requireString(v, at);
    const segments = segmentsOf(path);
    if (!(PATH_ROOTS as readonly string[]).includes(segments[0] ?? '')) at.fail('path_root', `"${path}" must start with ${PATH_ROOTS.join(', ')}`);
    if (segments.some((s) => s === '')) at.fail('path', `"${path}" has an empty segment`);
    if (segments[0] === 'stepResults') {
      if (segments.length < 2) at.fail('path', `"${path}" must name a step: stepResults.<stepId>`);
      this.stepRef(segments[1]!, at, visible);
    }
    return path;
  }

  operand(v: unknown, at: Path, visible?: ReadonlySet<string>): Operand {
    const o = requireRecord(v, at);
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === 'path') return { path: this.path(o.path, at.at('path'), visible) };
    if (keys.length === 1 && keys[0] === 'literal') return { literal: o.literal };
    return at.fail('operand', 'must be exactly one of {path} or {literal}');
  }

  predicate(v: unknown, at: Path, visible?: ReadonlySet<string>): Predicate {
    const p = requireRecord(v, at);
    const op = p.op;
    if (!(PREDICATE_OPS as readonly unknown[]).includes(op)) {
      at.at('op').fail('operator', `unknown operator ${JSON.stringify(op)} (allowed: ${PREDICATE_OPS.join(', ')})`);
    }
    const shape = (keys: string[]) => onlyKeys(p, ['op', ...keys], at);
    if ((COMPARISON_OPS as readonly unknown[]).includes(op)) {
      shape(['left', 'right']);
      return {
        op: op as (typeof COMPARISON_OPS)[number],
        left: this.operand(p.left, at.at('left'), visible),
        right: this.operand(p.right, at.at('right'), visible),
      };
    }
    switch (op) {
      case 'in':
      case 'notIn':
        shape(['value', 'set']);
        return { op, value: this.operand(p.value, at.at('value'), visible), set: this.operand(p.set, at.at('set'), visible) };
      case 'exists':
      case 'notExists':
        shape(['path']);
        return { op, path: this.path(p.path, at.at('path'), visible) };
      case 'truthy':
      case 'falsy':
        shape(['value']);
        return { op, value: this.operand(p.value, at.at('value'), visible) };
      case 'and':
      case 'or': {
        shape(['args']);
        const args = requireArray(p.args, at.at('args'), 'predicates');
        return { op, args: args.map((a, i) => this.predicate(a, at.at('args').at(i), visible)) };
      }
      default:
        shape(['arg']);
        return { op: 'not', arg: this.predicate(p.arg, at.at('arg'), visible) };
    }
  }

  leaf(entry: Record<string, unknown>, type: (typeof LEAF_TYPES)[number], id: string, at: Path): LeafStep {
    switch (type) {
      case 'agent': {
        const agentId = requireString(entry.agentId, at.at('agentId'));
        const prefix = `${this.resolvers.workspaceId}:`;
        const slug = agentId.startsWith(prefix) ? agentId.slice(prefix.length) : null;
        if (slug === null || !this.resolvers.hasAgent(slug)) {
          return at.at('agentId').fail('unknown_agent', `no agent "${agentId}" in this workspace (agent ids are <workspace_id>:<agent_slug>)`);
        }
        const outputSchema = entry.outputSchema === undefined ? undefined : jsonSchema(entry.outputSchema, at.at('outputSchema'));
        const budget = entry.budget === undefined ? undefined : runBudget(entry.budget, at.at('budget'));
        return { type, id, agentSlug: slug, ...(outputSchema === undefined ? {} : { outputSchema }), ...(budget === undefined ? {} : { budget }) };
      }
      case 'tool': {
        const toolId = requireString(entry.toolId, at.at('toolId'));
        if (!this.resolvers.tools.has(toolId)) {
          at.at('toolId').fail('unknown_tool', `unknown tool "${toolId}" (this deployment offers: ${[...this.resolvers.tools].join(', ')})`);
        }
        const options = entry.options === undefined ? {} : requireRecord(entry.options, at.at('options'));
        onlyKeys(options, ['retries', 'metadata'], at.at('options'));
        const retry = retryPolicy(options.retries, at.at('options').at('retries'));
        const metadata = options.metadata === undefined ? {} : requireRecord(options.metadata, at.at('options').at('metadata'));
        // A human-input step may declare the resume data it takes; resumes are checked against it.
        if (metadata.resumeSchema !== undefined) jsonSchema(metadata.resumeSchema, at.at('options').at('metadata').at('resumeSchema'));
        return { type, id, toolId, retry, metadata: metadata as Record<string, Json> };
      }
      case 'sleep': {
        const duration = entry.duration;
        if (typeof duration !== 'number' || !Number.isFinite(duration) || duration < 0 || duration > LIMITS.sleepMs) {
          return at.at('duration').fail('range', `must be a number of milliseconds, 0..${LIMITS.sleepMs}`);
        }
        return { type, id, duration: Math.round(duration) };
      }
      case 'sleepUntil': {
        const date = requireString(entry.date, at.at('date'));
        if (!/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(date) || Number.isNaN(Date.parse(date))) {
          at.at('date').fail('format', `"${date}" is not an ISO 8601 date`);
        }
        return { type, id, date: new Date(date).toISOString() };
      }
    }
  }

  mapping(entry: Record<string, unknown>, id: string, at: Path): MappingStep {
    const raw = requireString(entry.mapConfig, at.at('mapConfig'));
    let config: unknown;
    try {
      config = JSON.parse(raw);
    } catch {
      at.at('mapConfig').fail('json', 'is not valid JSON text');
    }
    const record = requireRecord(config, at.at('mapConfig'));
    const entries = Object.entries(record);
    if (entries.length > LIMITS.mappingFields) at.at('mapConfig').fail('max_fields', `holds at most ${LIMITS.mappingFields} fields`);
    const fields: Record<string, MapSource> = {};
    for (const [name, value] of entries) fields[name] = this.source(value, at.at('mapConfig').at(name));
    return { type: 'mapping', id, fields };
  }

  /** Rule 3: exactly one of {value}, {template}, {requestContextPath}, {initData, path}, {step, path}. */
  source(v: unknown, at: Path): MapSource {
    const s = requireRecord(v, at);
    const keys = Object.keys(s).sort().join(',');
    switch (keys) {
      case 'value':
        return { kind: 'value', value: s.value as Json };
      case 'template': {
        const template = requireString(s.template, at.at('template'));
        for (const [, inner] of template.matchAll(PLACEHOLDER)) {
          if (!TEMPLATE_PATH.test(inner!)) at.at('template').fail('template', `"\${${inner}}" is not \${initData.<field>} or \${stepResults.<stepId>.<field>}`);
          if (inner!.startsWith('stepResults.')) this.stepRef(inner!.split('.')[1]!, at.at('template'));
        }
        return { kind: 'template', template };
      }
      case 'requestContextPath':
        return { kind: 'requestContext', path: requireString(s.requestContextPath, at.at('requestContextPath')) };
      case 'initData,path':
        return { kind: 'initData', path: requireString(s.path, at.at('path')) };
      case 'path,step': {
        const step = requireString(s.step, at.at('step'));
        this.stepRef(step, at.at('step'));
        return { kind: 'step', step, path: requireString(s.path, at.at('path')) };
      }
      default:
        return at.fail('map_source', 'must be exactly one of {value}, {template}, {requestContextPath}, {initData, path} or {step, path}');
    }
  }

  /** An entry inside a container: single-step types only (rules 5 and 6). */
  child(v: unknown, at: Path, container: string): LeafStep {
    const entry = requireRecord(v, at);
    const type = entry.type;
    if (type === 'mapping') at.at('type').fail('mapping_nested', `a mapping entry is allowed only at the top level of graph, not inside ${container}`);
    if ((CONTAINER_TYPES as readonly unknown[]).includes(type)) at.at('type').fail('container_nested', `a ${String(type)} cannot be nested in ${container}`);
    if (!(LEAF_TYPES as readonly unknown[]).includes(type))
      at.at('type').fail('entry_type', `unknown entry type ${JSON.stringify(type)} (allowed: ${ENTRY_TYPES.join(', ')})`);
    const leafType = type as (typeof LEAF_TYPES)[number];
    onlyKeys(entry, ENTRY_KEYS[leafType], at);
    return this.leaf(entry, leafType, this.claimId(entry.id, at.at('id')), at);
  }

  node(v: unknown, at: Path): GraphNode {
    const entry = requireRecord(v, at);
    const type = entry.type;
    if (!(ENTRY_TYPES as readonly unknown[]).includes(type))
      at.at('type').fail('entry_type', `unknown entry type ${JSON.stringify(type)} (allowed: ${ENTRY_TYPES.join(', ')})`);
    const t = type as (typeof ENTRY_TYPES)[number];
    onlyKeys(entry, ENTRY_KEYS[t], at);
    const id = this.claimId(entry.id, at.at('id'));
    let node: GraphNode;
    switch (t) {
      case 'mapping':
        node = this.mapping(entry, id, at);
        break;
      case 'parallel': {
        const steps = requireArray(entry.steps, at.at('steps'), 'entries');
        node = { type: t, id, steps: steps.map((s, i) => this.child(s, at.at('steps').at(i), 'parallel')) };
        break;
      }
      case 'conditional': {
        const rawSteps = requireArray(entry.steps, at.at('steps'), 'entries');
        const rawPredicates = requireArray(entry.predicates, at.at('predicates'), 'predicates');
        if (rawPredicates.length !== rawSteps.length)
          at.at('predicates').fail('aligned', `must hold one predicate per step (${rawSteps.length}), got ${rawPredicates.length}`);
        const predicates = rawPredicates.map((p, i) => this.predicate(p, at.at('predicates').at(i)));
        const steps = rawSteps.map((s, i) => this.child(s, at.at('steps').at(i), 'conditional'));
        node = { type: t, id, branches: steps.map((step, i) => ({ step, predicate: predicates[i]! })) };
        break;
      }
      case 'loop': {
        const step = this.child(entry.step, at.at('step'), 'loop');
        const loopType = entry.loopType;
        if (loopType !== 'dowhile' && loopType !== 'dountil') return at.at('loopType').fail('enum', 'must be "dowhile" or "dountil"');
        const max = requireInt(entry.maxIterations, at.at('maxIterations'), LIMITS.maxIterations, 1, LIMITS.maxIterations);
        // The body's own output is visible to the predicate, which runs after each iteration.
        const predicate = this.predicate(entry.predicate, at.at('predicate'), new Set([...this.earlier, step.id]));
        node = { type: t, id, step, loopType, predicate, maxIterations: max };
        break;
      }
      case 'foreach': {
        const step = this.child(entry.step, at.at('step'), 'foreach');
        const opts = entry.opts === undefined ? {} : requireRecord(entry.opts, at.at('opts'));
        onlyKeys(opts, ['concurrency'], at.at('opts'));
        const concurrency = requireInt(opts.concurrency, at.at('opts').at('concurrency'), 1, 1, LIMITS.foreachConcurrency);
        node = { type: t, id, step, concurrency };
        break;
      }
      default:
        node = this.leaf(entry, t, id, at);
    }
    for (const seen of idsOf(node)) this.earlier.add(seen);
    return node;
  }
}

/** The step ids a node records results under. */
export function idsOf(node: GraphNode): string[] {
  switch (node.type) {
    case 'parallel':
      return [node.id, ...node.steps.map((s) => s.id)];
    case 'conditional':
      return [node.id, ...node.branches.map((b) => b.step.id)];
    case 'loop':
    case 'foreach':
      return [node.id, node.step.id];
    default:
      return [node.id];
  }
}

/** Parses, interpolates, checks and builds. Throws 400 INVALID_INPUT naming the path. */
export function compileWorkflow(definition: unknown, resolvers: Resolvers): CompiledWorkflow {
  const root = new Path();
  const raw = requireRecord(definition, root);
  onlyKeys(raw, TOP_KEYS, root);
  for (const key of ['id', 'graph', 'inputSchema', 'outputSchema']) {
    if (raw[key] === undefined) root.at(key).fail('required', 'is required');
  }
  const id = requireString(raw.id, root.at('id'));
  if (!WORKFLOW_SLUG.test(id) || id.length > MAX_SLUG_LENGTH)
    root.at('id').fail('format', `"${id}" must be a kebab-case slug of at most ${MAX_SLUG_LENGTH} characters`);
  if (!Array.isArray(raw.graph)) return root.at('graph').fail('type', `must be an array, got ${describe(raw.graph)}`);
  if (raw.graph.length === 0) root.at('graph').fail('min_entries', 'must hold at least one entry');
  if (raw.graph.length > LIMITS.topLevelEntries) root.at('graph').fail('max_entries', `holds at most ${LIMITS.topLevelEntries} entries`);
  const description = raw.description === undefined ? '' : requireString(raw.description, root.at('description'));
  const metadata = raw.metadata === undefined ? {} : requireRecord(raw.metadata, root.at('metadata'));
  checkTriggerDeclarations(metadata.triggers);
  const inputSchema = jsonSchema(raw.inputSchema, root.at('inputSchema'));
  const outputSchema = jsonSchema(raw.outputSchema, root.at('outputSchema'));
  const stateSchema = raw.stateSchema === undefined ? null : jsonSchema(raw.stateSchema, root.at('stateSchema'));
  const concurrency = raw.concurrency === undefined ? undefined : concurrencyOf(raw.concurrency, root.at('concurrency'));

  const graph = interpolate(raw.graph, resolvers.workspaceId) as unknown[];
  const compilation = new Compilation(resolvers);
  const nodes = graph.map((entry, i) => compilation.node(entry, root.at('graph').at(i)));
  return {
    id,
    description,
    inputSchema,
    outputSchema,
    stateSchema,
    metadata: metadata as Record<string, Json>,
    nodes,
    ...(concurrency ? { concurrency } : {}),
  };
}
