import { describe, expect, it } from 'vitest';
import type { NewExecutionEvent } from '../../workers/services/execution-events';
import { type AgentTool, runAgentLoop, type ToolRound } from '../../workers/runtime/agent-loop';
import { type ModelEvent, type ModelMessage, type ModelProvider, ProviderError } from '../../workers/runtime/provider';
import { LocalProvider } from '../../workers/runtime/providers/local';

const SYSTEM = '# Meeting Summarizer\nYou turn notes into summaries.';
const INPUT = 'We agreed to ship on Friday. Ana owns the release notes. Budget is still open.';

function harness(
  provider: ModelProvider = new LocalProvider(),
  stopWhen: (n: number) => ReturnType<Parameters<typeof runAgentLoop>[0]['shouldStop']> = () => null,
) {
  const events: NewExecutionEvent[] = [];
  const written: Record<string, unknown>[] = [];
  const tool: AgentTool = {
    spec: { name: 'write_artifact', description: 'Save a file', inputSchema: { type: 'object' } },
    displayName: 'Write artifact',
    label: (input) => String(input.name),
    run: async (input) => {
      written.push(input);
      return { content: `saved ${String(input.name)}` };
    },
  };
  const run = () =>
    runAgentLoop({
      provider,
      system: SYSTEM,
      messages: [{ role: 'user', content: [{ type: 'text', text: INPUT }] }],
      tools: [tool],
      maxTokens: 1024,
      maxTurns: 4,
      emit: (batch) => {
        events.push(...batch);
      },
      shouldStop: () => stopWhen(events.filter((e) => e.type === 'agent.message').length),
    });
  return { events, written, run };
}

