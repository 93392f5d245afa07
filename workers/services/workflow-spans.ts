import { attributes, derivedId, formatTraceparent, nanos, parseTraceparent, SPAN_KIND, STATUS_CODE, type Span } from '../lib/otlp';
import type { RunEventType } from '../workflows/interpreter';

/**
 * The spans of one workflow run (docs/telemetry.md), built from its change log: the run, and
 * under it a span per unit of work (a step; a foreach item or loop iteration of one), the units
 * inside a parallel, conditional, loop or foreach under that entry's span. An execution a step
 * starts carries its step's span as `traceparent` (`stepTraceparent`), so the skill run's own
 * spans hang under the step. Ids are derived from the run, so the run object can name a step's
 * span when it starts the step, long before the run is exported.
 */

/** One line of the run's change log, as the run object keeps it (`payload` is JSON text). */
export interface WorkflowTraceEvent {
  type: RunEventType;
  at: number;
  payload: string;
}

/** A step as its span describes it. */
export interface StepFacts {
  id: string;
  type: string;
  toolId?: string;
}

/** What the run object knows of a finished run: the spans are built from this. */
export interface WorkflowTraceSource {
  runId: string;
  workspaceId: string;
  workflowId: string;
  status: string;
  error: string | null;
  createdAt: number;
  /** The top-level entries, each with the steps inside it (a container's children, a loop's or foreach's body). */
  nodes: (StepFacts & { inner: StepFacts[] })[];
  events: WorkflowTraceEvent[];
}

/** The trace of a run and its span's ids: the caller's trace (its span the parent), or one derived from the run. */
export async function workflowTrace(runId: string, traceparent: string | null) {
  const parent = parseTraceparent(traceparent);
  return {
    traceId: parent?.traceId ?? (await derivedId(`trace:workflow:${runId}`, 32)),
    runSpanId: await derivedId(`span:workflow:${runId}`, 16),
    parentSpanId: parent?.spanId ?? null,
  };
}

/** The span of a unit (`<entry>`, `<entry>/<childId>`, `<entry>[<item>]`, `<entry>#<iteration>`); an entry's own span is `<entry>`'s. */
const unitSpanId = (runId: string, unitKey: string) => derivedId(`span:workflow:${runId}:${unitKey}`, 16);

/** The `traceparent` an execution started by a unit carries: that unit's span in the run's trace. */
export async function stepTraceparent(runId: string, traceparent: string | null, unitKey: string): Promise<string> {
  const { traceId } = await workflowTrace(runId, traceparent);
  return formatTraceparent({ traceId, spanId: await unitSpanId(runId, unitKey) });
}

/** A unit inside a top-level entry: the entry, and the item or iteration when it is one. */
const INSIDE_ENTRY = /^(\d+)(?:\/.+|\[(\d+)\]|#(\d+))$/;

interface Unit {
  key: string;
  stepId: string;
  startedAt: number | null;
  starts: number;
  endedAt: number | null;
  status: string | null;
  error: string | null;
  executionId: string | null;
}

export async function workflowSpans(source: WorkflowTraceSource, traceparent: string | null): Promise<Span[]> {
  const { traceId, runSpanId, parentSpanId } = await workflowTrace(source.runId, traceparent);
  const finished = source.events.findLast((e) => e.type === 'workflow-finished');
  const endedAt = finished?.at ?? source.events.at(-1)?.at ?? source.createdAt;

  const units = new Map<string, Unit>();
  const unitOf = (key: string, stepId: string) => {
    const found = units.get(key);
    if (found) return found;
    const unit: Unit = { key, stepId, startedAt: null, starts: 0, endedAt: null, status: null, error: null, executionId: null };
    units.set(key, unit);
    return unit;
  };
  for (const event of source.events) {
    const payload = JSON.parse(event.payload) as { unit?: unknown; stepId?: unknown; status?: unknown; error?: unknown; executionId?: unknown };
    if (typeof payload.unit !== 'string' || typeof payload.stepId !== 'string') continue;
    const entry = INSIDE_ENTRY.exec(payload.unit)?.[1];
    // A unit inside an entry gives the entry's span its start.
    if (entry !== undefined) unitOf(entry, source.nodes[Number(entry)]?.id ?? payload.stepId).startedAt ??= event.at;
    const unit = unitOf(payload.unit, payload.stepId);
    if (event.type === 'workflow-step-started') {
      unit.startedAt ??= event.at;
      unit.starts++;
    } else if (event.type === 'workflow-step-execution' && typeof payload.executionId === 'string') {
      unit.executionId = payload.executionId;
    } else if (event.type === 'workflow-step-finished') {
      unit.endedAt = event.at;
      unit.status = String(payload.status);
      if (typeof payload.error === 'string') unit.error = payload.error;
    }
  }

  const spans: Span[] = [];
  for (const unit of units.values()) {
    const inside = INSIDE_ENTRY.exec(unit.key);
    const node = source.nodes[Number(inside?.[1] ?? unit.key)];
    const step = inside ? node?.inner.find((s) => s.id === unit.stepId) : node;
    const item = inside?.[2] ?? inside?.[3];
    const from = unit.startedAt ?? unit.endedAt ?? endedAt;
    // A unit still open when the run ended was canceled with it, unless it is an entry whose unit failed the run.
    const failedInside = inside ? undefined : [...units.values()].find((u) => u.status === 'failed' && INSIDE_ENTRY.exec(u.key)?.[1] === unit.key);
    const status = unit.status ?? (failedInside ? 'failed' : 'canceled');
    const error = unit.error ?? failedInside?.error ?? null;
    const tool = step?.type === 'tool' ? step.toolId : undefined;
    spans.push({
      traceId,
      spanId: await unitSpanId(source.runId, unit.key),
      parentSpanId: inside ? await unitSpanId(source.runId, inside[1]!) : runSpanId,
      name: tool === undefined ? `step ${unit.stepId}` : `execute_tool ${tool}`,
      kind: SPAN_KIND.internal,
      startTimeUnixNano: nanos(from),
      endTimeUnixNano: nanos(Math.max(from, unit.endedAt ?? endedAt)),
      attributes: attributes({
        ...(tool === undefined ? {} : { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool }),
        'workspace_skills.workflow.step.id': unit.stepId,
        'workspace_skills.workflow.step.type': step?.type,
        'workspace_skills.workflow.step.item': item === undefined ? null : Number(item),
        'workspace_skills.workflow.step.status': status,
        'workspace_skills.workflow.step.attempts': unit.starts > 0 ? unit.starts : null,
        'workspace_skills.execution.id': unit.executionId,
      }),
      status: status === 'failed' ? { code: STATUS_CODE.error, message: error ?? 'The step failed' } : { code: STATUS_CODE.unset },
    });
  }

  const runSpan: Span = {
    traceId,
    spanId: runSpanId,
    ...(parentSpanId ? { parentSpanId } : {}),
    name: `invoke_workflow ${source.workflowId}`,
    kind: SPAN_KIND.internal,
    startTimeUnixNano: nanos(source.createdAt),
    endTimeUnixNano: nanos(Math.max(source.createdAt, endedAt)),
    attributes: attributes({
      'gen_ai.operation.name': 'invoke_workflow',
      'gen_ai.workflow.name': source.workflowId,
      'workspace_skills.workflow_run.id': source.runId,
      'workspace_skills.workflow_run.status': source.status,
    }),
    status: source.status === 'failed' ? { code: STATUS_CODE.error, message: source.error ?? 'The run failed' } : { code: STATUS_CODE.unset },
  };
  return [runSpan, ...spans];
}
