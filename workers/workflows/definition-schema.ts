import { GITHUB_TRIGGER_EVENTS } from '../connectors/github-events';
import { REPO_PATTERN } from '../connectors/github';
import { LIMITS, MAX_SLUG_LENGTH, WORKFLOW_SLUG } from './compiler';
import { stepToolIds } from './step-tool-ids';
import { COMPARISON_OPS, PATH_ROOTS } from './predicates';

/**
 * The workflow definition format as JSON Schema (2020-12), built from the compiler's own limits
 * and vocabularies so the two cannot disagree on them. The compiler stays the judge: a few rules
 * need the whole graph (unique ids, references to earlier steps, one predicate per conditional
 * step, known agents) and are checked only at install.
 *
 * `ref` names another definition: `#/$defs/<name>` in the standalone document served at
 * WORKFLOW_SCHEMA_PATH, `#/components/schemas/<name>` inside the OpenAPI document.
 */
export const WORKFLOW_SCHEMA_PATH = '/schemas/workflow-definition.json';

type Schema = Record<string, unknown>;

const object = (properties: Schema, required: string[], description?: string): Schema => ({
  type: 'object',
  ...(description ? { description } : {}),
  properties,
  required,
  additionalProperties: false,
});

export function workflowSchemas(ref: (name: string) => string): Record<string, Schema> {
  const $ref = (name: string) => ({ $ref: ref(name) });
  const entry = (type: string, description: string, properties: Schema, required: string[]) =>
    object({ type: { const: type }, id: $ref('WorkflowStepId'), description: { type: 'string' }, ...properties }, ['type', 'id', ...required], description);
  const jsonSchema = { type: ['object', 'boolean'], description: 'A JSON Schema (draft-07).' };
  const path = {
    type: 'string',
    pattern: `^(${PATH_ROOTS.join('|')})(\\.[^.]+)*$`,
    description: 'A dot-separated path from one of its roots; `stepResults.<stepId>` must name an earlier step.',
  };
  const operand = { oneOf: [object({ path }, ['path']), object({ literal: { description: 'Any JSON value.' } }, ['literal'])] };
  const leaves = ['WorkflowAgentEntry', 'WorkflowToolEntry', 'WorkflowSleepEntry', 'WorkflowSleepUntilEntry'];

  return {
    WorkflowDefinition: object(
      {
        id: { type: 'string', pattern: WORKFLOW_SLUG.source, maxLength: MAX_SLUG_LENGTH, description: 'Kebab-case; the slug of the installed workflow.' },
        description: { type: 'string' },
        metadata: {
          type: 'object',
          description: '`name`, `category`, `requiresConnector` and `triggers` fill the record and the definitions listing.',
          properties: {
            name: { type: 'string' },
            category: { type: 'string' },
            requiresConnector: { type: ['string', 'null'] },
            triggers: {
              type: 'array',
              description:
                'Catalog metadata, kept as written; an entry with `source: "github"` declares the GitHub events a trigger may start runs on (at most one).',
              items: { if: { type: 'object', properties: { source: { const: 'github' } }, required: ['source'] }, then: $ref('WorkflowGithubTrigger') },
            },
          },
        },
        inputSchema: { ...jsonSchema, description: 'A JSON Schema (draft-07) that launch inputs must satisfy.' },
        outputSchema: { ...jsonSchema, description: 'A JSON Schema (draft-07) describing the run result, for clients.' },
        stateSchema: { ...jsonSchema, description: 'A JSON Schema (draft-07); its property defaults are the read-only `state`.' },
        graph: { type: 'array', minItems: 1, maxItems: LIMITS.topLevelEntries, items: $ref('WorkflowEntry') },
        concurrency: object(
          {
            key: {
              type: 'string',
              minLength: 1,
              maxLength: LIMITS.concurrencyKeyLength,
              description: 'A template of the launch inputs (`${initData.repo}`); runs whose keys are equal share the limit.',
            },
            limit: { type: 'integer', minimum: 1, maximum: LIMITS.concurrencyLimit, description: 'How many runs of one key go at once; later launches queue.' },
          },
          ['key', 'limit'],
          'At most `limit` unfinished runs per key; extra launches wait, queued, in launch order.',
        ),
      },
      ['id', 'graph', 'inputSchema', 'outputSchema'],
      'A workflow definition. Each entry gets the previous entry’s output as its input; the first gets the launch inputs.',
    ),
    WorkflowGithubTrigger: object(
      {
        source: { const: 'github' },
        events: {
          type: 'array',
          minItems: 1,
          maxItems: 30,
          items: { enum: [...GITHUB_TRIGGER_EVENTS] },
          description: '`push`, `pull_request` (every action) or `pull_request.<action>`.',
        },
        repository: { type: 'string', pattern: REPO_PATTERN, description: 'owner/repo: triggers take this repository’s events only.' },
      },
      ['source', 'events'],
      'The GitHub events a workspace may create a trigger of source `github` for (docs/workflows.md, GitHub triggers).',
    ),
    WorkflowStepId: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'Unique in the whole graph.' },
    WorkflowEntry: {
      oneOf: ['WorkflowMappingEntry', ...leaves, 'WorkflowParallelEntry', 'WorkflowConditionalEntry', 'WorkflowLoopEntry', 'WorkflowForeachEntry'].map($ref),
    },
    WorkflowLeafEntry: { oneOf: leaves.map($ref), description: 'The entries a container may hold.' },
    WorkflowMappingEntry: entry(
      'mapping',
      'Builds a flat record from the run’s data. Top level only.',
      {
        mapConfig: {
          type: 'string',
          contentMediaType: 'application/json',
          contentSchema: $ref('WorkflowMapConfig'),
          description: 'JSON text of the record to build.',
        },
      },
      ['mapConfig'],
    ),
    WorkflowMapConfig: { type: 'object', maxProperties: LIMITS.mappingFields, additionalProperties: $ref('WorkflowMapSource') },
    WorkflowMapSource: {
      oneOf: [
        object({ value: { description: 'Any JSON value, as it is.' } }, ['value']),
        object({ template: { type: 'string', description: 'Text with `${initData.<path>}` and `${stepResults.<stepId>.<path>}` filled in.' } }, ['template']),
        object({ requestContextPath: { type: 'string', description: 'A path in `{workspaceId, userId, runId, workflowId}`.' } }, ['requestContextPath']),
        object(
          { initData: { description: 'Any value; only `path` is read.' }, path: { type: 'string' } },
          ['initData', 'path'],
          'A path in the launch inputs.',
        ),
        object({ step: $ref('WorkflowStepId'), path: { type: 'string' } }, ['step', 'path'], 'A path in an earlier step’s output.'),
      ],
    },
    WorkflowAgentEntry: entry(
      'agent',
      'Runs a workspace agent; outputs `{executionId, status, text}`, or with `outputSchema` the JSON the agent answered.',
      {
        agentId: { type: 'string', description: '`<workspace_id>:<agent_slug>`; `${workspaceId}` is replaced.' },
        outputSchema: jsonSchema,
        budget: { type: 'number', exclusiveMinimum: 0, description: 'The most the agent’s run may be charged, in Ds, at most two decimals (docs/limits.md).' },
      },
      ['agentId'],
    ),
    WorkflowToolEntry: entry(
      'tool',
      'Runs a tool of the deployment on its input (no `args`: shape the input with a mapping before it).',
      {
        toolId: { enum: [...stepToolIds()] },
        options: object(
          {
            retries: {
              description: 'Retries after a failure: a count (waits 1, 2, 4... s, at most 60 s), or a retry policy.',
              oneOf: [
                { type: 'integer', minimum: 0, maximum: LIMITS.retries },
                object(
                  {
                    attempts: { type: 'integer', minimum: 1, maximum: LIMITS.retries + 1, description: 'Tries in all, the first included (default 1).' },
                    initialIntervalMs: {
                      type: 'integer',
                      minimum: 0,
                      maximum: LIMITS.retryIntervalMs,
                      description: 'The wait before the first retry (default 1000).',
                    },
                    backoffCoefficient: { type: 'number', minimum: 1, maximum: 10, description: 'Each next wait is this many times the last (default 2).' },
                    maximumIntervalMs: { type: 'integer', minimum: 0, maximum: LIMITS.retryIntervalMs, description: 'The longest wait (default 60000).' },
                    nonRetryable: {
                      type: 'array',
                      maxItems: LIMITS.nonRetryable,
                      items: { type: 'string', minLength: 1, maxLength: 200 },
                      description: 'A failure whose message contains one of these (an error code such as NOT_FOUND, or any text) is not retried.',
                    },
                  },
                  [],
                ),
              ],
            },
            metadata: { type: 'object', description: '`human-input`: `prompt` is shown while the run waits.' },
          },
          [],
        ),
      },
      ['toolId'],
    ),
    WorkflowSleepEntry: entry(
      'sleep',
      'Waits, then outputs its input unchanged.',
      { duration: { type: 'number', minimum: 0, maximum: LIMITS.sleepMs, description: 'Milliseconds.' } },
      ['duration'],
    ),
    WorkflowSleepUntilEntry: entry(
      'sleepUntil',
      'Waits until a date, then outputs its input unchanged.',
      { date: { type: 'string', description: 'ISO 8601.' } },
      ['date'],
    ),
    WorkflowParallelEntry: entry(
      'parallel',
      'Runs its children at once on its input; outputs `{[childId]: output}`.',
      { steps: { type: 'array', minItems: 1, items: $ref('WorkflowLeafEntry') } },
      ['steps'],
    ),
    WorkflowConditionalEntry: entry(
      'conditional',
      'Runs each child whose predicate (same index) holds; outputs `{[childId]: output}` of those, `{}` if none.',
      { steps: { type: 'array', minItems: 1, items: $ref('WorkflowLeafEntry') }, predicates: { type: 'array', minItems: 1, items: $ref('WorkflowPredicate') } },
      ['steps', 'predicates'],
    ),
    WorkflowLoopEntry: entry(
      'loop',
      'Runs its body, then checks the predicate: `dowhile` repeats while it holds, `dountil` until it holds. Outputs the body’s last output.',
      {
        step: $ref('WorkflowLeafEntry'),
        loopType: { enum: ['dowhile', 'dountil'] },
        predicate: $ref('WorkflowPredicate'),
        maxIterations: { type: 'integer', minimum: 1, maximum: LIMITS.maxIterations },
      },
      ['step', 'loopType', 'predicate'],
    ),
    WorkflowForeachEntry: entry(
      'foreach',
      'Runs its child on each item of its input array; outputs the outputs in input order.',
      { step: $ref('WorkflowLeafEntry'), opts: object({ concurrency: { type: 'integer', minimum: 1, maximum: LIMITS.foreachConcurrency } }, []) },
      ['step'],
    ),
    WorkflowPredicate: {
      description: 'A missing path makes every comparison (eq and ne included), `in`, `exists` and `truthy` false, and `notIn`, `notExists` and `falsy` true.',
      oneOf: [
        object({ op: { enum: [...COMPARISON_OPS] }, left: operand, right: operand }, ['op', 'left', 'right']),
        object({ op: { enum: ['in', 'notIn'] }, value: operand, set: operand }, ['op', 'value', 'set']),
        object({ op: { enum: ['exists', 'notExists'] }, path }, ['op', 'path']),
        object({ op: { enum: ['truthy', 'falsy'] }, value: operand }, ['op', 'value']),
        object({ op: { enum: ['and', 'or'] }, args: { type: 'array', minItems: 1, items: $ref('WorkflowPredicate') } }, ['op', 'args']),
        object({ op: { const: 'not' }, arg: $ref('WorkflowPredicate') }, ['op', 'arg']),
      ],
    },
  };
}

/** The standalone document: the definition at the root, the rest under `$defs`. */
export function workflowDefinitionDocument(id: string): Schema {
  const { WorkflowDefinition, ...defs } = workflowSchemas((name) => (name === 'WorkflowDefinition' ? '#' : `#/$defs/${name}`));
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: id, title: 'Workflow definition', ...WorkflowDefinition, $defs: defs };
}
