import { describe, expect, it } from 'vitest';
import { STEP_TOOL_IDS, stepKind, stepScope } from '../../workers/runtime/step-tools';
import { TOOL_IDS } from '../../workers/workflows/compiler';

const tool = (toolId: string) => ({ type: 'tool' as const, id: 't', toolId, retries: 0, metadata: {} });

describe('workflow tool steps, as the capabilities declare them', () => {
  it('offers exactly the tool ids the compiler accepts', () => {
    expect([...STEP_TOOL_IDS].sort()).toEqual([...TOOL_IDS].sort());
  });

  it('runs each by the kind its capability declares, and needs that capability’s scope', () => {
    expect(Object.fromEntries(STEP_TOOL_IDS.map((id) => [id, [stepKind(id), stepScope(tool(id))]]))).toEqual({
      'execute-skill': ['execution', 'tool:execute'],
      'human-input': ['input', null],
      'read-memory': ['read', 'memory:read'],
    });
    expect(stepKind('no-such-tool')).toBeUndefined();
  });
});
