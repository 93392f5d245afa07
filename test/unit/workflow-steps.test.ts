import { describe, expect, it } from 'vitest';
import { retryPolicyOf } from '../../workers/workflows/compiler';
import { executionOutput, StepError } from '../../workers/workflows/steps';

const done = (text: string) => ({ text, executionId: 'exec_4' });
const typed = { type: 'agent' as const, id: 'write', agentSlug: 'writer', outputSchema: { type: 'object', required: ['title'] } };

describe('executionOutput, a finished execution as a step output', () => {
  it('is the execution, its status and text for a skill or an agent without an outputSchema', () => {
    const step = { type: 'tool' as const, id: 'run', toolId: 'execute-skill', retry: retryPolicyOf(0), metadata: {} };
    expect(executionOutput(step, done('Summary.'))).toEqual({ executionId: 'exec_4', status: 'completed', text: 'Summary.' });
  });

  it('is the parsed answer of an agent with an outputSchema, code fence or not', () => {
    expect(executionOutput(typed, done('```json\n{"title":"Q3"}\n```'))).toEqual({ title: 'Q3' });
    expect(executionOutput(typed, done(' {"title":"Q4"} '))).toEqual({ title: 'Q4' });
  });

  it('fails the step, naming it, when the answer is not JSON or does not satisfy the schema', () => {
    expect(() => executionOutput(typed, done('Here is your title: Q3'))).toThrow(
      new StepError('agent step write: the answer is not JSON, so it cannot satisfy its outputSchema'),
    );
    expect(() => executionOutput(typed, done('{"name":"Q3"}'))).toThrow(/^agent step write: the answer does not satisfy its outputSchema at \//);
  });
});
