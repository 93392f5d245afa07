import { dereference, validate, type OutputUnit, type Schema, type SchemaDraft } from '@cfworker/json-schema';
import { valueDeeperThan } from '../lib/json-depth';
import { withLinearRegExp } from '../lib/linear-regexp';

/**
 * The JSON Schema draft-07 meta-schema (json-schema.org/draft-07/schema). Definitions written
 * by Mastra's tooling (zod-to-json-schema) declare draft-07; later drafts' extra keywords pass
 * through it as unknown keywords, which the meta-schema allows.
 */
const DRAFT_07: Schema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'http://json-schema.org/draft-07/schema#',
  definitions: {
    schemaArray: { type: 'array', minItems: 1, items: { $ref: '#' } },
    nonNegativeInteger: { type: 'integer', minimum: 0 },
    nonNegativeIntegerDefault0: { allOf: [{ $ref: '#/definitions/nonNegativeInteger' }, { default: 0 }] },
    simpleTypes: { enum: ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'] },
    stringArray: { type: 'array', items: { type: 'string' }, uniqueItems: true, default: [] },
  },
  type: ['object', 'boolean'],
  properties: {
    $id: { type: 'string', format: 'uri-reference' },
    $schema: { type: 'string', format: 'uri' },
    $ref: { type: 'string', format: 'uri-reference' },
    $comment: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    default: true,
    readOnly: { type: 'boolean', default: false },
    writeOnly: { type: 'boolean', default: false },
    examples: { type: 'array', items: true },
    multipleOf: { type: 'number', exclusiveMinimum: 0 },
    maximum: { type: 'number' },
    exclusiveMaximum: { type: 'number' },
    minimum: { type: 'number' },
    exclusiveMinimum: { type: 'number' },
    maxLength: { $ref: '#/definitions/nonNegativeInteger' },
    minLength: { $ref: '#/definitions/nonNegativeIntegerDefault0' },
    pattern: { type: 'string', format: 'regex' },
    additionalItems: { $ref: '#' },
    items: { anyOf: [{ $ref: '#' }, { $ref: '#/definitions/schemaArray' }], default: true },
    maxItems: { $ref: '#/definitions/nonNegativeInteger' },
    minItems: { $ref: '#/definitions/nonNegativeIntegerDefault0' },
    uniqueItems: { type: 'boolean', default: false },
    contains: { $ref: '#' },
    maxProperties: { $ref: '#/definitions/nonNegativeInteger' },
    minProperties: { $ref: '#/definitions/nonNegativeIntegerDefault0' },
    required: { $ref: '#/definitions/stringArray' },
    additionalProperties: { $ref: '#' },
    definitions: { type: 'object', additionalProperties: { $ref: '#' }, default: {} },
    properties: { type: 'object', additionalProperties: { $ref: '#' }, default: {} },
    patternProperties: { type: 'object', additionalProperties: { $ref: '#' }, propertyNames: { format: 'regex' }, default: {} },
    dependencies: { type: 'object', additionalProperties: { anyOf: [{ $ref: '#' }, { $ref: '#/definitions/stringArray' }] } },
    propertyNames: { $ref: '#' },
    const: true,
    enum: { type: 'array', items: true },
    type: {
      anyOf: [{ $ref: '#/definitions/simpleTypes' }, { type: 'array', items: { $ref: '#/definitions/simpleTypes' }, minItems: 1, uniqueItems: true }],
    },
    format: { type: 'string' },
    contentMediaType: { type: 'string' },
    contentEncoding: { type: 'string' },
    if: { $ref: '#' },
    then: { $ref: '#' },
    else: { $ref: '#' },
    allOf: { $ref: '#/definitions/schemaArray' },
    anyOf: { $ref: '#/definitions/schemaArray' },
    oneOf: { $ref: '#/definitions/schemaArray' },
    not: { $ref: '#' },
  },
  default: true,
};

/** Limits of ours on the JSON Schemas people write and the values checked against them (docs/workflows.md, Limits). */
export const SCHEMA_LIMITS = {
  /** Objects and arrays inside one another in a schema. */
  depth: 64,
  /** The same in a value checked against a schema (inputs, resume data, an agent's answer). */
  valueDepth: 128,
  /**
   * Subschemas applied in one check, the schema's own walk included, and pattern tests by their
   * work. `$ref`s that each apply the next definition twice double the work per definition: 22
   * of them took 45 s on one string.
   */
  steps: 100_000,
} as const;

export interface SchemaProblem {
  /** JSON pointer into the checked value ("" for the root). */
  pointer: string;
  message: string;
  /** For a missing required property: its name (the pointer is then the object that lacks it). */
  missing?: string;
}

/** Draft named by `$schema`, draft-07 otherwise. */
const draftOf = (schema: Schema | boolean): SchemaDraft => {
  const declared = typeof schema === 'object' ? schema.$schema : undefined;
  if (declared?.includes('2020-12')) return '2020-12';
  if (declared?.includes('2019-09')) return '2019-09';
  if (declared?.includes('draft-04')) return '4';
  return '7';
};

