import { Validator, type Schema } from '@cfworker/json-schema';
import { describe, expect, it } from 'vitest';
import guide from '../../docs/workflows.md?raw';
import publishWithApproval from '../../examples/workflows/publish-with-approval.json?raw';
import triage from '../../examples/workflows/triage.json?raw';
import reviewPerRepo from '../../examples/workflows/review-per-repo.json?raw';
import reviewPullRequest from '../../examples/workflows/review-pull-request.json?raw';
// The capabilities declare the tool ids the served schema lists.
import '../../workers/capabilities';
import { compileWorkflow, type Resolvers } from '../../workers/workflows/compiler';
import { workflowDefinitionDocument } from '../../workers/workflows/definition-schema';
import { evaluate, PREDICATE_OPS, type Predicate } from '../../workers/workflows/predicates';

/**
 * docs/workflows.md and examples/workflows/ against the code: every documented entry fits the
 * served JSON Schema, every documented predicate compiles and holds as the page says, and every
 * example both fits the schema and compiles.
 */
const resolvers: Resolvers = {
  workspaceId: 'ws-1',
  hasAgent: (slug) => slug === 'classifier',
  tools: new Set(['execute-skill', 'human-input', 'read-memory']),
};
const schema = new Validator(workflowDefinitionDocument('https://service.test/schemas/workflow-definition.json') as Schema, '2020-12', false);
const definition = (graph: unknown[]) => ({ id: 'doc-example', inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, graph });
const schemaErrors = (value: unknown) => schema.validate(value).errors.map((e) => `${e.instanceLocation}: ${e.error}`);

/** A predicate's operators, its parts' included. */
const opsOf = (p: Predicate): string[] => [p.op, ...('args' in p ? p.args.flatMap(opsOf) : 'arg' in p ? opsOf(p.arg) : [])];

/** The one-line JSON values of the json blocks in a section of the guide. */
function examplesIn(from: string, to: string): unknown[] {
  const section = guide.split(from)[1]!.split(to)[0]!;
  return [...section.matchAll(/```json\n([\s\S]*?)```/g)].flatMap((m) =>
    m[1]!
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line)),
  );
}

describe('docs/workflows.md', () => {
  it('shows every entry type, each example fitting the JSON Schema', () => {
    const entries = examplesIn('## Entries, one example each', '## Predicates') as { type: string }[];
    expect(new Set(entries.map((e) => e.type))).toEqual(
      new Set(['mapping', 'tool', 'agent', 'sleep', 'sleepUntil', 'parallel', 'conditional', 'loop', 'foreach']),
    );
    for (const entry of entries) expect(schemaErrors(definition([entry])), JSON.stringify(entry)).toEqual([]);
  });

  it('shows every predicate operator, each compiling and holding for the launch data it names', () => {
    const predicates = examplesIn('One example each', 'All fourteen hold') as Predicate[];
    const ops = new Set(predicates.flatMap(opsOf));
    expect(ops).toEqual(new Set(PREDICATE_OPS));
    expect(predicates).toHaveLength(PREDICATE_OPS.length - 1); // `gt` is shown inside `and`
    const launchData = JSON.parse(/launched with `(\{[^`]*\})`/.exec(guide)![1]!);
    const scope = { initData: launchData, inputData: launchData, state: {}, stepResults: {} };
    for (const predicate of predicates) {
      const graph = [{ type: 'conditional', id: 'c', steps: [{ type: 'sleep', id: 's', duration: 0 }], predicates: [predicate] }];
      expect(schemaErrors(definition(graph)), JSON.stringify(predicate)).toEqual([]);
      compileWorkflow(definition(graph), resolvers);
      expect(evaluate(predicate, scope), JSON.stringify(predicate)).toBe(true);
    }
  });
});

describe('examples/workflows', () => {
  it.each([
    ['triage.json', triage],
    ['publish-with-approval.json', publishWithApproval],
    ['review-per-repo.json', reviewPerRepo],
    ['review-pull-request.json', reviewPullRequest],
  ])('%s fits the JSON Schema and compiles', (_, text) => {
    const example = JSON.parse(text);
    expect(schemaErrors(example)).toEqual([]);
    expect(compileWorkflow(example, resolvers).id).toBe(example.id);
  });
});

describe('the JSON Schema of a definition', () => {
  it('refuses what the compiler refuses for its shape: tool args, unknown operators and keys, nested containers', () => {
    const tool = { type: 'tool', id: 't', toolId: 'execute-skill' };
    for (const graph of [
      [{ ...tool, args: {} }],
      [{ type: 'conditional', id: 'c', steps: [tool], predicates: [{ op: 'matches', left: { literal: 1 }, right: { literal: 1 } }] }],
      [{ type: 'sleep', id: 's', duration: 1, extra: true }],
      [{ type: 'parallel', id: 'p', steps: [{ type: 'parallel', id: 'q', steps: [tool] }] }],
      [{ type: 'tool', id: 'bad id!', toolId: 'execute-skill' }],
    ]) {
      expect(schemaErrors(definition(graph)), JSON.stringify(graph)).not.toEqual([]);
      expect(() => compileWorkflow(definition(graph), resolvers), JSON.stringify(graph)).toThrow();
    }
  });

  it('checks a GitHub entry of metadata.triggers as the compiler does, and leaves other entries free', () => {
    const declaring = (triggers: unknown[]) => ({ ...definition([{ type: 'sleep', id: 's', duration: 1 }]), metadata: { triggers } });
    for (const entry of [
      { source: 'github', events: ['issues'] },
      { source: 'github', events: [] },
      { source: 'github', events: ['push'], repository: 'no-slash' },
      { source: 'github', events: ['push'], branch: 'main' },
    ]) {
      expect(schemaErrors(declaring([entry])), JSON.stringify(entry)).not.toEqual([]);
      expect(() => compileWorkflow(declaring([entry]), resolvers), JSON.stringify(entry)).toThrow();
    }
    const free = declaring([
      'manual',
      { source: 'slack', channel: '#ops' },
      { source: 'github', events: ['push', 'pull_request.opened'], repository: 'octo/hello' },
    ]);
    expect(schemaErrors(free)).toEqual([]);
    expect(compileWorkflow(free, resolvers).metadata).toEqual(free.metadata);
  });
});
