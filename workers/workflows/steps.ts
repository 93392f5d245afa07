import type { Json, LeafStep } from './compiler';
import { valueProblem } from './json-schema';

/** A step that could not run: `retryable` ones wait and try again without spending a retry. */
export class StepError extends Error {
  constructor(
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

/** Where a started execution is: still working, or its outcome. */
export type ExecutionCheck = { state: 'working' } | { state: 'completed'; text: string; executionId: string } | { state: 'stopped'; reason: string };

/** The output of a finished execution step; an agent with an outputSchema must answer conforming JSON. */
export function executionOutput(step: LeafStep, done: { text: string; executionId: string }): Json {
  if (step.type === 'agent' && step.outputSchema !== undefined) {
    const raw = done.text.trim().replace(/^```(?:json)?\s*|\s*```$/g, '');
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw new StepError(`agent step ${step.id}: the answer is not JSON, so it cannot satisfy its outputSchema`);
    }
    const problem = valueProblem(step.outputSchema, value);
    if (problem) throw new StepError(`agent step ${step.id}: the answer does not satisfy its outputSchema at ${problem.pointer || '/'}: ${problem.message}`);
    return value as Json;
  }
  return { executionId: done.executionId, status: 'completed', text: done.text };
}
