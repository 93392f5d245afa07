import { Validator, type Schema } from '@cfworker/json-schema';

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

const metaValidator = new Validator(DRAFT_07, '7', true);

export interface SchemaProblem {
  /** JSON pointer into the checked value ("" for the root). */
  pointer: string;
  message: string;
  /** For a missing required property: its name (the pointer is then the object that lacks it). */
  missing?: string;
}

/** Draft named by `$schema`, draft-07 otherwise. */
const draftOf = (schema: Schema | boolean) => {
  const declared = typeof schema === 'object' ? schema.$schema : undefined;
  if (declared?.includes('2020-12')) return '2020-12' as const;
  if (declared?.includes('2019-09')) return '2019-09' as const;
  if (declared?.includes('draft-04')) return '4' as const;
  return '7' as const;
};

/** The deepest error is the useful one: the library reports the failing keyword chain outermost first. */
const firstProblem = (errors: { instanceLocation: string; keyword: string; error: string }[]): SchemaProblem => {
  const last = errors[errors.length - 1]!;
  const missing = last.keyword === 'required' ? /"(.*)"/.exec(last.error)?.[1] : undefined;
  return { pointer: last.instanceLocation.replace(/^#/, ''), message: last.error, ...(missing === undefined ? {} : { missing }) };
};

/** Whether `schema` is a JSON Schema (checked against the draft-07 meta-schema); null when it is. */
export function schemaProblem(schema: unknown): SchemaProblem | null {
  const result = metaValidator.validate(schema);
  if (!result.valid) return firstProblem(result.errors);
  try {
    // Compiles references and patterns, which the meta-schema cannot check.
    new Validator(schema as Schema, draftOf(schema as Schema)).validate(null);
  } catch (error) {
    return { pointer: '', message: error instanceof Error ? error.message : String(error) };
  }
  return null;
}

/** Validates `value` against `schema`; null when it conforms. */
export function valueProblem(schema: unknown, value: unknown): SchemaProblem | null {
  const result = new Validator(schema as Schema, draftOf(schema as Schema), true).validate(value);
  return result.valid ? null : firstProblem(result.errors);
}