describe('the agent loop on the local provider', () => {
  it('thinks, calls the artifact tool, then streams its answer, with usage per request', async () => {
    const { events, written, run } = harness();
    const result = await run();
    expect(result.stopReason).toBe('end_turn');
    const types = events.map((e) => e.type);
    expect(types.slice(0, 3)).toEqual(['agent.thinking', 'span.model_request_end', 'agent.tool_use']);
    expect(types.at(-1)).toBe('span.model_request_end');
    expect(types.filter((t) => t === 'span.model_request_end')).toHaveLength(2);
    expect(events[2]!.payload).toEqual({ name: 'Write artifact', tool: 'write_artifact', label: 'notes.md' });
    expect(written).toEqual([{ name: 'notes.md', content: expect.stringContaining('- Ana owns the release notes.') }]);

    const streamed = events
      .filter((e) => e.type === 'agent.message')
      .map((e) => (e.payload.content as { text: string }[])[0]!.text)
      .join('');
    expect(streamed).toBe(result.text);
    expect(result.text).toContain('## Meeting Summarizer');
    expect(result.text).toContain('- We agreed to ship on Friday.');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('is deterministic: the same input gives the same events', async () => {
    const a = harness();
    const b = harness();
    await a.run();
    await b.run();
    expect(b.events).toEqual(a.events);
  });

  it('stops mid-stream when asked, with the reason it was given', async () => {
    const interrupted = harness(new LocalProvider(), (messages) => (messages >= 3 ? 'interrupt' : null));
    const result = await interrupted.run();
    expect(result.stopReason).toBe('interrupt');
    expect(result.text.split(/(?<=\s)/)).toHaveLength(3);
    expect(interrupted.events.filter((e) => e.type === 'agent.message')).toHaveLength(3);

    const budget = await runAgentLoop({
      provider: new LocalProvider(),
      system: SYSTEM,
      messages: [{ role: 'user', content: [{ type: 'text', text: INPUT }] }],
      tools: [],
      maxTokens: 1024,
      maxTurns: 2,
      emit: () => undefined,
      shouldStop: (usage) => (usage.outputTokens > 0 ? 'limit_reached' : null),
    });
    expect(budget.stopReason).toBe('limit_reached');
    expect(budget.text).toContain('## Meeting Summarizer');
  });

  it('ends with error when the provider fails mid-stream', async () => {
    const failing: ModelProvider = {
      name: 'anthropic',
      model: 'test',
      async *stream(): AsyncIterable<ModelEvent> {
        yield { type: 'text_delta', text: 'Hello' };
        throw new ProviderError('overloaded', 'Overloaded');
      },
    };
    const { events, run } = harness(failing);
    const result = await run();
    expect(result).toMatchObject({ stopReason: 'error', error: 'Overloaded' });
    expect(events.map((e) => e.type)).toEqual(['agent.message']);
  });

  /** Refuses its first `failures` requests with `kind` before any event, then streams an answer. */
  const flaky = (failures: number, kind: 'rate_limited' | 'bad_request') => {
    let calls = 0;
    const provider: ModelProvider = {
      name: 'openai',
      model: 'test',
      async *stream(): AsyncIterable<ModelEvent> {
        calls++;
        if (calls <= failures) throw new ProviderError(kind, `refused ${calls}`);
        yield { type: 'text_delta', text: 'Answer' };
        yield { type: 'usage', inputTokens: 3, outputTokens: 1 };
        yield { type: 'stop', reason: 'end_turn' };
      },
    };
    return { provider, calls: () => calls };
  };
  const loop = (provider: ModelProvider, events: NewExecutionEvent[], shouldStop: () => 'interrupt' | null = () => null) =>
    runAgentLoop({
      provider,
      system: SYSTEM,
      messages: [{ role: 'user', content: [{ type: 'text', text: INPUT }] }],
      tools: [],
      maxTokens: 64,
      maxTurns: 2,
      emit: (batch) => void events.push(...batch),
      shouldStop,
      retryDelaysMs: [1, 1],
    });

  it('retries a request refused for a transient reason before its first event, saying so, and finishes', async () => {
    const { provider, calls } = flaky(2, 'rate_limited');
    const events: NewExecutionEvent[] = [];
    const result = await loop(provider, events);
    expect(result).toMatchObject({ stopReason: 'end_turn', text: 'Answer' });
    expect(calls()).toBe(3);
    expect(events.filter((e) => e.type === 'agent.info').map((e) => e.payload)).toEqual([
      { message: 'The model provider is busy (rate_limited); retrying in 0.001 s', retry: 1 },
      { message: 'The model provider is busy (rate_limited); retrying in 0.001 s', retry: 2 },
    ]);
  });

  it('gives up with error once the retries are spent, and never retries a permanent refusal', async () => {
    const transient = flaky(3, 'rate_limited');
    expect(await loop(transient.provider, [])).toMatchObject({ stopReason: 'error', error: 'refused 3' });
    expect(transient.calls()).toBe(3);
    const permanent = flaky(1, 'bad_request');
    expect(await loop(permanent.provider, [])).toMatchObject({ stopReason: 'error', error: 'refused 1' });
    expect(permanent.calls()).toBe(1);
  });

  it('stops waiting for a retry when the run is interrupted meanwhile', async () => {
    const { provider, calls } = flaky(1, 'rate_limited');
    expect(await loop(provider, [], () => 'interrupt')).toMatchObject({ stopReason: 'interrupt' });
    expect(calls()).toBe(1);
  });
});

describe('a round of tool calls and a cut-off', () => {
  /** Asks for two tool calls, and answers once they are answered; records what each request was sent. */
  const twoCalls = () => {
    const requests: ModelMessage[][] = [];
    const provider: ModelProvider = {
      name: 'anthropic',
      model: 'test',
      async *stream({ messages }): AsyncIterable<ModelEvent> {
        requests.push(structuredClone(messages));
        if (messages.at(-1)!.content[0]!.type !== 'tool_result') {
          yield { type: 'text_delta', text: 'Saving both.' };
          yield { type: 'tool_use', id: 'toolu_a', name: 'write_artifact', input: { name: 'a.md' } };
          yield { type: 'tool_use', id: 'toolu_b', name: 'write_artifact', input: { name: 'b.md' } };
          yield { type: 'stop', reason: 'tool_use' };
        } else {
          yield { type: 'text_delta', text: 'Saved.' };
          yield { type: 'stop', reason: 'end_turn' };
        }
      },
    };
    return { provider, requests };
  };
  const writer = (calls: { name: unknown; id: string | undefined }[]): AgentTool => ({
    spec: { name: 'write_artifact', description: 'Save a file', inputSchema: { type: 'object' } },
    displayName: 'Write artifact',
    label: (input) => String(input.name),
    run: async (input, call) => {
      calls.push({ name: input.name, id: call?.id });
      return { content: `saved ${String(input.name)}` };
    },
  });
  const options = (provider: ModelProvider, tool: AgentTool, messages: ModelMessage[], events: NewExecutionEvent[] = []) => ({
    provider,
    system: SYSTEM,
    messages,
    tools: [tool],
    maxTokens: 1024,
    maxTurns: 4,
    emit: (batch: NewExecutionEvent[]) => void events.push(...batch),
    shouldStop: () => null,
  });

  it('checkpoints before each call, with the answers so far, and once the round is answered', async () => {
    const { provider } = twoCalls();
    const calls: { name: unknown; id: string | undefined }[] = [];
    const checkpoints: { last: ModelMessage['role']; results?: number; callsMade: number }[] = [];
    const result = await runAgentLoop({
      ...options(provider, writer(calls), [{ role: 'user', content: [{ type: 'text', text: INPUT }] }]),
      checkpoint: ({ messages, round }) => checkpoints.push({ last: messages.at(-1)!.role, results: round?.results.length, callsMade: calls.length }),
    });
    expect(result.stopReason).toBe('end_turn');
    expect(calls).toEqual([
      { name: 'a.md', id: 'toolu_a' },
      { name: 'b.md', id: 'toolu_b' },
    ]);
    // Each call is made after the checkpoint that names it as not yet answered.
    expect(checkpoints).toEqual([
      { last: 'assistant', results: 0, callsMade: 0 },
      { last: 'assistant', results: 1, callsMade: 1 },
      { last: 'user', results: undefined, callsMade: 2 },
    ]);
  });

  it('goes on from a round cut off in its checkpoint: makes only the calls without an answer, with their ids, then asks the model once', async () => {
    const first = twoCalls();
    let cut: { messages: ModelMessage[]; round?: ToolRound } | undefined;
    const before: { name: unknown; id: string | undefined }[] = [];
    await runAgentLoop({
      ...options(first.provider, writer(before), [{ role: 'user', content: [{ type: 'text', text: INPUT }] }]),
      // The turn is cut off while its second call is under way: the last checkpoint has the first answer.
      checkpoint: (state) => {
        if (state.round?.results.length === 1) cut = structuredClone(state);
      },
    });

    const resumed = twoCalls();
    const calls: { name: unknown; id: string | undefined }[] = [];
    const events: NewExecutionEvent[] = [];
    const result = await runAgentLoop({ ...options(resumed.provider, writer(calls), cut!.messages, events), round: cut!.round });
    expect(result).toMatchObject({ stopReason: 'end_turn', text: 'Saved.' });
    expect(calls).toEqual([{ name: 'b.md', id: 'toolu_b' }]);
    expect(events.map((e) => e.type)).toEqual(['agent.tool_use', 'agent.message']);
    // The model is asked once, with both calls answered, the first with what it answered before the cut-off.
    expect(resumed.requests).toHaveLength(1);
    expect(resumed.requests[0]!.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', toolUseId: 'toolu_a', content: 'saved a.md' },
        { type: 'tool_result', toolUseId: 'toolu_b', content: 'saved b.md' },
      ],
    });
  });

  it('stops before making a cut-off round’s calls when asked to', async () => {
    const { provider, requests } = twoCalls();
    const calls: { name: unknown; id: string | undefined }[] = [];
    const messages: ModelMessage[] = [
      { role: 'user', content: [{ type: 'text', text: INPUT }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Saving.' },
          { type: 'tool_use', id: 'toolu_a', name: 'write_artifact', input: { name: 'a.md' } },
        ],
      },
    ];
    const result = await runAgentLoop({ ...options(provider, writer(calls), messages), round: { results: [] }, shouldStop: () => 'interrupt' });
    expect(result).toMatchObject({ stopReason: 'interrupt', text: 'Saving.' });
    expect(calls).toEqual([]);
    expect(requests).toEqual([]);
  });
});
