import { attributes, derivedId, nanos, parseTraceparent, SPAN_KIND, STATUS_CODE, type Span } from '../lib/otlp';
import { costInHundredths } from '../runtime/pricing';
import type { ExecutionEvent } from './execution-events';

/**
 * The spans of one run (an execution's turn), built from the events its log recorded
 * (docs/telemetry.md): the run, each model request under it and each tool call. Times are the
 * events' own: a model request ends when its usage was recorded and starts when the run did or
 * the tool calls before it ended; a tool call ends when the next event was recorded. Attribute
 * names are the OpenTelemetry GenAI semantic conventions' where they have one.
 */

/** What the run's events do not say: which run it is, its caller's trace and the model that ran it. */
export interface RunSpanInput {
  executionId: string;
  turnKey: string;
  skillName: string;
  skillSlug: string;
  model: string;
  /** The user's own key paid (BYOK): nothing was charged. */
  ownKey: boolean;
  traceparent: string | null;
  /** The turn's events, its `user.message` first. */
  events: ExecutionEvent[];
}

const usageOf = (event: ExecutionEvent) => {
  const usage = (event.payload.usage ?? {}) as { input_tokens?: number; output_tokens?: number };
  return { input: usage.input_tokens ?? 0, output: usage.output_tokens ?? 0 };
};

export async function runSpans(run: RunSpanInput): Promise<Span[]> {
  const { events } = run;
  const parent = parseTraceparent(run.traceparent);
  const traceId = parent?.traceId ?? (await derivedId(`trace:${run.turnKey}`, 32));
  let n = 0;
  const nextId = () => derivedId(`span:${run.turnKey}:${n++}`, 16);
  const runSpanId = await nextId();
  const startedAt = events[0]?.at ?? 0;
  const idle = events.findLast((e) => e.type === 'session.status_idle');
  const endedAt = idle?.at ?? events.at(-1)?.at ?? startedAt;
  const result = events.findLast((e) => e.type === 'execution.result');
  const stopReason = ((idle?.payload.stop_reason ?? {}) as { type?: string }).type ?? 'end_turn';

  const children: Span[] = [];
  const child = async (name: string, kind: number, from: number, to: number, attrs: Parameters<typeof attributes>[0]): Promise<Span> => ({
    traceId,
    spanId: await nextId(),
    parentSpanId: runSpanId,
    name,
    kind,
    startTimeUnixNano: nanos(from),
    endTimeUnixNano: nanos(Math.max(from, to)),
    attributes: attributes(attrs),
    status: { code: STATUS_CODE.unset },
  });
  let requestFrom = events.find((e) => e.type === 'session.status_running')?.at ?? startedAt;
  let tool: { event: ExecutionEvent } | null = null;
  const closeTool = async (at: number) => {
    if (!tool) return;
    const { name, tool: toolName } = tool.event.payload as { name?: string; tool?: string };
    children.push(
      await child(`execute_tool ${toolName ?? name}`, SPAN_KIND.internal, tool.event.at, at, {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': toolName ?? name,
        'workspace_skills.tool.display_name': name,
      }),
    );
    tool = null;
    requestFrom = at;
  };
  let inputTokens = 0;
  let outputTokens = 0;
  for (const event of events) {
    if (tool && event.type !== 'agent.tool_use') await closeTool(event.at);
    if (event.type === 'agent.tool_use') {
      await closeTool(event.at);
      tool = { event };
    } else if (event.type === 'span.model_request_end') {
      const usage = usageOf(event);
      inputTokens += usage.input;
      outputTokens += usage.output;
      children.push(
        await child(`chat ${run.model}`, SPAN_KIND.client, requestFrom, event.at, {
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': run.model,
          'gen_ai.usage.input_tokens': usage.input,
          'gen_ai.usage.output_tokens': usage.output,
          'workspace_skills.cost': run.ownKey ? 0 : costInHundredths(run.model, usage.input, usage.output) / 100,
        }),
      );
      requestFrom = event.at;
    }
  }
  await closeTool(endedAt);

  const runSpan: Span = {
    traceId,
    spanId: runSpanId,
    ...(parent ? { parentSpanId: parent.spanId } : {}),
    name: `invoke_agent ${run.skillName}`,
    kind: SPAN_KIND.internal,
    startTimeUnixNano: nanos(startedAt),
    endTimeUnixNano: nanos(endedAt),
    attributes: attributes({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': run.skillName,
      'gen_ai.request.model': run.model,
      'gen_ai.usage.input_tokens': inputTokens,
      'gen_ai.usage.output_tokens': outputTokens,
      'workspace_skills.execution.id': run.executionId,
      'workspace_skills.skill.slug': run.skillSlug,
      'workspace_skills.stop_reason': stopReason,
      'workspace_skills.cost': Number(result?.payload.cost ?? 0),
    }),
    status: stopReason === 'error' ? { code: STATUS_CODE.error, message: 'The run ended with an error' } : { code: STATUS_CODE.unset },
  };
  return [runSpan, ...children];
}
