import { describe, expect, it } from 'vitest';
import { retryPolicyOf } from '../../workers/workflows/compiler';
import { stepKind, stepScope } from '../../workers/runtime/step-tools';
import { workflowDefinitionDocument } from '../../workers/workflows/definition-schema';
import { stepToolIds } from '../../workers/workflows/step-tool-ids';

const tool = (toolId: string) => ({ type: 'tool' as const, id: 't', toolId, retry: retryPolicyOf(0), metadata: {} });

describe('workflow tool steps, as the capabilities declare them', () => {
  it('publishes the ids the capabilities declare in the served definition schema', () => {
    const schema = JSON.stringify(workflowDefinitionDocument('https://service.test/schemas/workflow-definition.json'));
    expect(schema).toContain(`"toolId":{"enum":${JSON.stringify([...stepToolIds()])}}`);
  });

  it('runs each by the kind its capability declares, and needs that capability’s scope', () => {
    expect(Object.fromEntries([...stepToolIds()].map((id) => [id, [stepKind(id), stepScope(tool(id))]]))).toEqual({
      'execute-skill': ['execution', 'tool:execute'],
      'human-input': ['input', null],
      'read-memory': ['read', 'memory:read'],
    });
    expect(stepKind('no-such-tool')).toBeUndefined();
  });
});
