import { describe, expect, inject, it } from 'vitest';
import { openaiRequestBody, OpenAIProvider } from '../../workers/runtime/providers/openai';
import { assistantMessage, collect, failure, firstTurn, NOTES, TEXT_DELTAS, USER_TEXT } from './model-requests';

const MODEL = 'gpt-4o-mini';
const provider = (scenario: string, apiKey = inject('modelKeys').openai) =>
  new OpenAIProvider({ apiKey, model: MODEL, baseUrl: `${inject('fixtureOrigin')}/model/openai/${scenario}/` });

describe('the OpenAI-compatible provider against recorded Chat Completions streams', () => {
  it('streams content deltas, reads the final usage chunk (empty choices), and stops at [DONE]', async () => {
    expect(await collect(provider('text'), firstTurn(MODEL))).toEqual([
      ...TEXT_DELTAS,
      { type: 'usage', inputTokens: 19, outputTokens: 12 },
      { type: 'stop', reason: 'end_turn' },
    ]);
  });

  it('accumulates tool call arguments by index, and sends results back as role:tool messages', async () => {
    const first = await collect(provider('tool-calls'), firstTurn(MODEL));
    expect(first).toEqual([
      { type: 'tool_use', id: 'call_abc123', name: 'write_artifact', input: NOTES },
      { type: 'tool_use', id: 'call_def456', name: 'append_memory', input: { content: 'Release: Friday' } },
      { type: 'usage', inputTokens: 82, outputTokens: 57 },
      { type: 'stop', reason: 'tool_use' },
    ]);

    // The fixture answers only if the round trip arrives as tool_calls plus one tool message per result.
    const request = firstTurn(MODEL, [
      { role: 'user', content: [{ type: 'text', text: USER_TEXT }] },
      assistantMessage(first),
      {
        role: 'user',
        content: [
          { type: 'tool_result', toolUseId: 'call_abc123', content: 'Saved notes.md' },
          { type: 'tool_result', toolUseId: 'call_def456', content: 'Working memory is full', isError: true },
        ],
      },
    ]);
    expect(await collect(provider('tool-result'), request)).toEqual([
      { type: 'text_delta', text: 'Saved the notes.' },
      { type: 'usage', inputTokens: 140, outputTokens: 4 },
      { type: 'stop', reason: 'max_tokens' },
    ]);
  });

  it('announces reasoning once, and estimates usage when a server sends none (nor [DONE])', async () => {
    const events = await collect(provider('reasoning-no-usage'), firstTurn(MODEL));
    expect(events.slice(0, 2)).toEqual([{ type: 'thinking' }, { type: 'text_delta', text: 'Friday.' }]);
    expect(events[2]).toEqual({ type: 'usage', inputTokens: expect.any(Number), outputTokens: 2 });
    expect((events[2] as { inputTokens: number }).inputTokens).toBeGreaterThan(10);
    expect(events[3]).toEqual({ type: 'stop', reason: 'end_turn' });
  });

  it('turns an error payload mid-stream into a ProviderError after the text already streamed', async () => {
    const { events, error } = await failure(provider('error'), firstTurn(MODEL));
    expect(events).toEqual([{ type: 'text_delta', text: 'We ship' }]);
    expect(error).toMatchObject({ kind: 'stream', message: expect.stringContaining('The server had an error') });
  });

  it('maps HTTP failures: 429 rate_limited, 401 auth', async () => {
    expect((await failure(provider('rate-limited'), firstTurn(MODEL))).error).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      message: expect.stringMatching(/^OpenAI-compatible API answered 429: Rate limit reached/),
    });
    const auth = await failure(provider('text', 'sk-wrong'), firstTurn(MODEL));
    expect(auth.error).toMatchObject({ kind: 'auth', message: expect.stringContaining('Incorrect API key') });
    expect(auth.error.message).not.toContain('sk-wrong');
  });

  it("sends max_completion_tokens to OpenAI's own API and max_tokens elsewhere; omits empty tools and system", () => {
    const request = {
      model: MODEL,
      system: '',
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Hi' }] }],
      tools: [],
      maxTokens: 50,
    };
    expect(openaiRequestBody(request)).toEqual({
      model: MODEL,
      messages: [{ role: 'user', content: 'Hi' }],
      max_completion_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(openaiRequestBody(request, 'http://localhost:8000/v1')).toMatchObject({ max_tokens: 50 });
    expect(openaiRequestBody(request, 'http://localhost:8000/v1')).not.toHaveProperty('max_completion_tokens');
  });
});
