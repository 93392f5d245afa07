import { describe, expect, it } from 'vitest';
import { AppError } from '../../workers/errors';
import { compileWorkflow, type Resolvers } from '../../workers/workflows/compiler';
import { evaluate, fillTemplate, type Predicate, type Scope } from '../../workers/workflows/predicates';

const WS = 'ws-123';
const resolvers: Resolvers = {
  workspaceId: WS,
  hasAgent: (slug) => slug === 'writer',
  tools: new Set(['execute-skill', 'human-input']),
};

const def = (graph: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 'my-flow',
  inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
  outputSchema: { type: 'object' },
  graph,
  ...extra,
});

const mapping = (id: string, config: Record<string, unknown>) => ({ type: 'mapping', id, mapConfig: JSON.stringify(config) });
const tool = (id: string, toolId = 'execute-skill', extra: Record<string, unknown> = {}) => ({ type: 'tool', id, toolId, ...extra });
const sleep = (id: string, duration = 10) => ({ type: 'sleep', id, duration });

/** Compiles and returns the 400 INVALID_INPUT it must throw: the field and the message. */
function failure(definition: unknown) {
  try {
    compileWorkflow(definition, resolvers);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    const e = error as AppError;
    expect(e.status).toBe(400);
    expect(e.code).toBe('INVALID_INPUT');
    const field = e.details!.field as string;
    // The message names the path too.
    expect(e.message.startsWith(`${field}: `)).toBe(true);
    return { field, rule: e.details!.rule as string, message: e.message };
  }
  throw new Error('expected the definition not to compile');
}

describe('parsing: required keys and types', () => {
  it('builds the graph of a valid definition', () => {
    const compiled = compileWorkflow(
      def([
        mapping('shape', { slug: { value: 'summarizer' }, input: { initData: true, path: 'topic' } }),
        tool('run'),
        { type: 'agent', id: 'write', agentId: `${WS}:writer` },
      ]),
      resolvers,
    );
    expect(compiled.nodes.map((n) => [n.type, n.id])).toEqual([
      ['mapping', 'shape'],
      ['tool', 'run'],
      ['agent', 'write'],
    ]);
    expect(compiled.nodes[2]).toEqual({ type: 'agent', id: 'write', agentSlug: 'writer' });
  });

  it("takes an agent step's budget in Ds (kept in hundredths) and refuses one that is not a positive amount with two decimals", () => {
    const agent = (budget: unknown) => def([{ type: 'agent', id: 'write', agentId: `${WS}:writer`, budget }]);
    expect(compileWorkflow(agent(2.5), resolvers).nodes[0]).toEqual({ type: 'agent', id: 'write', agentSlug: 'writer', budget: 250 });
    for (const budget of [0, -1, 0.001, '2']) expect(failure(agent(budget))).toMatchObject({ field: 'graph.0.budget', rule: 'range' });
  });

  it.each(['id', 'graph', 'inputSchema', 'outputSchema'])('requires %s', (key) => {
    const d: Record<string, unknown> = def([sleep('a')]);
    delete d[key];
    expect(failure(d)).toMatchObject({ field: key, rule: 'required' });
  });

  it('checks types of the top-level keys', () => {
    expect(failure('not an object')).toMatchObject({ field: 'definition', rule: 'type' });
    expect(failure(def({} as unknown as unknown[]))).toMatchObject({ field: 'graph', rule: 'type' });
    expect(failure(def([]))).toMatchObject({ field: 'graph', rule: 'min_entries' });
    expect(failure({ ...def([sleep('a')]), id: 'Not Kebab' })).toMatchObject({ field: 'id', rule: 'format' });
    expect(failure({ ...def([sleep('a')]), description: 7 })).toMatchObject({ field: 'description', rule: 'type' });
    expect(failure({ ...def([sleep('a')]), metadata: [] })).toMatchObject({ field: 'metadata', rule: 'type' });
    expect(failure({ ...def([sleep('a')]), extra: 1 })).toMatchObject({ field: 'extra', rule: 'unknown_key' });
  });

  it('validates inputSchema, outputSchema and stateSchema as JSON Schema', () => {
    expect(failure({ ...def([sleep('a')]), inputSchema: 'object' })).toMatchObject({ field: 'inputSchema', rule: 'type' });
    const bad = failure({ ...def([sleep('a')]), outputSchema: { type: 'objekt' } });
    expect(bad).toMatchObject({ field: 'outputSchema.type', rule: 'json_schema' });
    expect(failure({ ...def([sleep('a')]), inputSchema: { properties: { a: { minLength: -1 } } } })).toMatchObject({
      field: 'inputSchema.properties.a.minLength',
      rule: 'json_schema',
    });
    expect(failure({ ...def([sleep('a')]), stateSchema: { required: 'x' } })).toMatchObject({ field: 'stateSchema.required' });
    expect(() => compileWorkflow({ ...def([sleep('a')]), stateSchema: { type: 'object' } }, resolvers)).not.toThrow();
  });

  it('rejects unknown entry types and keys', () => {
    expect(failure(def([{ type: 'branch', id: 'x' }]))).toMatchObject({ field: 'graph.0.type', rule: 'entry_type' });
    expect(failure(def([{ ...sleep('a'), color: 'red' }]))).toMatchObject({ field: 'graph.0.color', rule: 'unknown_key' });
    expect(failure(def([sleep('a'), 'sleep']))).toMatchObject({ field: 'graph.1', rule: 'type' });
  });
});

