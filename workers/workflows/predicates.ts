/**
 * Reading values out of a run's data: paths, predicates (docs/workflows.md) and mapping
 * templates. Pure; the compiler checks the shapes, this module evaluates them.
 */

/** A path's first segment; `stepResults` is followed by the step id. */
export const PATH_ROOTS = ['initData', 'inputData', 'state', 'stepResults'] as const;
export type PathRoot = (typeof PATH_ROOTS)[number];

export type Operand = { path: string } | { literal: unknown };

export type Predicate =
  | { op: 'eq' | 'ne' | 'lt' | 'lte' | 'gt' | 'gte'; left: Operand; right: Operand }
  | { op: 'in' | 'notIn'; value: Operand; set: Operand }
  | { op: 'exists' | 'notExists'; path: string }
  | { op: 'truthy' | 'falsy'; value: Operand }
  | { op: 'and' | 'or'; args: Predicate[] }
  | { op: 'not'; arg: Predicate };

export const COMPARISON_OPS = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte'] as const;
export const PREDICATE_OPS = [...COMPARISON_OPS, 'in', 'notIn', 'exists', 'notExists', 'truthy', 'falsy', 'and', 'or', 'not'] as const;

/** What paths are read against while a step runs. `stepResults` maps step ids to outputs. */
export interface Scope {
  initData: unknown;
  inputData: unknown;
  state: unknown;
  stepResults: Record<string, unknown>;
}

const MISSING = Symbol('missing');
type Found = unknown | typeof MISSING;

const hasOwn = (value: unknown, key: string) => value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, key);

/** Walks own properties only: `__proto__` or `constructor` never reach a prototype. */
export function walk(value: unknown, segments: readonly string[]): Found {
  let current = value;
  for (const segment of segments) {
    if (!hasOwn(current, segment)) return MISSING;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/** `a.b.0` → `['a','b','0']`; `''` and `'.'` are the whole value. */
export const segmentsOf = (path: string): string[] => (path === '' || path === '.' ? [] : path.split('.'));

/** Reads a rooted path (`initData.x`, `stepResults.fetch.title`); MISSING when any part is absent. */
export function read(scope: Scope, path: string): Found {
  const [root, ...rest] = segmentsOf(path);
  if (root === 'stepResults') {
    const [stepId, ...fields] = rest;
    if (stepId === undefined || !hasOwn(scope.stepResults, stepId)) return MISSING;
    return walk(scope.stepResults[stepId], fields);
  }
  if (root === 'initData' || root === 'inputData' || root === 'state') return walk(scope[root], rest);
  return MISSING;
}

export const isMissing = (value: Found): value is typeof MISSING => value === MISSING;

const operand = (scope: Scope, o: Operand): Found => ('path' in o ? read(scope, o.path) : o.literal);

function compare(op: (typeof COMPARISON_OPS)[number], a: unknown, b: unknown): boolean {
  if (op === 'eq') return deepEqual(a, b);
  if (op === 'ne') return !deepEqual(a, b);
  // Ordering only between two numbers or two strings; anything else is false.
  const comparable = (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
  if (!comparable) return false;
  const [x, y] = [a as number | string, b as number | string];
  return op === 'lt' ? x < y : op === 'lte' ? x <= y : op === 'gt' ? x > y : x >= y;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Missing paths never throw: they make comparisons false, and `notIn`/`notExists` true. */
export function evaluate(predicate: Predicate, scope: Scope): boolean {
  switch (predicate.op) {
    case 'eq':
    case 'ne':
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte': {
      const a = operand(scope, predicate.left);
      const b = operand(scope, predicate.right);
      if (isMissing(a) || isMissing(b)) return false;
      return compare(predicate.op, a, b);
    }
    case 'in':
    case 'notIn': {
      const v = operand(scope, predicate.value);
      const set = operand(scope, predicate.set);
      const found = !isMissing(v) && Array.isArray(set) && set.some((item) => deepEqual(item, v));
      return predicate.op === 'in' ? found : !found;
    }
    case 'exists':
      return !isMissing(read(scope, predicate.path));
    case 'notExists':
      return isMissing(read(scope, predicate.path));
    case 'truthy':
    case 'falsy': {
      const v = operand(scope, predicate.value);
      const truthy = !isMissing(v) && Boolean(v);
      return predicate.op === 'truthy' ? truthy : !truthy;
    }
    case 'and':
      return predicate.args.every((p) => evaluate(p, scope));
    case 'or':
      return predicate.args.some((p) => evaluate(p, scope));
    case 'not':
      return !evaluate(predicate.arg, scope);
  }
}

/** `${initData.x}` and `${stepResults.id.x}`: the only placeholders a template may hold (rule 4). */
export const PLACEHOLDER = /\$\{([^}]*)\}/g;
export const TEMPLATE_PATH = /^(initData(\.[^.]+)*|stepResults\.[^.]+(\.[^.]+)*)$/;

/** Fills a template; a missing value is the empty string, an object its JSON. */
export const fillTemplate = (template: string, scope: Scope): string =>
  template.replace(PLACEHOLDER, (_, path: string) => {
    const value = read(scope, path);
    if (isMissing(value) || value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
