import { describe, expect, it } from 'vitest';
import type { Span } from '../../workers/lib/otlp';
import { stepTraceparent, workflowSpans, type WorkflowTraceEvent, type WorkflowTraceSource } from '../../workers/services/workflow-spans';

const event = (type: WorkflowTraceEvent['type'], at: number, payload: Record<string, unknown>): WorkflowTraceEvent => ({
  type,
  at,
  payload: JSON.stringify(payload),
});
const attr = (span: Span, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value && ('stringValue' in value ? value.stringValue : 'intValue' in value ? Number(value.intValue) : undefined);
};

/** A run whose tool step succeeded after a retry, then whose foreach failed at item 1 while item 0 was still running. */
const failedRun: WorkflowTraceSource = {
  runId: 'run-1',
  workspaceId: 'ws-1',
  workflowId: 'triage',
  status: 'failed',
  error: 'Step label failed: boom',
  createdAt: 1_000,
  nodes: [
    { id: 'lookup', type: 'tool', toolId: 'github.get-issue', inner: [] },
    { id: 'each', type: 'foreach', inner: [{ id: 'label', type: 'agent' }] },
  ],
  events: [
    event('workflow-step-started', 1_010, { stepId: 'lookup', unit: '0', attempt: 1 }),
    event('workflow-step-started', 1_050, { stepId: 'lookup', unit: '0', attempt: 2 }),
    event('workflow-step-finished', 1_100, { stepId: 'lookup', unit: '0', status: 'success', summary: '' }),
    event('workflow-step-started', 1_200, { stepId: 'label', unit: '1[0]', attempt: 1 }),
    event('workflow-step-execution', 1_210, { stepId: 'label', unit: '1[0]', executionId: 'exec_7' }),
    event('workflow-step-started', 1_220, { stepId: 'label', unit: '1[1]', attempt: 1 }),
    event('workflow-step-finished', 1_300, { stepId: 'label', unit: '1[1]', status: 'failed', error: 'boom' }),
    event('workflow-finished', 1_310, { status: 'failed', error: 'Step label failed: boom' }),
  ],
};

describe('workflowSpans', () => {
  it("builds the run's span under the caller's, a span per step, and the units of a foreach under it, with the step's outcome", async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const [run, ...steps] = await workflowSpans(failedRun, traceparent);
    expect(run).toMatchObject({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      parentSpanId: '00f067aa0ba902b7',
      name: 'invoke_workflow triage',
      startTimeUnixNano: '1000000000',
      endTimeUnixNano: '1310000000',
      status: { code: 2, message: 'Step label failed: boom' },
    });
    expect(attr(run!, 'gen_ai.operation.name')).toBe('invoke_workflow');
    expect(attr(run!, 'gen_ai.workflow.name')).toBe('triage');

    const byKey = Object.fromEntries(
      steps.map((s) => [`${attr(s, 'workspace_skills.workflow.step.id')}${attr(s, 'workspace_skills.workflow.step.item') ?? ''}`, s]),
    );
    expect(Object.keys(byKey)).toEqual(['lookup', 'each', 'label0', 'label1']);
    const { lookup, each, label0, label1 } = byKey as Record<string, Span>;
    expect(lookup).toMatchObject({
      name: 'execute_tool github.get-issue',
      parentSpanId: run!.spanId,
      startTimeUnixNano: '1010000000',
      endTimeUnixNano: '1100000000',
    });
    expect([attr(lookup!, 'gen_ai.tool.name'), attr(lookup!, 'workspace_skills.workflow.step.attempts')]).toEqual(['github.get-issue', 2]);
    // The foreach never finished: it spans from its first item to the run's end, failed by its item.
    expect(each).toMatchObject({ name: 'step each', parentSpanId: run!.spanId, startTimeUnixNano: '1200000000', endTimeUnixNano: '1310000000' });
    expect([attr(each!, 'workspace_skills.workflow.step.status'), each!.status]).toEqual(['failed', { code: 2, message: 'boom' }]);
    expect([label0!.parentSpanId, label1!.parentSpanId]).toEqual([each!.spanId, each!.spanId]);
    // Item 0 was still running when item 1 failed the run: canceled with it, its execution named.
    expect([attr(label0!, 'workspace_skills.workflow.step.status'), attr(label0!, 'workspace_skills.execution.id'), label0!.endTimeUnixNano]).toEqual([
      'canceled',
      'exec_7',
      '1310000000',
    ]);
    expect([attr(label1!, 'workspace_skills.workflow.step.status'), label1!.status.code]).toEqual(['failed', 2]);
  });

  it("gives an execution a step starts that step's span as its parent, in the run's own trace when no caller's", async () => {
    const [run, , , label0] = await workflowSpans(failedRun, null);
    expect(run!.parentSpanId).toBeUndefined();
    expect(await stepTraceparent('run-1', null, '1[0]')).toBe(`00-${run!.traceId}-${label0!.spanId}-01`);
  });
});