describe('ids', () => {
  it('requires an id on every entry, also inside containers', () => {
    expect(failure(def([{ type: 'sleep', duration: 1 }]))).toMatchObject({ field: 'graph.0.id', rule: 'type' });
    expect(failure(def([{ type: 'parallel', id: 'p', steps: [{ type: 'sleep', duration: 1 }] }]))).toMatchObject({ field: 'graph.0.steps.0.id' });
  });

  it('requires ids to be unique across the whole graph', () => {
    const f = failure(def([sleep('a'), { type: 'parallel', id: 'p', steps: [sleep('b'), sleep('a')] }]));
    expect(f).toMatchObject({ field: 'graph.1.steps.1.id', rule: 'unique' });
    expect(f.message).toContain('"a"');
  });
});

describe('rule 9: ${workspaceId}', () => {
  it('is replaced in every string of the graph before validation', () => {
    const compiled = compileWorkflow(
      def([mapping('m', { who: { value: 'ws=${workspaceId}' } }), { type: 'agent', id: 'w', agentId: '${workspaceId}:writer' }]),
      resolvers,
    );
    expect(compiled.nodes[0]).toMatchObject({ fields: { who: { kind: 'value', value: `ws=${WS}` } } });
    expect(compiled.nodes[1]).toMatchObject({ agentSlug: 'writer' });
  });

  it('is the only substitution: an agent of another workspace does not resolve', () => {
    expect(failure(def([{ type: 'agent', id: 'w', agentId: 'other-ws:writer' }]))).toMatchObject({ field: 'graph.0.agentId', rule: 'unknown_agent' });
    expect(failure(def([{ type: 'agent', id: 'w', agentId: `${WS}:ghost` }]))).toMatchObject({ field: 'graph.0.agentId', rule: 'unknown_agent' });
  });
});