class OverBudget extends Error {}

/**
 * A pattern test counts one step per this many units of its work (text length × pattern size):
 * RE2 in JavaScript spends up to about 0.2 µs a unit, a subschema up to about 7 µs.
 */
const PATTERN_UNITS_PER_STEP = 32;

/** The work one check may still do, in steps (SCHEMA_LIMITS.steps); past it the check stops. */
class Budget {
  #left: number = SCHEMA_LIMITS.steps;
  spend(steps: number) {
    this.#left -= steps;
    if (this.#left < 0) throw new OverBudget();
  }
}

/**
 * `schema` seen through proxies that count the validator's visits: it reads `$ref` once each
 * time it applies a subschema (and once per subschema as it first walks the schema), so the
 * count is the work done.
 */
function metered(schema: Schema | boolean, budget: Budget): Schema | boolean {
  const proxies = new WeakMap<object, object>();
  const wrap = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    let proxy = proxies.get(value);
    if (!proxy) {
      proxy = new Proxy(value, {
        get(target, key, receiver) {
          if (key === '$ref') budget.spend(1);
          return wrap(Reflect.get(target, key, receiver));
        },
      });
      proxies.set(value, proxy);
    }
    return proxy;
  };
  return wrap(schema) as Schema | boolean;
}

/** The deepest error is the useful one: the library reports the failing keyword chain outermost first. */
const firstProblem = (errors: OutputUnit[]): SchemaProblem => {
  const last = errors[errors.length - 1]!;
  const missing = last.keyword === 'required' ? /"(.*)"/.exec(last.error)?.[1] : undefined;
  const message =
    last.keyword === 'format' && last.error.includes('"regex"')
      ? 'is not a regular expression this service runs (ECMAScript syntax within RE2: no lookaround, no backreferences)'
      : last.error;
  return { pointer: last.instanceLocation.replace(/^#/, ''), message, ...(missing === undefined ? {} : { missing }) };
};

type Lookup = Record<string, Schema | boolean>;

/** A `$ref` naming no schema: the validator would throw when it first reached it. */
function unresolvedRef(lookup: Lookup): SchemaProblem | null {
  for (const schema of Object.values(lookup)) {
    if (typeof schema !== 'object') continue;
    for (const target of [schema.__absolute_ref__, schema.__absolute_recursive_ref__]) {
      if (target !== undefined && !(target in lookup)) return { pointer: '', message: `$ref "${target}" names no schema` };
    }
  }
  return null;
}

/**
 * Validates `value` against `schema` within the limits: patterns run in linear time (RE2), the
 * work is budgeted, and running out of either is a problem to report, not a crash. Answers the
 * validator's errors (none when `value` conforms) or the limit it reached.
 */
function check(schema: Schema | boolean, draft: SchemaDraft, value: unknown): OutputUnit[] | SchemaProblem {
  try {
    const budget = new Budget();
    return withLinearRegExp(
      () => {
        const root = metered(schema, budget);
        const lookup = dereference(root);
        return unresolvedRef(lookup) ?? validate(value, root, draft, lookup, true).errors;
      },
      (units) => budget.spend(Math.ceil(units / PATTERN_UNITS_PER_STEP)),
    );
  } catch (error) {
    if (error instanceof OverBudget) return { pointer: '', message: `takes more than ${SCHEMA_LIMITS.steps} steps to check` };
    // A stack overflow, which recursive `$ref`s can cause within the budget.
    if (error instanceof RangeError) return { pointer: '', message: `cannot be checked: ${error.message}` };
    throw error;
  }
}

const problemOf = (outcome: OutputUnit[] | SchemaProblem): SchemaProblem | null =>
  !Array.isArray(outcome) ? outcome : outcome.length ? firstProblem(outcome) : null;

/** Whether `schema` is a JSON Schema (checked against the draft-07 meta-schema); null when it is. */
export function schemaProblem(schema: unknown): SchemaProblem | null {
  if (valueDeeperThan(schema, SCHEMA_LIMITS.depth)) return { pointer: '', message: `nests more than ${SCHEMA_LIMITS.depth} levels deep` };
  const problem = problemOf(check(DRAFT_07, '7', schema));
  if (problem) return problem;
  try {
    // Checking null walks the schema itself (its ids and references, within the budget); whether null conforms is no matter.
    const outcome = check(schema as Schema, draftOf(schema as Schema), null);
    return Array.isArray(outcome) ? null : outcome;
  } catch (error) {
    return { pointer: '', message: error instanceof Error ? error.message : String(error) };
  }
}

/** Validates `value` against `schema`; null when it conforms. */
export function valueProblem(schema: unknown, value: unknown): SchemaProblem | null {
  if (valueDeeperThan(value, SCHEMA_LIMITS.valueDepth)) return { pointer: '', message: `nests more than ${SCHEMA_LIMITS.valueDepth} levels deep` };
  return problemOf(check(schema as Schema, draftOf(schema as Schema), value));
}