describe('tools (rules 2 and 10)', () => {
  it('resolves tool ids against the registry', () => {
    const f = failure(def([tool('t', 'send-fax')]));
    expect(f).toMatchObject({ field: 'graph.0.toolId', rule: 'unknown_tool' });
    expect(f.message).toContain('execute-skill');
  });

  it('refuses args on a tool entry', () => {
    expect(failure(def([tool('t', 'execute-skill', { args: { slug: 'x' } })]))).toMatchObject({ field: 'graph.0.args', rule: 'no_args' });
  });

  it('accepts only {retries, metadata} as options', () => {
    expect(compileWorkflow(def([tool('t', 'human-input', { options: { retries: 2, metadata: { prompt: 'ok?' } } })]), resolvers).nodes[0]).toEqual({
      type: 'tool',
      id: 't',
      toolId: 'human-input',
      retry: { attempts: 3, initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 60_000, nonRetryable: [] },
      metadata: { prompt: 'ok?' },
    });
    expect(failure(def([tool('t', 'execute-skill', { options: { timeout: 5 } })]))).toMatchObject({ field: 'graph.0.options.timeout', rule: 'unknown_key' });
    expect(failure(def([tool('t', 'execute-skill', { options: { retries: -1 } })]))).toMatchObject({ field: 'graph.0.options.retries', rule: 'range' });
  });

  it('takes a retry policy in place of a count, with defaults for what it leaves out, and names the field of a bad one', () => {
    const retried = (retries: unknown) => def([tool('t', 'execute-skill', { options: { retries } })]);
    const policy = { attempts: 4, initialIntervalMs: 500, backoffCoefficient: 3, maximumIntervalMs: 5000, nonRetryable: ['NOT_FOUND'] };
    expect(compileWorkflow(retried(policy), resolvers).nodes[0]).toMatchObject({ retry: policy });
    expect(compileWorkflow(retried({ attempts: 2 }), resolvers).nodes[0]).toMatchObject({
      retry: { attempts: 2, initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 60_000, nonRetryable: [] },
    });
    for (const [bad, field] of [
      [{ attempts: 0 }, 'graph.0.options.retries.attempts'],
      [{ attempts: 12 }, 'graph.0.options.retries.attempts'],
      [{ backoffCoefficient: 0.5 }, 'graph.0.options.retries.backoffCoefficient'],
      [{ initialIntervalMs: 10_000, maximumIntervalMs: 1000 }, 'graph.0.options.retries.maximumIntervalMs'],
      [{ initialIntervalMs: 2 * 86_400_000 }, 'graph.0.options.retries.initialIntervalMs'],
      [{ nonRetryable: [''] }, 'graph.0.options.retries.nonRetryable.0'],
      [{ nonRetryable: 'NOT_FOUND' }, 'graph.0.options.retries.nonRetryable'],
      [{ jitter: true }, 'graph.0.options.retries.jitter'],
      ['3', 'graph.0.options.retries'],
    ] as const)
      expect(failure(retried(bad))).toMatchObject({ field });
  });
});

describe('mapping (rules 3, 4 and 5)', () => {
  it('needs mapConfig as JSON text holding a flat record', () => {
    expect(failure(def([{ type: 'mapping', id: 'm', mapConfig: { a: { value: 1 } } }]))).toMatchObject({ field: 'graph.0.mapConfig', rule: 'type' });
    expect(failure(def([{ type: 'mapping', id: 'm', mapConfig: '{nope' }]))).toMatchObject({ field: 'graph.0.mapConfig', rule: 'json' });
    expect(failure(def([{ type: 'mapping', id: 'm', mapConfig: '[1]' }]))).toMatchObject({ field: 'graph.0.mapConfig', rule: 'type' });
  });

  it('takes exactly one source per value', () => {
    for (const bad of [{ value: 1, template: 'x' }, { nested: { value: 1 } }, {}, { step: 'a' }, { initData: true }]) {
      expect(failure(def([sleep('a'), mapping('m', { out: bad })]))).toMatchObject({ field: 'graph.1.mapConfig.out', rule: 'map_source' });
    }
    const ok = compileWorkflow(
      def([
        sleep('a'),
        mapping('m', {
          v: { value: { x: 1 } },
          t: { template: 'Hi ${initData.topic}' },
          r: { requestContextPath: 'userId' },
          i: { initData: true, path: 'topic' },
          s: { step: 'a', path: '' },
        }),
      ]),
      resolvers,
    );
    expect(Object.keys((ok.nodes[1] as { fields: object }).fields)).toEqual(['v', 't', 'r', 'i', 's']);
  });

  it('allows only ${initData.x} and ${stepResults.id.x} in templates', () => {
    for (const t of ['${env.SECRET}', '${inputData.x}', '${stepResults}', '${ initData.x }']) {
      const f = failure(def([sleep('a'), mapping('m', { out: { template: t } })]));
      expect(f).toMatchObject({ field: 'graph.1.mapConfig.out.template', rule: 'template' });
    }
    expect(() => compileWorkflow(def([sleep('a'), mapping('m', { out: { template: '${stepResults.a.title} ${initData.topic}' } })]), resolvers)).not.toThrow();
  });

  it('lets step references point only at earlier steps', () => {
    expect(failure(def([mapping('m', { out: { step: 'later', path: 'x' } }), sleep('later')]))).toMatchObject({
      field: 'graph.0.mapConfig.out.step',
      rule: 'step_reference',
    });
    expect(failure(def([mapping('m', { out: { template: '${stepResults.m.x}' } })]))).toMatchObject({
      field: 'graph.0.mapConfig.out.template',
      rule: 'step_reference',
    });
  });

  it('allows mapping only at the top level', () => {
    for (const container of [
      { type: 'parallel', id: 'c', steps: [mapping('m', {})] },
      { type: 'loop', id: 'c', step: mapping('m', {}), loopType: 'dowhile', predicate: { op: 'truthy', value: { literal: false } } },
      { type: 'foreach', id: 'c', step: mapping('m', {}) },
    ]) {
      const f = failure(def([container]));
      expect(f.rule).toBe('mapping_nested');
      expect(f.field).toMatch(/^graph\.0\.(steps\.0|step)\.type$/);
    }
  });
});

describe('containers (rule 6)', () => {
  it('hold only agent, tool, sleep and sleepUntil, never another container', () => {
    const inner = { type: 'parallel', id: 'inner', steps: [sleep('s')] };
    expect(failure(def([{ type: 'parallel', id: 'p', steps: [inner] }]))).toMatchObject({ field: 'graph.0.steps.0.type', rule: 'container_nested' });
    expect(failure(def([{ type: 'foreach', id: 'f', step: { type: 'loop', id: 'l' } }]))).toMatchObject({
      field: 'graph.0.step.type',
      rule: 'container_nested',
    });
    expect(failure(def([{ type: 'conditional', id: 'c', steps: [inner], predicates: [{ op: 'truthy', value: { literal: 1 } }] }]))).toMatchObject({
      field: 'graph.0.steps.0.type',
      rule: 'container_nested',
    });
  });

  it('aligns conditional predicates with steps', () => {
    expect(
      failure(def([{ type: 'conditional', id: 'c', steps: [sleep('a'), sleep('b')], predicates: [{ op: 'truthy', value: { literal: 1 } }] }])),
    ).toMatchObject({
      field: 'graph.0.predicates',
      rule: 'aligned',
    });
  });

  it('caps loop iterations at 1000 and defaults to it', () => {
    const loop = (extra: object) => ({
      type: 'loop',
      id: 'l',
      step: sleep('s'),
      loopType: 'dountil',
      predicate: { op: 'truthy', value: { path: 'inputData.done' } },
      ...extra,
    });
    expect(compileWorkflow(def([loop({})]), resolvers).nodes[0]).toMatchObject({ maxIterations: 1000 });
    expect(failure(def([loop({ maxIterations: 1001 })]))).toMatchObject({ field: 'graph.0.maxIterations', rule: 'range' });
    expect(failure(def([loop({ loopType: 'forever' })]))).toMatchObject({ field: 'graph.0.loopType', rule: 'enum' });
  });

  it('bounds foreach concurrency', () => {
    expect(compileWorkflow(def([{ type: 'foreach', id: 'f', step: sleep('s') }]), resolvers).nodes[0]).toMatchObject({ concurrency: 1 });
    expect(failure(def([{ type: 'foreach', id: 'f', step: sleep('s'), opts: { concurrency: 0 } }]))).toMatchObject({
      field: 'graph.0.opts.concurrency',
      rule: 'range',
    });
  });

  it('checks sleep and sleepUntil', () => {
    expect(failure(def([{ type: 'sleep', id: 's', duration: '5s' }]))).toMatchObject({ field: 'graph.0.duration', rule: 'range' });
    expect(failure(def([{ type: 'sleepUntil', id: 's', date: 'tomorrow' }]))).toMatchObject({ field: 'graph.0.date', rule: 'format' });
    expect(compileWorkflow(def([{ type: 'sleepUntil', id: 's', date: '2030-01-01T00:00:00Z' }]), resolvers).nodes[0]).toMatchObject({
      date: '2030-01-01T00:00:00.000Z',
    });
  });
});

describe('predicates (rule 7)', () => {
  const cond = (predicate: unknown, before: unknown[] = []) => def([...before, { type: 'conditional', id: 'c', steps: [sleep('a')], predicates: [predicate] }]);

  it('accept only the listed operators', () => {
    expect(failure(cond({ op: 'matches', left: { literal: 1 }, right: { literal: 1 } }))).toMatchObject({ field: 'graph.0.predicates.0.op', rule: 'operator' });
    expect(failure(cond({ op: 'and', args: [{ op: 'eval', code: '1' }] }))).toMatchObject({ field: 'graph.0.predicates.0.args.0.op', rule: 'operator' });
  });

  it('accept only the listed roots', () => {
    expect(failure(cond({ op: 'exists', path: 'env.SECRET' }))).toMatchObject({ field: 'graph.0.predicates.0.path', rule: 'path_root' });
    expect(failure(cond({ op: 'eq', left: { path: 'globalThis.x' }, right: { literal: 1 } }))).toMatchObject({
      field: 'graph.0.predicates.0.left.path',
      rule: 'path_root',
    });
  });

  it('take operands that are exactly {path} or {literal}', () => {
    expect(failure(cond({ op: 'truthy', value: { path: 'initData.x', literal: 1 } }))).toMatchObject({ field: 'graph.0.predicates.0.value', rule: 'operand' });
    expect(failure(cond({ op: 'not', arg: { op: 'truthy', value: 1 } }))).toMatchObject({ field: 'graph.0.predicates.0.arg.value', rule: 'type' });
  });

  it('refer only to earlier steps', () => {
    expect(failure(cond({ op: 'exists', path: 'stepResults.a' }))).toMatchObject({ field: 'graph.0.predicates.0.path', rule: 'step_reference' });
    expect(() => compileWorkflow(cond({ op: 'exists', path: 'stepResults.first.x' }, [sleep('first')]), resolvers)).not.toThrow();
  });
});

describe('evaluation', () => {
  const scope: Scope = { initData: { n: 3, tags: ['a'], name: 'x' }, inputData: { ok: true }, state: {}, stepResults: { s: { count: 0 } } };
  const p = (predicate: Predicate) => evaluate(predicate, scope);
  const lit = (literal: unknown) => ({ literal });
  const at = (path: string) => ({ path });

  it('evaluates every operator', () => {
    expect(p({ op: 'eq', left: at('initData.n'), right: lit(3) })).toBe(true);
    expect(p({ op: 'ne', left: at('initData.n'), right: lit(3) })).toBe(false);
    expect(p({ op: 'lt', left: at('initData.n'), right: lit(4) })).toBe(true);
    expect(p({ op: 'lte', left: at('initData.n'), right: lit(3) })).toBe(true);
    expect(p({ op: 'gt', left: at('initData.n'), right: lit(3) })).toBe(false);
    expect(p({ op: 'gte', left: at('initData.n'), right: lit(3) })).toBe(true);
    expect(p({ op: 'in', value: lit('a'), set: at('initData.tags') })).toBe(true);
    expect(p({ op: 'notIn', value: lit('b'), set: at('initData.tags') })).toBe(true);
    expect(p({ op: 'exists', path: 'stepResults.s.count' })).toBe(true);
    expect(p({ op: 'notExists', path: 'stepResults.s.count' })).toBe(false);
    expect(p({ op: 'truthy', value: at('inputData.ok') })).toBe(true);
    expect(p({ op: 'falsy', value: at('stepResults.s.count') })).toBe(true);
    expect(
      p({
        op: 'and',
        args: [
          { op: 'truthy', value: lit(1) },
          { op: 'falsy', value: lit(0) },
        ],
      }),
    ).toBe(true);
    expect(
      p({
        op: 'or',
        args: [
          { op: 'truthy', value: lit(0) },
          { op: 'falsy', value: lit(1) },
        ],
      }),
    ).toBe(false);
    expect(p({ op: 'not', arg: { op: 'truthy', value: lit(0) } })).toBe(true);
  });

  it('treats missing paths as false for comparisons and true for notIn and notExists', () => {
    const missing = at('initData.nope.deeper');
    for (const op of ['eq', 'ne', 'lt', 'lte', 'gt', 'gte'] as const) expect(p({ op, left: missing, right: lit(1) })).toBe(false);
    expect(p({ op: 'in', value: missing, set: lit([1]) })).toBe(false);
    expect(p({ op: 'notIn', value: missing, set: lit([1]) })).toBe(true);
    expect(p({ op: 'exists', path: 'stepResults.unknown' })).toBe(false);
    expect(p({ op: 'notExists', path: 'stepResults.unknown.x' })).toBe(true);
    expect(p({ op: 'truthy', value: missing })).toBe(false);
    expect(p({ op: 'falsy', value: missing })).toBe(true);
  });

  it('walks own properties only', () => {
    expect(p({ op: 'exists', path: 'initData.constructor' })).toBe(false);
    expect(p({ op: 'exists', path: 'initData.__proto__' })).toBe(false);
    expect(p({ op: 'exists', path: 'initData.name.length' })).toBe(false);
  });

  it('fills templates', () => {
    expect(fillTemplate('n=${initData.n} s=${stepResults.s} none=${initData.none}', scope)).toBe('n=3 s={"count":0} none=');
  });
});
